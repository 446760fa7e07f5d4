//! Check ids: the names users see in `check`, JSON, `fix` and the docs. One variant per check, its name spelled
//! once here, so that the registry, fix's planner and the sysctl knobs cannot disagree on a spelling.

use serde::{Serialize, Serializer};

macro_rules! check_ids {
    ($($variant:ident $name:literal,)*) => {
        /// A check's id; serialized (JSON) and shown as its snake_case name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum CheckId {
            $($variant,)*
        }

        impl CheckId {
            /// Every id, in declaration order.
            pub(crate) const ALL: &'static [CheckId] = &[$(CheckId::$variant,)*];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $(CheckId::$variant => $name,)*
                }
            }
        }

    };
}

check_ids! {
    PreemptRt "preempt_rt",
    Swap "swap",
    TimerMigration "timer_migration",
    RtThrottling "rt_throttling",
    Clocksource "clocksource",
    AfXdp "af_xdp",
    FutexHash "futex_hash",
    SkewTick "skew_tick",
    TscReliable "tsc_reliable",
    NmiWatchdog "nmi_watchdog",
    Thp "thp",
    Ksm "ksm",
    StatInterval "stat_interval",
    NumaBalancing "numa_balancing",
    CoreIsolated "core_isolated",
    AfterBoot "after_boot",
    NohzFull "nohz_full",
    RcuNocbs "rcu_nocbs",
    Governor "governor",
    CpuFrequency "cpu_frequency",
    Irqaffinity "irqaffinity",
    UnrelatedIrqs "unrelated_irqs",
    SmtSibling "smt_sibling",
    Cstates "cstates",
    Turbo "turbo",
    PiClock "pi_clock",
    IdleStates "idle_states",
    DefaultAffinity "default_affinity",
    Irqbalance "irqbalance",
    Workqueue "workqueue",
    SoftWatchdog "soft_watchdog",
    RtCoreThreads "rt_core_threads",
    SmiRate "smi_rate",
    CstateLimit "cstate_limit",
    TurboFirmware "turbo_firmware",
    IdleDriver "idle_driver",
    X2apic "x2apic",
    TscInvariant "tsc_invariant",
    NicPresent "nic_present",
    NicLink "nic_link",
    NicQuiet "nic_quiet",
    NicIrqsPinned "nic_irqs_pinned",
    NicQueueIrqs "nic_queue_irqs",
    Rps "rps",
    NicDriver "nic_driver",
    NicSpeed "nic_speed",
    NicIrqDefer "nic_irq_defer",
    NicCoalesce "nic_coalesce",
    NicEee "nic_eee",
    ProcessRtPolicy "process_rt_policy",
    ProcessAffinity "process_affinity",
    ProcessMemlock "process_memlock",
    ProcessDmaLatency "process_dma_latency",
    ProcessIrqPriorities "process_irq_priorities",
}

impl CheckId {
    /// The check of this name.
    pub fn parse(s: &str) -> Option<CheckId> {
        CheckId::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for CheckId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for CheckId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case_and_parse_back() {
        let mut names: Vec<&str> = CheckId::ALL.iter().map(|c| c.as_str()).collect();
        assert!(names.iter().all(|n| {
            n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        }));
        assert!(
            CheckId::ALL
                .iter()
                .all(|c| CheckId::parse(c.as_str()) == Some(*c))
        );
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CheckId::ALL.len());
        assert_eq!(
            serde_json::to_string(&CheckId::NicEee).unwrap(),
            "\"nic_eee\""
        );
        assert_eq!(CheckId::parse("no_such_check"), None);
    }
}
