//! Check ids: the names users see in `check`, JSON, `fix` and the docs. One variant per check, each spelled
//! once here, so that the registry, fix's planner and the sysctl knobs cannot disagree on a spelling.

use serde::{Serialize, Serializer};

macro_rules! check_ids {
    ($($konst:ident = $variant:ident $name:literal,)*) => {
        /// A check's id; serialized (JSON) and shown as its snake_case name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum CheckId {
            $($variant,)*
        }

        impl CheckId {
            /// Every id, in declaration order.
            pub const ALL: &'static [CheckId] = &[$(CheckId::$variant,)*];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $(CheckId::$variant => $name,)*
                }
            }
        }

        $(pub(crate) const $konst: CheckId = CheckId::$variant;)*
    };
}

check_ids! {
    PREEMPT_RT = PreemptRt "preempt_rt",
    SWAP = Swap "swap",
    TIMER_MIGRATION = TimerMigration "timer_migration",
    RT_THROTTLING = RtThrottling "rt_throttling",
    CLOCKSOURCE = Clocksource "clocksource",
    AF_XDP = AfXdp "af_xdp",
    FUTEX_HASH = FutexHash "futex_hash",
    SKEW_TICK = SkewTick "skew_tick",
    TSC_RELIABLE = TscReliable "tsc_reliable",
    NMI_WATCHDOG = NmiWatchdog "nmi_watchdog",
    THP = Thp "thp",
    KSM = Ksm "ksm",
    STAT_INTERVAL = StatInterval "stat_interval",
    NUMA_BALANCING = NumaBalancing "numa_balancing",
    CORE_ISOLATED = CoreIsolated "core_isolated",
    AFTER_BOOT = AfterBoot "after_boot",
    NOHZ_FULL = NohzFull "nohz_full",
    RCU_NOCBS = RcuNocbs "rcu_nocbs",
    GOVERNOR = Governor "governor",
    CPU_FREQUENCY = CpuFrequency "cpu_frequency",
    IRQAFFINITY = Irqaffinity "irqaffinity",
    UNRELATED_IRQS = UnrelatedIrqs "unrelated_irqs",
    SMT_SIBLING = SmtSibling "smt_sibling",
    CSTATES = Cstates "cstates",
    TURBO = Turbo "turbo",
    PI_CLOCK = PiClock "pi_clock",
    IDLE_STATES = IdleStates "idle_states",
    DEFAULT_AFFINITY = DefaultAffinity "default_affinity",
    IRQBALANCE = Irqbalance "irqbalance",
    WORKQUEUE = Workqueue "workqueue",
    SOFT_WATCHDOG = SoftWatchdog "soft_watchdog",
    RT_CORE_THREADS = RtCoreThreads "rt_core_threads",
    SMI_RATE = SmiRate "smi_rate",
    CSTATE_LIMIT = CstateLimit "cstate_limit",
    TURBO_FIRMWARE = TurboFirmware "turbo_firmware",
    IDLE_DRIVER = IdleDriver "idle_driver",
    X2APIC = X2apic "x2apic",
    TSC_INVARIANT = TscInvariant "tsc_invariant",
    NIC_PRESENT = NicPresent "nic_present",
    NIC_LINK = NicLink "nic_link",
    NIC_QUIET = NicQuiet "nic_quiet",
    NIC_IRQS_PINNED = NicIrqsPinned "nic_irqs_pinned",
    NIC_QUEUE_IRQS = NicQueueIrqs "nic_queue_irqs",
    RPS = Rps "rps",
    NIC_DRIVER = NicDriver "nic_driver",
    NIC_SPEED = NicSpeed "nic_speed",
    NIC_IRQ_DEFER = NicIrqDefer "nic_irq_defer",
    NIC_COALESCE = NicCoalesce "nic_coalesce",
    NIC_EEE = NicEee "nic_eee",
    PROCESS_RT_POLICY = ProcessRtPolicy "process_rt_policy",
    PROCESS_AFFINITY = ProcessAffinity "process_affinity",
    PROCESS_MEMLOCK = ProcessMemlock "process_memlock",
    PROCESS_DMA_LATENCY = ProcessDmaLatency "process_dma_latency",
    PROCESS_IRQ_PRIORITIES = ProcessIrqPriorities "process_irq_priorities",
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
        assert_eq!(serde_json::to_string(&NIC_EEE).unwrap(), "\"nic_eee\"");
        assert_eq!(CheckId::parse("no_such_check"), None);
    }
}
