//! The ids of `fix` steps. A failing check names one of these as its remedy; `fix` proposes the step.
//! Shared here so that checks and fix cannot drift apart.

/// Kernel command line: isolcpus, nohz_full, rcu_nocbs, irqaffinity, C-state caps, nosmt and other boot noise.
pub const CMDLINE: &str = "cmdline";
/// cpufreq scaling governor = performance on the RT core.
pub const GOVERNOR: &str = "governor";
/// Turbo / boost off (intel_pstate no_turbo=1 or cpufreq boost=0).
pub const TURBO: &str = "turbo";
/// Movable IRQs off the RT core, NIC IRQs onto it, default_smp_affinity.
pub const IRQ_AFFINITY: &str = "irq_affinity";
/// irqbalance bans the RT core.
pub const IRQBALANCE: &str = "irqbalance";
/// rps_cpus = 0 on the NIC's rx queues.
pub const RPS: &str = "rps";
/// sysctl values (sched_rt_runtime_us, timer_migration, stat_interval, numa_balancing, watchdogs).
pub const SYSCTL: &str = "sysctl";
/// NIC interrupt coalescing off (rx-usecs 0).
pub const NIC_COALESCE: &str = "nic_coalesce";
/// NIC Energy Efficient Ethernet off.
pub const NIC_EEE: &str = "nic_eee";
/// Transparent huge pages: never.
pub const THP: &str = "thp";
/// Unbound workqueues kept off the RT core.
pub const WORKQUEUE: &str = "workqueue";

/// Every step id, in the order fix applies them.
pub const ALL: &[&str] = &[
    CMDLINE,
    GOVERNOR,
    TURBO,
    SYSCTL,
    THP,
    WORKQUEUE,
    IRQBALANCE,
    IRQ_AFFINITY,
    RPS,
    NIC_COALESCE,
    NIC_EEE,
];
