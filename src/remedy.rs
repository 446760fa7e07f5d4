//! The ids of `fix` steps. A failing check names one of these as its remedy; `fix` proposes the step. And the one
//! formatter of the command lines rmp-eval suggests in its reports and errors (`Suggested`): the layers below the
//! commands name what to run by these variants, never by text of their own.

use serde::{Deserialize, Serialize};

/// A fix step. The order of `StepId::ALL` is the order fix applies them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepId {
    /// Kernel command line: isolcpus, nohz_full, rcu_nocbs, irqaffinity, C-state caps and other boot noise.
    Cmdline,
    /// The RT core isolated now, as a cgroup v2 isolated partition (until the boot parameters take over).
    Cpuset,
    /// cpufreq scaling governor = performance on the RT core.
    Governor,
    /// Turbo / boost off (intel_pstate no_turbo=1 or cpufreq boost=0).
    Turbo,
    /// sysctl values (sched_rt_runtime_us, timer_migration, stat_interval, numa_balancing, watchdogs).
    Sysctl,
    /// Transparent huge pages: never.
    Thp,
    /// Kernel same-page merging stopped.
    Ksm,
    /// Unbound workqueues kept off the RT core.
    Workqueue,
    /// irqbalance bans the RT core.
    Irqbalance,
    /// Movable IRQs off the RT core, NIC IRQs onto it, default_smp_affinity.
    IrqAffinity,
    /// rps_cpus = 0 on the NIC's rx queues.
    Rps,
    /// NIC interrupt coalescing off (rx-usecs 0).
    NicCoalesce,
    /// NIC Energy Efficient Ethernet off.
    NicEee,
    /// Saving the runtime steps for apply-saved; not a remedy of its own (follows from the steps chosen).
    Persist,
}

impl StepId {
    /// Every remedy, in apply order (Persist is planned after them).
    pub const ALL: [StepId; 13] = [
        StepId::Cmdline,
        StepId::Cpuset,
        StepId::Governor,
        StepId::Turbo,
        StepId::Sysctl,
        StepId::Thp,
        StepId::Ksm,
        StepId::Workqueue,
        StepId::Irqbalance,
        StepId::IrqAffinity,
        StepId::Rps,
        StepId::NicCoalesce,
        StepId::NicEee,
    ];

    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            StepId::Cmdline => "cmdline",
            StepId::Cpuset => "cpuset",
            StepId::Governor => "governor",
            StepId::Turbo => "turbo",
            StepId::Sysctl => "sysctl",
            StepId::Thp => "thp",
            StepId::Ksm => "ksm",
            StepId::Workqueue => "workqueue",
            StepId::Irqbalance => "irqbalance",
            StepId::IrqAffinity => "irq_affinity",
            StepId::Rps => "rps",
            StepId::NicCoalesce => "nic_coalesce",
            StepId::NicEee => "nic_eee",
            StepId::Persist => "persist",
        }
    }

    /// The remedy of this name (Persist is not one).
    pub(crate) fn parse(s: &str) -> Option<StepId> {
        StepId::ALL.into_iter().find(|id| id.as_str() == s)
    }
}

impl std::fmt::Display for StepId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A command line rmp-eval suggests to the user; its text is written here only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Suggested<'a> {
    /// The fix step that removes a source: `rmp-eval fix --core N --only STEP`.
    Fix { core: usize, step: StepId },
    /// The check to read where no fix step exists: `rmp-eval check --core N (see CHECK)`.
    Check { core: usize, check: &'a str },
    /// The software SubDevice on the other end of a NIC: `rmp-eval reflect`, with `--nic` when named.
    Reflect { nic: Option<&'a str> },
    /// A NIC run's other path: `--path NAME`.
    Path(&'a str),
}

impl std::fmt::Display for Suggested<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Suggested::Fix { core, step } => write!(f, "rmp-eval fix --core {core} --only {step}"),
            Suggested::Check { core, check } => {
                write!(f, "rmp-eval check --core {core} (see {check})")
            }
            Suggested::Reflect { nic: None } => f.write_str("rmp-eval reflect"),
            Suggested::Reflect { nic: Some(n) } => write!(f, "rmp-eval reflect --nic {n}"),
            Suggested::Path(p) => write!(f, "--path {p}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_command_lines_name_the_core() {
        let fix = Suggested::Fix {
            core: 3,
            step: StepId::IrqAffinity,
        };
        assert_eq!(fix.to_string(), "rmp-eval fix --core 3 --only irq_affinity");
        let check = Suggested::Check {
            core: 2,
            check: "cstates",
        };
        assert_eq!(check.to_string(), "rmp-eval check --core 2 (see cstates)");
        let reflect = Suggested::Reflect { nic: Some("IF") };
        assert_eq!(reflect.to_string(), "rmp-eval reflect --nic IF");
        assert_eq!(
            Suggested::Reflect { nic: None }.to_string(),
            "rmp-eval reflect"
        );
        assert_eq!(Suggested::Path("af_packet").to_string(), "--path af_packet");
    }

    #[test]
    fn names_and_order_are_the_enums() {
        let names: Vec<&str> = StepId::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names[..3], ["cmdline", "cpuset", "governor"]);
        assert!(
            StepId::ALL
                .iter()
                .all(|s| StepId::parse(s.as_str()) == Some(*s))
        );
        assert_eq!(StepId::parse("irq_affinity"), Some(StepId::IrqAffinity));
        assert_eq!(StepId::parse("persist"), None);
        assert_eq!(
            serde_json::to_string(&StepId::NicEee).unwrap(),
            "\"nic_eee\""
        );
    }
}
