//! The ids of `fix` steps. A failing check names one of these as its remedy; `fix` proposes the step.

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

#[cfg(test)]
mod tests {
    use super::*;

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
