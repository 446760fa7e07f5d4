//! The ordered lists everything else is generated from: every check (report order, sections in this order
//! too) and every tunable (a check with its fix step, in `crate::tunable`). `check`'s output, the docs and the
//! man page (`doc`), fix's planner and apply-saved all go through these lists.

pub mod doc;

use crate::checks::{
    Check, CheckId, Ctx, Finding, Section, after_boot, finding, firmware, nic, nic_hw, nic_irq, pi,
    process, system, threads,
};
use crate::host::Host;
use crate::remedy::StepId;
use crate::tunable::{self, Tunable};

/// All checks, in report order (sections appear in this order too).
pub static CHECKS: &[Check] = &[
    system::PREEMPT_RT,
    system::SWAP,
    tunable::sysctl::TIMER_MIGRATION,
    tunable::sysctl::RT_THROTTLING,
    system::CLOCKSOURCE,
    system::AF_XDP,
    system::FUTEX_HASH,
    tunable::cmdline::SKEW_TICK,
    tunable::cmdline::TSC_RELIABLE,
    tunable::sysctl::NMI_WATCHDOG,
    tunable::thp::CHECK,
    tunable::ksm::CHECK,
    tunable::sysctl::STAT_INTERVAL,
    tunable::sysctl::NUMA_BALANCING,
    after_boot::AFTER_BOOT,
    tunable::cmdline::CORE_ISOLATED,
    tunable::cmdline::NOHZ_FULL,
    tunable::cmdline::RCU_NOCBS,
    tunable::governor::GOVERNOR,
    tunable::governor::CPU_FREQUENCY,
    tunable::cmdline::IRQAFFINITY,
    tunable::irq_affinity::UNRELATED_IRQS,
    tunable::cmdline::SMT_SIBLING,
    tunable::cmdline::CSTATES,
    tunable::turbo::CHECK,
    pi::PI_CLOCK,
    tunable::cmdline::IDLE_STATES,
    tunable::irq_affinity::DEFAULT_AFFINITY,
    tunable::irqbalance::CHECK,
    tunable::workqueue::CHECK,
    tunable::sysctl::SOFT_WATCHDOG,
    threads::RT_CORE_THREADS,
    firmware::SMI_RATE,
    firmware::CSTATE_LIMIT,
    firmware::TURBO_FIRMWARE,
    firmware::IDLE_DRIVER,
    firmware::X2APIC,
    firmware::TSC_INVARIANT,
    nic::NIC_PRESENT,
    nic::NIC_LINK,
    nic::NIC_QUIET,
    tunable::irq_affinity::NIC_IRQS_PINNED,
    nic_irq::NIC_QUEUE_IRQS,
    tunable::rps::RPS,
    nic_hw::NIC_DRIVER,
    nic_hw::NIC_SPEED,
    tunable::rps::NIC_IRQ_DEFER,
    tunable::ethtool::NIC_COALESCE,
    tunable::ethtool::NIC_EEE,
    process::RT_POLICY,
    process::AFFINITY,
    process::MEMLOCK,
    process::DMA_LATENCY,
    process::IRQ_PRIORITIES,
];

/// Every fix step that is a tunable of its own (`crate::tunable`); the others are planned in `crate::fix`.
pub(crate) static TUNABLES: &[&Tunable] = &[
    &tunable::cmdline::TUNABLE,
    &tunable::cpuset::TUNABLE,
    &tunable::governor::TUNABLE,
    &tunable::turbo::TUNABLE,
    &tunable::sysctl::TUNABLE,
    &tunable::thp::TUNABLE,
    &tunable::ksm::TUNABLE,
    &tunable::workqueue::TUNABLE,
    &tunable::irqbalance::TUNABLE,
    &tunable::irq_affinity::TUNABLE,
    &tunable::rps::TUNABLE,
    &tunable::ethtool::COALESCE,
    &tunable::ethtool::EEE,
];

/// The check with this id.
pub fn find(id: CheckId) -> Option<&'static Check> {
    CHECKS.iter().find(|c| c.id == id)
}

/// The tunable whose fix step this is, if it is one.
pub(crate) fn tunable(step: StepId) -> Option<&'static Tunable> {
    TUNABLES.iter().copied().find(|t| t.step == step)
}

/// Runs every check that applies (NIC checks only when a NIC is given).
pub fn run_all(host: &Host, ctx: &Ctx) -> Vec<Finding> {
    CHECKS
        .iter()
        .filter(|c| c.section != Section::Nic || ctx.nic.is_some())
        .filter(|c| c.section != Section::Process || ctx.pid.is_some())
        .map(|c| finding(c, (c.evaluate)(host, ctx)).for_nic(ctx.nic.as_deref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tunable::sysctl::knob;

    #[test]
    fn ids_are_unique_and_knobs_name_registered_sysctl_checks() {
        let mut ids: Vec<CheckId> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len(), "duplicate check id");
        for k in knob::SYSCTLS {
            let c = find(k.check).unwrap_or_else(|| panic!("{} not registered", k.check));
            assert_eq!(c.remedy, Some(StepId::Sysctl), "{}", c.id);
        }
    }

    #[test]
    fn every_tunable_is_the_remedy_of_a_registered_check() {
        // The cpuset step goes with a failing core_isolated, whose remedy is the command line (fix::plan).
        for t in TUNABLES.iter().filter(|t| t.step != StepId::Cpuset) {
            assert!(
                CHECKS.iter().any(|c| c.remedy == Some(t.step)),
                "{}: no registered check names it",
                t.step
            );
        }
        let steps: Vec<StepId> = TUNABLES.iter().map(|t| t.step).collect();
        let mut dedup = steps.clone();
        dedup.dedup();
        assert_eq!(steps, dedup, "a step with two tunables");
    }
}
