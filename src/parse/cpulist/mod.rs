//! CPU lists, read exactly as the kernel's bitmap_parselist() reads them (lib/bitmap-str.c), so that a verdict
//! on a boot parameter is what the kernel will do with it: items separated by ',' or whitespace (empty items are
//! skipped), each `a`, `a-b`, or either followed by `:used/group` (in each group of `group` CPUs from `a`, the
//! first `used`); `all` for every CPU; `N` for the last CPU. Sysfs prints the simple form ("0-3,5"), an empty
//! line for none, and "(null)" for an unset nohz_full.

/// The kernel's largest NR_CPUS (x86 MAXSMP): CPU numbers above `MAX_CPU` exist on no machine.
pub const NR_CPUS_MAX: usize = 8192;
pub const MAX_CPU: usize = NR_CPUS_MAX - 1;
/// Longer lists are refused before any work: 8,192 CPUs written one by one ("0,2,4,…") take about 40 kB.
pub(crate) const MAX_LIST_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed CPU list '{list}': {why}")]
pub struct CpuListError {
    /// The list as given, made printable and cut to 40 characters.
    pub(crate) list: String,
    pub(crate) why: Malformed,
}

/// What is wrong in a CPU list; items are quoted printable and cut to 20 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Malformed {
    #[error("longer than {MAX_LIST_BYTES} bytes")]
    TooLong,
    #[error("'{0}' needs the machine's CPU count")]
    NeedsWidth(&'static str),
    #[error("'{0}' is not a CPU number")]
    NotNumber(String),
    #[error("'{0}' is too large")]
    TooLarge(String),
    #[error("'{0}': a stride is used/group")]
    NoGroup(String),
    #[error("range {0}-{1} runs backwards")]
    Backwards(usize, usize),
    #[error("bad stride {0}/{1}")]
    BadStride(usize, usize),
    #[error("CPU {cpu} does not exist (the machine has {limit})")]
    Absent { cpu: usize, limit: usize },
    #[error("CPU {0} is above {MAX_CPU}")]
    AboveMax(usize),
}

fn err(list: &str, why: Malformed) -> CpuListError {
    CpuListError {
        list: super::text::sanitize(list.trim(), 40),
        why,
    }
}

/// Parses a CPU list whose machine width is not known here: `all` and `N` are refused, numbers above
/// `MAX_CPU` too. Returns sorted, distinct CPU numbers.
pub fn parse(s: &str) -> Result<Vec<usize>, CpuListError> {
    parse_for(s, None)
}

/// Parses a CPU list as the kernel does on a machine of `nr_cpu_ids` possible CPUs (`N` = nr_cpu_ids − 1,
/// `all` = 0..nr_cpu_ids; a CPU at or above it is an error, -ERANGE in the kernel). `None`: width unknown.
pub fn parse_for(s: &str, nr_cpu_ids: Option<usize>) -> Result<Vec<usize>, CpuListError> {
    if s.len() > MAX_LIST_BYTES {
        return Err(err(s, Malformed::TooLong));
    }
    let t = s.trim();
    if t == "(null)" {
        return Ok(Vec::new());
    }
    let nbits = nr_cpu_ids.unwrap_or(NR_CPUS_MAX).clamp(1, NR_CPUS_MAX);
    let mut bits = vec![0u64; nbits.div_ceil(64)];
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // bitmap_find_region: separators are ',' and whitespace, repeated or not.
        if is_sep(b[i]) {
            i += 1;
            continue;
        }
        let end = b[i..]
            .iter()
            .position(|&c| is_sep(c))
            .map_or(b.len(), |p| i + p);
        let item = &t[i..end];
        let r =
            region(item, nr_cpu_ids.map(|n| n.clamp(1, NR_CPUS_MAX))).map_err(|why| err(s, why))?;
        set_region(&mut bits, r);
        i = end;
    }
    let mut out = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            out.push(w * 64 + x.trailing_zeros() as usize);
            x &= x - 1;
        }
    }
    Ok(out)
}

/// The kernel's separators: ',' and isspace() (which includes '\v').
fn is_sep(c: u8) -> bool {
    c == b',' || c.is_ascii_whitespace() || c == 0x0b
}

/// One item: (start, end, used, group).
struct Region(usize, usize, usize, usize);

fn shown(item: &str) -> String {
    super::text::sanitize(item, 20)
}

fn region(item: &str, nbits: Option<usize>) -> Result<Region, Malformed> {
    let known = |what: &'static str| nbits.map(|n| n - 1).ok_or(Malformed::NeedsWidth(what));
    let (range, pattern) = match item.split_once(':') {
        Some((r, p)) => (r, Some(p)),
        None => (item, None),
    };
    let num = |x: &str| -> Result<usize, Malformed> {
        if x == "N" {
            return known("N");
        }
        if x.is_empty() || !x.bytes().all(|c| c.is_ascii_digit()) {
            return Err(Malformed::NotNumber(shown(x)));
        }
        // The kernel refuses what does not fit an unsigned int; ten digits after the leading zeros do.
        let d = x.trim_start_matches('0');
        if d.len() > 10 {
            return Err(Malformed::TooLarge(shown(x)));
        }
        let n = d.parse::<usize>().unwrap_or(0);
        Ok(n)
    };
    let (start, end) = if range.len() == 3 && range.eq_ignore_ascii_case("all") {
        (0, known("all")?)
    } else {
        match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(range)?;
                (n, n)
            }
        }
    };
    let (used, group) = match pattern {
        None => (end - start.min(end) + 1, end - start.min(end) + 1),
        Some(p) => {
            let (u, g) = p
                .split_once('/')
                .ok_or_else(|| Malformed::NoGroup(shown(item)))?;
            (num(u)?, num(g)?)
        }
    };
    if start > end {
        return Err(Malformed::Backwards(start, end));
    }
    if group == 0 || used > group {
        return Err(Malformed::BadStride(used, group));
    }
    let limit = nbits.unwrap_or(NR_CPUS_MAX);
    if end >= limit {
        return Err(if nbits.is_some() {
            Malformed::Absent { cpu: end, limit }
        } else {
            Malformed::AboveMax(end)
        });
    }
    Ok(Region(start, end, used, group))
}

/// bitmap_set_region: from `start`, every `group` CPUs set the first `used`, up to `end`. Word-at-a-time, so a
/// list repeating "0-8191" costs 128 word writes per item, not 8,192 insertions.
fn set_region(bits: &mut [u64], Region(start, end, used, group): Region) {
    let mut s = start;
    while s <= end {
        let n = used.min(end - s + 1);
        set_bits(bits, s, n);
        s += group;
    }
}

fn set_bits(bits: &mut [u64], from: usize, n: usize) {
    let mut i = from;
    let stop = from + n;
    while i < stop {
        let (w, off) = (i / 64, i % 64);
        let take = (64 - off).min(stop - i);
        let m = if take == 64 {
            u64::MAX
        } else {
            ((1u64 << take) - 1) << off
        };
        bits[w] |= m;
        i += take;
    }
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
mod tests;
