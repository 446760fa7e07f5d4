//! Tunables: each module is one knob of the machine with everything about it in one place — where it is read,
//! the check(s) that judge it, the fix step that sets it, and what that step costs (stated in the plan). A
//! tunable's checks are also listed in `crate::registry::CHECKS` (report order); the tunable itself in
//! `crate::registry::TUNABLES`. fix's planner, apply-saved and the risks go through that list; the steps that
//! are not (yet) a tunable of their own are planned in `crate::fix`.

pub(crate) mod governor;
pub(crate) mod ksm;
pub(crate) mod sysctl;
pub(crate) mod thp;
pub(crate) mod turbo;
pub(crate) mod workqueue;

use crate::checks::CheckId;
use crate::fix::runtime::Target;
use crate::fix::{Step, StepId};
use crate::host::Host;

/// One knob: its fix step, the checks whose failure it repairs, and how to plan it.
pub(crate) struct Tunable {
    pub(crate) step: StepId,
    /// The value is lost at reboot: fix saves the step and apply-saved plans it again at every boot.
    pub(crate) at_boot: bool,
    /// The step against the machine as it is: only the changes that differ, nothing written. The ids of the
    /// checks that failed pick what to set where the step covers several checks (empty: as --only asks).
    pub(crate) plan: fn(&Host, &Target, &[CheckId]) -> Step,
    /// What the planned step costs the machine (shown as risks in the plan when it changes something).
    pub(crate) risks: fn(&Step, &Target) -> Vec<String>,
}
