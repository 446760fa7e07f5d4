//! Kernel command-line parameters fix manages, merged with what is already configured: `isolcpus=2` plus RT
//! core 3 becomes one `isolcpus=managed_irq,domain,2-3`; never a parameter twice; other parameters untouched.
//! What is wanted comes from the failing checks (plan.rs) and a machine fact read here (the idle driver's
//! C-state parameters); the merge is pure. The same for every boot loader.

#[cfg(test)]
use super::tokens::{is_safe_token, merge_into, tokens};
use super::tokens::{last_value, name, same_name};
use crate::host::Host;
use crate::parse::cpulist::{self, CpuListError};

const INTEL_IDLE: &str = "/sys/module/intel_idle";
const ACPI_PROCESSOR: &str = "/sys/module/processor";

/// The one error of the command-line plan: every CPU would be isolated.
#[derive(Debug, thiserror::Error)]
#[error(
    "no housekeeping CPU would be left (online {}, isolated {})",
    cpulist::format(online),
    cpulist::format(isolated)
)]
pub(crate) struct NoHousekeeping {
    online: Vec<usize>,
    isolated: Vec<usize>,
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
    /// CPUs an earlier fix isolated for another RT core and the user's own values did not hold: they go back
    /// to the housekeeping CPUs instead of staying isolated beside the new core.
    pub(crate) released: Vec<usize>,
}

impl Want {
    /// This want, with only the released CPUs that none of the user's own isolating parameters (`user`: their
    /// tokens, without fix's) holds.
    pub(crate) fn released_unless_users(&self, user: &[String]) -> Want {
        let theirs = own_isolated([(user, &[][..])]);
        let mut w = self.clone();
        w.released.retain(|c| !theirs.contains(c));
        w
    }

    /// The plan's note on the CPUs given back to housekeeping, when there are any.
    pub(crate) fn released_note(&self) -> Option<String> {
        (!self.released.is_empty()).then(|| {
            let (was, it) = match self.released.len() {
                1 => ("was", "it goes"),
                _ => ("were", "they go"),
            };
            format!(
                "{} {was} isolated by an earlier `rmp-eval fix` for another RT core, not by you: {it} back to the \
                 housekeeping CPUs (your own parameters are kept; rollback restores every file as it was)",
                crate::fix::cpus_named(&self.released)
            )
        })
    }
}

/// The parameters whose CPU lists fix merges its RT core into.
const ISOLATING: [&str; 3] = ["isolcpus", "nohz_full", "rcu_nocbs"];

/// The CPUs earlier command-line edits (from the journal: what each added, and the user's tokens of the same
/// names it replaced) put into an isolating parameter that the user's own value did not hold.
pub(crate) fn own_isolated<'a>(
    edits: impl IntoIterator<Item = (&'a [String], &'a [String])>,
) -> Vec<usize> {
    let cpus = |toks: &[String], param: &str| -> Vec<usize> {
        let v = last_value(toks, param).unwrap_or_default();
        let list = if param == "isolcpus" {
            split_isolcpus(&v).map(|(_, c)| c)
        } else {
            cpulist::parse(&v)
        };
        list.unwrap_or_default()
    };
    let mut own = Vec::new();
    for (added, replaced) in edits {
        for param in ISOLATING {
            let users = cpus(replaced, param);
            own.extend(
                cpus(added, param)
                    .into_iter()
                    .filter(|c| !users.contains(c)),
            );
        }
    }
    own.sort_unstable();
    own.dedup();
    own
}

/// True for a kernel release older than `major.minor` ("5.4.0-150-generic" < 5.6); unknown → false.
pub(crate) fn older_than(release: &str, major: u32, minor: u32) -> bool {
    crate::parse::kernel::version(release).is_some_and(|(a, b, _)| (a, b) < (major, minor))
}

/// The C-state caps for this machine's idle driver.
pub(crate) fn cstate_caps(host: &Host) -> Vec<(&'static str, u32)> {
    if host.exists(INTEL_IDLE) {
        vec![("intel_idle.max_cstate", 0), ("processor.max_cstate", 1)]
    } else if host.exists(ACPI_PROCESSOR) {
        vec![("processor.max_cstate", 1)]
    } else {
        vec![("cpuidle.off", 1)]
    }
}

/// isolcpus flags (tuned's realtime profile uses managed_irq,domain).
const ISOL_FLAGS: &[&str] = &["managed_irq", "domain"];

fn split_isolcpus(v: &str) -> Result<(Vec<String>, Vec<usize>), CpuListError> {
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
    Ok((flags, cpulist::parse(rest)?))
}

fn union(existing: &str, cores: &[usize], released: &[usize]) -> Result<Vec<usize>, CpuListError> {
    let mut v = cpulist::parse(existing)?;
    v.retain(|c| !released.contains(c));
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
) -> Result<(Vec<String>, Vec<String>), NoHousekeeping> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let mut cores = vec![w.core];
    cores.extend(&w.siblings);
    let mut isolated = cores.clone();
    if let Some(v) = last_value(current, "isolcpus") {
        match split_isolcpus(&v) {
            Ok((_, cpus)) => isolated.extend(cpus.into_iter().filter(|c| !w.released.contains(c))),
            Err(_) => skipped.push(format!("isolcpus={v}")),
        }
    }
    isolated.sort_unstable();
    isolated.dedup();
    if w.isolcpus && !skipped.iter().any(|s| same_name(name(s), "isolcpus")) {
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
        match union(&existing, &cores, &w.released) {
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
            return Err(NoHousekeeping {
                online: w.online.clone(),
                isolated,
            });
        }
        // The user's list, less what is isolated now, plus the CPUs released from an earlier fix's isolation.
        let kept = last_value(current, "irqaffinity")
            .and_then(|v| cpulist::parse(&v).ok())
            .map(|mut v| {
                v.extend(&w.released);
                v.sort_unstable();
                v.dedup();
                v.retain(|c| housekeeping.contains(c));
                v
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
        // The user's order stays: the merged value where theirs was.
        assert_eq!(
            merged[..3],
            ["quiet", "isolcpus=managed_irq,domain,2-3", "console=ttyS0"]
        );
    }

    #[test]
    fn a_core_an_earlier_fix_isolated_is_released_and_the_users_own_kept() {
        // fix --core 3 on a line that held the user's isolcpus=2: what its journal records of the edit.
        let added =
            tokens("isolcpus=managed_irq,domain,2-3 nohz_full=3 rcu_nocbs=3 irqaffinity=0-1");
        let replaced = tokens("isolcpus=2");
        let own = own_isolated([(added.as_slice(), replaced.as_slice())]);
        assert_eq!(own, vec![3], "the user's CPU 2 is not fix's own");
        // Then fix --core 1: 3 goes back to housekeeping (and to irqaffinity), the user's 2 stays isolated.
        let mut w = want(1);
        w.released = own;
        let cur =
            tokens("quiet isolcpus=managed_irq,domain,2-3 nohz_full=3 rcu_nocbs=3 irqaffinity=0-1");
        let (m, _) = managed_params(&cur, &w).unwrap();
        assert_eq!(
            m,
            vec![
                "isolcpus=managed_irq,domain,1-2",
                "nohz_full=1",
                "rcu_nocbs=1",
                "irqaffinity=0,3"
            ]
        );
        // Without the journal's knowledge the old core stays isolated beside the new one.
        let (m, _) = managed_params(&cur, &want(1)).unwrap();
        assert_eq!(m[0], "isolcpus=managed_irq,domain,1-3");
    }

    #[test]
    fn dash_spelled_parameters_are_merged_by_the_kernels_rule() {
        // GRUB_CMDLINE_LINUX="quiet nohz-full=2 rcu-nocbs=2", fix --core 3 --only cmdline.
        let cur = tokens("quiet nohz-full=2 rcu-nocbs=2");
        let (m, skipped) = managed_params(&cur, &want(3)).unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        assert!(m.contains(&"nohz_full=2-3".to_string()), "{m:?}");
        assert!(m.contains(&"rcu_nocbs=2-3".to_string()), "{m:?}");
        let merged = merge_into(&cur, &m);
        assert!(
            !merged
                .iter()
                .any(|t| t.starts_with("nohz-full") || t.starts_with("rcu-nocbs")),
            "{merged:?}"
        );
        assert_eq!(
            merged
                .iter()
                .filter(|t| same_name(name(t), "nohz_full"))
                .count(),
            1
        );
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
