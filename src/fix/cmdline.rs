//! Kernel command-line parameters fix manages, merged with what is already configured: `isolcpus=2` plus RT
//! core 3 becomes one `isolcpus=managed_irq,domain,2-3`; never a parameter twice; other parameters untouched.
//! Pure functions.

use crate::fix::kind::file::CmdlineEdit;
use crate::parse::cpulist;

fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    cpulist::parse(s).map_err(|e| e.to_string())
}

/// Splits a command line as the kernel does: on whitespace, except inside double quotes.
pub(crate) fn tokens(line: &str) -> Vec<String> {
    split(line.chars(), '"', char::is_whitespace)
        .into_iter()
        .map(String::from_iter)
        .collect()
}

/// `tokens` on bytes: a command-line file may hold bytes that are not UTF-8, and they must come back as they were.
pub(crate) fn tokens_bytes(line: &[u8]) -> Vec<Vec<u8>> {
    split(line.iter().copied(), b'"', |c: u8| c.is_ascii_whitespace())
}

/// The one splitter behind `tokens` and `tokens_bytes`: on `space`, except between `quote`s (kept in the token).
fn split<T: Copy + PartialEq>(
    items: impl Iterator<Item = T>,
    quote: T,
    space: impl Fn(T) -> bool,
) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut quoted = false;
    for c in items {
        if c == quote {
            quoted = !quoted;
            cur.push(c);
        } else if space(c) && !quoted {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `name` on bytes.
pub(crate) fn name_bytes(tok: &[u8]) -> &[u8] {
    tok.iter()
        .position(|&b| b == b'=')
        .map_or(tok, |i| &tok[..i])
}

/// `merge_into` on bytes: every parameter named in `managed` replaced by its one new value, kept at the end.
pub(crate) fn merge_bytes(base: &[Vec<u8>], managed: &[String]) -> Vec<Vec<u8>> {
    let names: Vec<&[u8]> = managed.iter().map(|t| name(t).as_bytes()).collect();
    let mut out: Vec<Vec<u8>> = base
        .iter()
        .filter(|t| !names.contains(&name_bytes(t)))
        .cloned()
        .collect();
    out.extend(managed.iter().map(|m| m.as_bytes().to_vec()));
    out
}

/// The parameters of `base` that `managed` replaces (same names), as text.
pub(crate) fn replaced(base: &[Vec<u8>], managed: &[String]) -> Vec<String> {
    let names: Vec<&[u8]> = managed.iter().map(|t| name(t).as_bytes()).collect();
    base.iter()
        .filter(|t| names.contains(&name_bytes(t)))
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect()
}

/// The first line of a command-line file (the Raspberry Pi firmware reads only that one) and the rest.
pub(crate) fn split_first_line(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|&c| c == b'\n') {
        Some(i) => b.split_at(i + 1),
        None => (b, &[]),
    }
}

/// Rollback of a command-line file edited since fix wrote `written`: each parameter fix added that is still
/// there, unchanged, gives way to the ones it had replaced; everything else stays as it is now (a parameter fix
/// set and the user changed is the user's). Returns the new bytes and what of the user's was kept.
pub(crate) fn take_out(now: &[u8], written: &[u8], edit: &CmdlineEdit) -> (Vec<u8>, String) {
    let (line, rest) = split_first_line(now);
    let mut toks = tokens_bytes(line);
    for a in &edit.added {
        let Some(i) = toks.iter().position(|t| t == a.as_bytes()) else {
            continue;
        };
        let back: Vec<Vec<u8>> = edit
            .replaced
            .iter()
            .filter(|r| name(r) == name(a))
            .map(|r| r.as_bytes().to_vec())
            .collect();
        toks.splice(i..=i, back);
    }
    let mut out = toks.join(&b' ');
    if line.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(rest);
    let was = tokens_bytes(split_first_line(written).0);
    let is = tokens_bytes(line);
    let show = |t: &Vec<u8>| String::from_utf8_lossy(t).into_owned();
    let mut kept: Vec<String> = is
        .iter()
        .filter(|t| !was.contains(t))
        .map(|t| format!("+{}", show(t)))
        .collect();
    kept.extend(
        was.iter()
            .filter(|t| !is.contains(t))
            .map(|t| format!("-{}", show(t))),
    );
    if rest != split_first_line(written).1 {
        kept.push("the lines after the first".into());
    }
    (out, kept.join(" "))
}

/// A parameter's name ("isolcpus" of "isolcpus=2").
pub(crate) fn name(tok: &str) -> &str {
    tok.split_once('=').map_or(tok, |(n, _)| n)
}

/// The value of the last occurrence of `param` (the one the kernel acts on for most parameters).
pub(crate) fn last_value(toks: &[String], param: &str) -> Option<String> {
    toks.iter().rev().find(|t| name(t) == param).map(|t| {
        t.split_once('=')
            .map_or(String::new(), |(_, v)| v.to_string())
    })
}

/// Replaces every occurrence of the parameters named in `managed` by their one new value, kept at the end.
pub(crate) fn merge_into(base: &[String], managed: &[String]) -> Vec<String> {
    let names: Vec<&str> = managed.iter().map(|t| name(t)).collect();
    let mut out: Vec<String> = base
        .iter()
        .filter(|t| !names.contains(&name(t)))
        .cloned()
        .collect();
    out.extend(managed.iter().cloned());
    out
}

/// What the failing checks ask of the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Want {
    pub(crate) core: usize,
    pub(crate) online: Vec<usize>,
    pub(crate) isolcpus: bool,
    pub(crate) nohz_full: bool,
    pub(crate) rcu_nocbs: bool,
    pub(crate) irqaffinity: bool,
    /// C-state caps: the parameters to use on this machine (intel_idle / processor / cpuidle.off).
    pub(crate) cstates: Vec<(&'static str, u32)>,
    /// SMT siblings of the core, isolated along with it (they share its caches and pipeline).
    pub(crate) siblings: Vec<usize>,
    /// Parameters set as given (skew_tick=1, tsc=reliable).
    pub(crate) extra: Vec<String>,
    /// The kernel predates 5.6 (no isolcpus=managed_irq).
    pub(crate) old_kernel: bool,
}

/// True for a kernel release older than `major.minor` ("5.4.0-150-generic" < 5.6); unknown → false.
pub(crate) fn older_than(release: &str, major: u32, minor: u32) -> bool {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    match (
        it.next().and_then(|m| m.parse::<u32>().ok()),
        it.next().and_then(|m| m.parse::<u32>().ok()),
    ) {
        (Some(a), Some(b)) => (a, b) < (major, minor),
        _ => false,
    }
}

/// isolcpus flags (tuned's realtime profile uses managed_irq,domain).
const ISOL_FLAGS: &[&str] = &["managed_irq", "domain"];

fn split_isolcpus(v: &str) -> Result<(Vec<String>, Vec<usize>), String> {
    let mut flags = Vec::new();
    let mut rest = v;
    while let Some((head, tail)) = rest.split_once(',') {
        if head.chars().all(|c| c.is_ascii_alphabetic() || c == '_') && !head.is_empty() {
            flags.push(head.to_string());
            rest = tail;
        } else {
            break;
        }
    }
    if rest.chars().all(|c| c.is_ascii_alphabetic() || c == '_') && !rest.is_empty() {
        flags.push(rest.to_string());
        rest = "";
    }
    Ok((flags, parse_list(rest)?))
}

fn union(existing: &str, cores: &[usize]) -> Result<Vec<usize>, String> {
    let mut v = parse_list(existing)?;
    v.extend(cores);
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The managed parameters with their merged values, given what is configured now (`current` tokens).
/// Parameters whose present value cannot be understood are left alone and named in the second list.
pub(crate) fn managed_params(
    current: &[String],
    w: &Want,
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let mut cores = vec![w.core];
    cores.extend(&w.siblings);
    let mut isolated = cores.clone();
    if let Some(v) = last_value(current, "isolcpus") {
        match split_isolcpus(&v) {
            Ok((_, cpus)) => isolated.extend(cpus),
            Err(_) => skipped.push(format!("isolcpus={v}")),
        }
    }
    isolated.sort_unstable();
    isolated.dedup();
    if w.isolcpus && !skipped.iter().any(|s| name(s) == "isolcpus") {
        let (mut flags, _) = last_value(current, "isolcpus")
            .and_then(|v| split_isolcpus(&v).ok())
            .unwrap_or_default();
        // Before 5.6 the kernel knows no managed_irq, and an unknown flag makes it ignore isolcpus altogether.
        let known: &[&str] = if w.old_kernel {
            &ISOL_FLAGS[1..]
        } else {
            ISOL_FLAGS
        };
        for f in known {
            if !flags.iter().any(|x| x == f) {
                flags.push((*f).to_string());
            }
        }
        out.push(format!(
            "isolcpus={},{}",
            flags.join(","),
            cpulist::format(&isolated)
        ));
    }
    let mut nohz = cores.clone();
    for (want, param) in [(w.nohz_full, "nohz_full"), (w.rcu_nocbs, "rcu_nocbs")] {
        let existing = last_value(current, param).unwrap_or_default();
        match union(&existing, &cores) {
            Ok(cpus) => {
                if param == "nohz_full" {
                    nohz = cpus.clone();
                }
                if want {
                    out.push(format!("{param}={}", cpulist::format(&cpus)));
                }
            }
            Err(_) => skipped.push(format!("{param}={existing}")),
        }
    }
    if w.irqaffinity {
        let housekeeping: Vec<usize> = w
            .online
            .iter()
            .copied()
            .filter(|c| !isolated.contains(c) && !nohz.contains(c))
            .collect();
        if housekeeping.is_empty() {
            return Err(format!(
                "no housekeeping CPU would be left (online {}, isolated {})",
                cpulist::format(&w.online),
                cpulist::format(&isolated)
            ));
        }
        let kept = last_value(current, "irqaffinity")
            .and_then(|v| parse_list(&v).ok())
            .map(|v| {
                v.into_iter()
                    .filter(|c| housekeeping.contains(c))
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty())
            .unwrap_or(housekeeping);
        out.push(format!("irqaffinity={}", cpulist::format(&kept)));
    }
    for (param, cap) in &w.cstates {
        let v = last_value(current, param)
            .and_then(|v| v.parse::<u32>().ok())
            .map_or(*cap, |old| old.min(*cap));
        out.push(format!("{param}={v}"));
    }
    out.extend(w.extra.iter().cloned());
    Ok((out, skipped))
}

/// A token is safe to hand to the GRUB drop-in (a POSIX sh word) and to /etc/kernel/cmdline.
pub(crate) fn is_safe_token(t: &str) -> bool {
    !t.is_empty()
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.,=:-/+".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(core: usize) -> Want {
        Want {
            core,
            online: vec![0, 1, 2, 3],
            isolcpus: true,
            nohz_full: true,
            rcu_nocbs: true,
            irqaffinity: true,
            ..Default::default()
        }
    }

    #[test]
    fn tokens_keep_quoted_values() {
        // /proc/cmdline of the captured untuned guest, plus a quoted value as the kernel allows.
        let t = tokens(
            "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 root=UUID=1 ro console=ttyS0,115200 foo=\"a b\"\n",
        );
        assert_eq!(t.len(), 5);
        assert_eq!(t[4], "foo=\"a b\"");
        assert_eq!(name(&t[1]), "root");
        assert_eq!(last_value(&t, "console").as_deref(), Some("ttyS0,115200"));
    }

    #[test]
    fn existing_isolcpus_is_merged_not_repeated() {
        let cur = tokens("quiet isolcpus=2 console=ttyS0");
        let (m, skipped) = managed_params(&cur, &want(3)).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(
            m,
            vec![
                "isolcpus=managed_irq,domain,2-3",
                "nohz_full=3",
                "rcu_nocbs=3",
                "irqaffinity=0-1"
            ]
        );
        let merged = merge_into(&cur, &m);
        assert_eq!(merged.iter().filter(|t| name(t) == "isolcpus").count(), 1);
        assert_eq!(merged[..2], ["quiet", "console=ttyS0"]);
    }

    #[test]
    fn flags_and_caps_are_kept() {
        let mut w = want(3);
        w.cstates = vec![("intel_idle.max_cstate", 0), ("processor.max_cstate", 1)];
        let cur = tokens("isolcpus=nohz,domain,1 irqaffinity=0,3 processor.max_cstate=0");
        let (m, _) = managed_params(&cur, &w).unwrap();
        assert_eq!(m[0], "isolcpus=nohz,domain,managed_irq,1,3");
        assert_eq!(m[3], "irqaffinity=0");
        assert_eq!(m[5], "processor.max_cstate=0");
        w.old_kernel = true;
        let (m, _) = managed_params(&tokens("isolcpus=1"), &w).unwrap();
        assert_eq!(m[0], "isolcpus=domain,1,3");
        w.old_kernel = false;
        // Releases as uname prints them: Debian 12 RT, Ubuntu 20.04 GA, a Raspberry Pi kernel.
        assert!(!older_than("6.1.0-50-rt-amd64", 5, 6));
        assert!(older_than("5.4.0-150-generic", 5, 6));
        assert!(!older_than("6.6.51+rpt-rpi-v8", 5, 6));
        assert!(!older_than("garbage", 5, 6));
        w.siblings = vec![2];
        w.extra = vec!["skew_tick=1".into()];
        let (m, _) = managed_params(&tokens("nohz_full=1"), &w).unwrap();
        assert_eq!(m[0], "isolcpus=managed_irq,domain,2-3");
        assert_eq!(m[1], "nohz_full=1-3");
        assert_eq!(m.last().unwrap(), "skew_tick=1");
    }

    #[test]
    fn unparseable_values_are_left_alone_and_no_housekeeping_is_refused() {
        let (m, skipped) = managed_params(&tokens("nohz_full=garbage"), &want(3)).unwrap();
        assert_eq!(skipped, vec!["nohz_full=garbage"]);
        assert!(!m.iter().any(|t| name(t) == "nohz_full"));
        let mut w = want(1);
        w.online = vec![0, 1];
        assert!(managed_params(&tokens("isolcpus=0"), &w).is_err());
        assert!(is_safe_token("isolcpus=managed_irq,domain,3"));
        assert!(!is_safe_token("a;rm"));
    }
}
