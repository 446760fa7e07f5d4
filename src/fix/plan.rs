//! From failing checks (or --only) to a Plan: which steps, in remedy::ALL order, each planned against the
//! machine as it is. Reads, never writes.

use super::boot::want::Want;
use super::runtime::Target;
use super::{Plan, Step, StepId, boot, saved};
use crate::checks::{CheckId, Finding, Status};
use crate::error::{Error, Result};
use crate::host::Host;

/// What to plan for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub core: usize,
    pub nic: Option<String>,
    /// The steps asked for, any order.
    pub steps: Vec<StepId>,
    /// Ids of the checks that failed (they pick the kernel parameters).
    pub failed: Vec<CheckId>,
}

pub fn online_cpus(host: &Host) -> Result<Vec<usize>> {
    Ok(crate::machine::online_cpus(host)?)
}

/// The steps named by failing checks, and the ids of those checks.
pub(crate) fn from_findings(findings: &[Finding]) -> (Vec<StepId>, Vec<CheckId>) {
    let failed: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .collect();
    // A failing core_isolated names the command line (isolcpus=, at the next boot); the cpuset step isolates the
    // core now as well (it plans nothing where it cannot). With --only, only what was asked.
    let isolation = failed.iter().any(|f| f.id == CheckId::CoreIsolated);
    let steps = StepId::ALL
        .into_iter()
        .filter(|s| {
            failed.iter().any(|f| f.remedy == Some(*s)) || (*s == StepId::Cpuset && isolation)
        })
        .collect();
    (steps, failed.iter().map(|f| f.id).collect())
}

/// --only: step ids, each one of StepId::ALL.
pub(crate) fn parse_only(only: &[String]) -> Result<Vec<StepId>> {
    only.iter()
        .map(|s| {
            StepId::parse(s.trim()).ok_or_else(|| {
                Error::usage(format!(
                    "--only: unknown step '{s}' (steps: {})",
                    StepId::ALL.map(StepId::as_str).join(", ")
                ))
            })
        })
        .collect()
}

pub fn build(host: &Host, req: &Request) -> Result<Plan> {
    let online = online_cpus(host)?;
    let t = Target::new(host, req.core, req.nic.clone(), online);
    let mut ids: Vec<StepId> = req.steps.clone();
    // The IRQ deferral check names no remedy of its own: the RPS step zeroes those knobs too.
    if req.failed.contains(&CheckId::NicIrqDefer) && !ids.contains(&StepId::Rps) {
        ids.push(StepId::Rps);
    }
    // irqbalance would undo the IRQ affinity within seconds.
    if ids.contains(&StepId::IrqAffinity) && !ids.contains(&StepId::Irqbalance) {
        ids.push(StepId::Irqbalance);
    }
    let mut plan = Plan::default();
    for id in StepId::ALL.into_iter().filter(|s| ids.contains(s)) {
        let mut step = match crate::registry::tunable(id) {
            Some(tunable) => (tunable.plan)(host, &t, &req.failed)?,
            None => other(host, req, &t, id)?,
        };
        super::risk::add(&mut step, &t);
        plan.steps.push(step);
    }
    let with_changes: Vec<StepId> = plan
        .steps
        .iter()
        .filter(|s| !s.changes.is_empty())
        .map(|s| s.id)
        .collect();
    if let Some(p) = saved::persist_step(host, req.core, req.nic.as_deref(), &with_changes) {
        plan.steps.push(p);
    }
    Ok(plan)
}

/// The steps that are not a tunable of their own (crate::registry::TUNABLES plans those).
fn other(host: &Host, req: &Request, t: &Target, id: StepId) -> Result<Step> {
    Ok(match id {
        StepId::Cmdline => cmdline(host, req, t)?,
        other => unreachable!("{other}: a tunable"),
    })
}

/// The kernel command line the failing checks ask for, for the target's isolated CPUs.
fn cmdline(host: &Host, req: &Request, t: &Target) -> Result<Step> {
    let f = |c: CheckId| req.failed.contains(&c);
    let isolation = [
        CheckId::CoreIsolated,
        CheckId::NohzFull,
        CheckId::RcuNocbs,
        CheckId::Irqaffinity,
        CheckId::SmtSibling,
    ];
    let any = isolation.iter().any(|c| f(*c));
    let mut want = Want {
        core: req.core,
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
        want.old_kernel = crate::fix::boot::want::older_than(&rel, 5, 6);
    }
    if f(CheckId::SkewTick) {
        want.extra.push("skew_tick=1".into());
    }
    if f(CheckId::TscReliable) {
        want.extra.push("tsc=reliable".into());
    }
    want.released = released_by_earlier_fixes(host, t);
    boot::plan(host, &want).map_err(|e| Error::failed(format!("kernel command line: {e}")))
}

/// The CPUs earlier fixes still in the journal isolated on the kernel command line for their RT core, which
/// the user's own parameters did not hold — less those isolated now.
fn released_by_earlier_fixes(host: &Host, t: &Target) -> Vec<usize> {
    let mut own = super::earlier::Earlier::load(host).cmdline_isolated();
    own.retain(|c| !t.isolated.contains(c));
    own
}

/// Keeps only the chosen steps; persistence is planned again for what remains.
pub(crate) fn select(host: &Host, req: &Request, plan: &Plan, chosen: &[StepId]) -> Plan {
    let mut steps: Vec<super::Step> = plan
        .steps
        .iter()
        .filter(|s| s.id != StepId::Persist && chosen.contains(&s.id))
        .cloned()
        .collect();
    let with_changes: Vec<StepId> = steps
        .iter()
        .filter(|s| !s.changes.is_empty())
        .map(|s| s.id)
        .collect();
    if let Some(p) = saved::persist_step(host, req.core, req.nic.as_deref(), &with_changes) {
        steps.push(p);
    }
    Plan { steps }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_is_planned_by_a_tunable_or_here() {
        // The captured Debian 12 RT guest (tests/fixtures/README.md), with its virtio NIC.
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/debian12-rt-qemu-untuned"
        );
        let host = Host::with_root(root);
        for id in StepId::ALL {
            let req = Request {
                core: 1,
                nic: Some("enp0s2".into()),
                steps: vec![id],
                failed: vec![],
            };
            let plan = build(&host, &req).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(plan.steps.iter().any(|s| s.id == id), "{id}: not planned");
        }
    }
}
