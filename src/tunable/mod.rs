//! Tunables: each module is one knob of the machine with everything about it in one place — where it is read,
//! the check(s) that judge it, the fix step that sets it, what that step costs (stated in the plan) and what
//! keeps it across reboots. A tunable's checks are also listed in `crate::registry::CHECKS` (report order); the
//! tunable itself in `crate::registry::TUNABLES`, which fix's planner, apply-saved, drift and the risks go
//! through. The change kinds a step is made of are the executor's (`crate::fix::kind`): they journal, apply,
//! verify and revert every step alike.

pub(crate) mod cmdline;
pub(crate) mod cpuset;
pub(crate) mod ethtool;
pub(crate) mod governor;
pub mod irq_affinity;
pub(crate) mod irqbalance;
pub(crate) mod ksm;
pub mod rps;
pub(crate) mod sysctl;
pub(crate) mod thp;
pub(crate) mod turbo;
pub(crate) mod workqueue;

use crate::checks::CheckId;
use crate::error::Result;
use crate::fix::runtime::Target;
use crate::fix::{Step, StepId};
use crate::host::Host;

/// One knob: its fix step, the checks whose failure it repairs, and how to plan it.
pub(crate) struct Tunable {
    pub(crate) step: StepId,
    /// What keeps the setting across reboots.
    pub(crate) persistence: Persistence,
    /// The step against the machine as it is: only the changes that differ, nothing written. The ids of the
    /// checks that failed pick what to set where the step covers several checks (empty: as --only asks).
    pub(crate) plan: fn(&Host, &Target, &[CheckId]) -> Result<Step>,
    /// What the planned step costs the machine (shown as risks in the plan when it changes something).
    pub(crate) risks: fn(&Step, &Target) -> Vec<String>,
}

/// What keeps a tunable's setting across reboots: the one place apply-saved (at boot, and when an interface
/// appears) learns which steps it plans again.
#[derive(Clone, Copy)]
pub(crate) enum Persistence {
    /// The files the step writes keep it (a boot loader's, /etc's): nothing to re-apply.
    Files,
    /// A kernel value, lost at reboot: fix saves the step and apply-saved plans it again at every boot.
    Boot,
    /// A value of the saved NIC, lost at reboot and when the interface goes: planned again at boot and when the
    /// saved NIC appears or comes up. `each_nic`: the part planned for any interface that appears (its own
    /// share of the step), where the step has one.
    Nic {
        each_nic: Option<fn(&Host, &Target, &str) -> Step>,
    },
}

impl Persistence {
    /// Lost at reboot, so apply-saved re-applies it.
    pub(crate) fn at_boot(self) -> bool {
        !matches!(self, Persistence::Files)
    }
}

/// The risks of a step that takes none.
pub(crate) fn no_risks(_: &Step, _: &Target) -> Vec<String> {
    Vec::new()
}
