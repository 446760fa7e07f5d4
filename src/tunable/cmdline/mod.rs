//! The kernel command line: the checks that judge what the running kernel was booted with (`isolation.rs`:
//! isolcpus, nohz_full, rcu_nocbs, irqaffinity, the SMT sibling; `power.rs`: C-state caps; `noise.rs`: skew_tick,
//! tsc=reliable), and the step that puts the parameters they ask for on the command line of the next boot,
//! merged with what is configured, through whichever boot loader boots the machine (`boot/`). The boot loader's
//! files keep it across reboots: apply-saved has nothing to do.

pub(crate) mod boot;
mod isolation;
mod noise;
mod power;

pub(crate) use isolation::{CORE_ISOLATED, IRQAFFINITY, NOHZ_FULL, RCU_NOCBS, SMT_SIBLING};
pub(crate) use noise::{SKEW_TICK, TSC_RELIABLE};
pub(crate) use power::{CSTATES, IDLE_STATES};

use super::{Persistence, Tunable};
use crate::checks::CheckId;
use crate::error::{Error, Result};
use crate::fix::runtime::Target;
use crate::fix::{Step, StepId};
use crate::host::Host;
use boot::want::Want;

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Cmdline,
    persistence: Persistence::Files,
    plan,
    risks,
};

/// The kernel command line the failing checks ask for (all of the isolation when none of them failed: --only),
/// for the target's isolated CPUs.
fn plan(host: &Host, t: &Target, failed: &[CheckId]) -> Result<Step> {
    let f = |c: CheckId| failed.contains(&c);
    let isolation = [
        CheckId::CoreIsolated,
        CheckId::NohzFull,
        CheckId::RcuNocbs,
        CheckId::Irqaffinity,
        CheckId::SmtSibling,
    ];
    let any = isolation.iter().any(|c| f(*c));
    let mut want = Want {
        core: t.core,
        online: t.online.clone(),
        siblings: t.siblings(),
        isolcpus: !any || f(CheckId::CoreIsolated) || f(CheckId::SmtSibling),
        nohz_full: !any || f(CheckId::NohzFull) || f(CheckId::SmtSibling),
        rcu_nocbs: !any || f(CheckId::RcuNocbs) || f(CheckId::SmtSibling),
        irqaffinity: !any || f(CheckId::Irqaffinity) || f(CheckId::SmtSibling),
        ..Default::default()
    };
    if f(CheckId::Cstates) || f(CheckId::IdleStates) {
        want.cstates = boot::want::cstate_caps(host);
    }
    if let Ok(rel) = crate::machine::kernel_release(host) {
        want.old_kernel = boot::want::older_than(&rel, 5, 6);
    }
    if f(CheckId::SkewTick) {
        want.extra.push("skew_tick=1".into());
    }
    if f(CheckId::TscReliable) {
        want.extra.push("tsc=reliable".into());
    }
    want.extra.extend(t.cmdline_extra.iter().cloned());
    want.released = released_by_earlier_fixes(host, t);
    boot::plan(host, &want).map_err(|e| Error::failed(format!("kernel command line: {e}")))
}

/// The CPUs earlier fixes still in the journal isolated on the kernel command line for their RT core, which
/// the user's own parameters did not hold — less those isolated now.
fn released_by_earlier_fixes(host: &Host, t: &Target) -> Vec<usize> {
    let mut own = crate::fix::earlier::Earlier::load(host).cmdline_isolated();
    own.retain(|c| !t.isolated.contains(c));
    own
}

fn risks(_: &Step, t: &Target) -> Vec<String> {
    let mut r = vec![
        "a boot configuration change: a command line the kernel rejects can stop the machine booting — pick \
         the previous kernel entry in the boot menu, then `rmp-eval rollback`"
            .to_string(),
    ];
    let siblings = t.siblings();
    if !siblings.is_empty() {
        let (them, are) = match siblings.len() {
            1 => ("the SMT sibling", "is"),
            _ => ("the SMT siblings", "are"),
        };
        r.push(format!(
            "{}, {them} of CPU {}, {are} isolated along with it: the machine loses a whole core's worth of CPUs \
             for other work",
            crate::fix::cpus_named(&siblings),
            t.core
        ));
    }
    r.extend(crate::fix::risk::housekeeping(t));
    r
}
