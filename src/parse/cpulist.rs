//! CPU lists as the kernel prints and accepts them: "0-3,5", "1, 3-4", "0-15:2/4" (used/group stride), "" (none).

use std::collections::BTreeSet;

/// CPU numbers above this are refused: the kernel's own limit (NR_CPUS) is 8192, and a garbage "0-4000000000"
/// must not allocate gigabytes.
pub const MAX_CPU: usize = 8191;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed CPU list '{list}': {why}")]
pub struct CpuListError {
    pub list: String,
    pub why: String,
}

fn err(list: &str, why: impl Into<String>) -> CpuListError {
    let mut shown: String = list.trim().chars().take(40).collect();
    if list.trim().chars().count() > 40 {
        shown.push('…');
    }
    CpuListError {
        list: shown,
        why: why.into(),
    }
}

/// Parses a CPU list into sorted, distinct CPU numbers. Whitespace around items is allowed; an empty list
/// (or "(null)", which some kernels print for an unset nohz_full) gives no CPUs.
pub fn parse(s: &str) -> Result<Vec<usize>, CpuListError> {
    parse_with_last(s, None)
}

/// As `parse`, and resolves the kernel's "N" (the last CPU) when `last` is known.
pub fn parse_with_last(s: &str, last: Option<usize>) -> Result<Vec<usize>, CpuListError> {
    let t = s.trim();
    if t.is_empty() || t == "(null)" {
        return Ok(Vec::new());
    }
    let mut set = BTreeSet::new();
    for item in t.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(err(s, "empty item"));
        }
        let (range, stride) = match item.split_once(':') {
            Some((r, st)) => (r.trim(), Some(st.trim())),
            None => (item, None),
        };
        let num = |x: &str| -> Result<usize, CpuListError> {
            let x = x.trim();
            if x == "N" {
                return last.ok_or_else(|| err(s, "'N' (last CPU) is not known here"));
            }
            if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(s, format!("'{x}' is not a CPU number")));
            }
            let n: usize = x
                .parse()
                .map_err(|_| err(s, format!("'{x}' is too large")))?;
            if n > MAX_CPU {
                return Err(err(s, format!("CPU {n} is above {MAX_CPU}")));
            }
            Ok(n)
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(range)?;
                (n, n)
            }
        };
        if a > b {
            return Err(err(s, format!("range {a}-{b} runs backwards")));
        }
        let (used, group) = match stride {
            None => (1, 1),
            Some(st) => {
                let (u, g) = st
                    .split_once('/')
                    .ok_or_else(|| err(s, "stride must be used/group"))?;
                let (u, g) = (num(u)?, num(g)?);
                if u == 0 || g == 0 || u > g {
                    return Err(err(s, format!("bad stride {u}/{g}")));
                }
                (u, g)
            }
        };
        for c in a..=b {
            if (c - a) % group < used {
                set.insert(c);
            }
        }
    }
    Ok(set.into_iter().collect())
}

/// Formats CPUs as the kernel does: sorted, ranges collapsed ("0-2,5").
pub fn format(cpus: &[usize]) -> String {
    let mut v: Vec<usize> = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_samples() {
        // /sys/devices/system/cpu/online of the captured Debian 12 RT guest and of a 4-core i3-13100TE.
        assert_eq!(parse("0-1\n").unwrap(), vec![0, 1]);
        assert_eq!(parse("0-3").unwrap(), vec![0, 1, 2, 3]);
        // /sys/devices/system/cpu/isolated when nothing is isolated is an empty line.
        assert_eq!(parse("\n").unwrap(), Vec::<usize>::new());
        // nohz_full reads "(null)" on the captured untuned guest (Debian 6.1 kernel without nohz_full=).
        assert_eq!(parse("(null)\n").unwrap(), Vec::<usize>::new());
        // Hand-written lists with spaces, as users put them on the kernel command line.
        assert_eq!(parse(" 1, 3-4 ,7").unwrap(), vec![1, 3, 4, 7]);
        assert_eq!(parse("3,1,3").unwrap(), vec![1, 3]);
        // Stride form from Documentation/admin-guide/kernel-parameters.rst: 0-9:2/5 → 0,1,5,6.
        assert_eq!(parse("0-9:2/5").unwrap(), vec![0, 1, 5, 6]);
        assert_eq!(parse_with_last("2-N", Some(5)).unwrap(), vec![2, 3, 4, 5]);
    }

    #[test]
    fn malformed_lists_are_errors() {
        for bad in [
            "a", "1-", "-1", "3-1", "1,,2", "0-99999", "1:2", "0-9:0/5", "2-N", "1.5",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        let e = parse("0-x").unwrap_err().to_string();
        assert!(e.contains("0-x") && e.contains("'x'"), "{e}");
    }

    #[test]
    fn format_roundtrips() {
        assert_eq!(format(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format(&[]), "");
        assert_eq!(format(&[3]), "3");
        for s in ["0-3", "1,3-4,7", "0,2,4-6"] {
            assert_eq!(format(&parse(s).unwrap()), s);
        }
    }
}
