//! From failing checks (or --only) to a Plan: which steps, in remedy::ALL order, each planned against the
//! machine as it is. Reads, never writes.

use super::runtime::Target;
use super::{Plan, StepId, saved};
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
    /// The user's own kernel parameters for the command-line step (validated by the caller).
    pub cmdline_extra: Vec<String>,
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

/// fix's request on `core` (and `nic`): the steps the failing checks name, or the `only` ones asked for; the
/// failing checks pick the kernel parameters either way.
pub(crate) fn request(
    host: &Host,
    core: usize,
    nic: Option<String>,
    only: Option<&[String]>,
) -> Result<Request> {
    let ctx = crate::checks::Ctx {
        core,
        nic: nic.clone(),
        pid: None,
        smi_seconds: None,
    };
    let (mut steps, failed) = from_findings(&crate::registry::run_all(host, &ctx));
    if let Some(only) = only {
        steps = parse_only(only)?;
    }
    Ok(Request {
        core,
        nic,
        steps,
        failed,
        cmdline_extra: vec![],
    })
}

pub fn build(host: &Host, req: &Request) -> Result<Plan> {
    let online = online_cpus(host)?;
    let mut t = Target::new(host, req.core, req.nic.clone(), online);
    t.cmdline_extra = req.cmdline_extra.clone();
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
        // Every step of StepId::ALL is a tunable (tests/layering.rs); Persist is planned below.
        let Some(tunable) = crate::registry::tunable(id) else {
            continue;
        };
        let mut step = (tunable.plan)(host, &t, &req.failed)?;
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
        // Captured machines (tests/fixtures/README.md) with their NICs: the Debian 12 RT guest (virtio), a
        // desktop i7 with SMT, the seed's i3-13100TE (igc, with its snapshot's ethtool readings).
        let roots = [
            ("debian12-rt-qemu-untuned", "enp0s2"),
            ("desktop-i7-smt-untuned", "enp3s0"),
            ("seed-i3-13100te", "enp2s0"),
        ];
        // What none of the captures needs: no systemd and cgroup v2 partition support in their trees, no cpufreq
        // governor other than performance, ksmd stopped, RPS masks zero. Every other step must change something
        // on at least one of them: a step that plans nothing on three untuned machines plans nothing anywhere.
        let nothing_to_do = [StepId::Cpuset, StepId::Governor, StepId::Ksm, StepId::Rps];
        for id in StepId::ALL {
            let mut changes = 0;
            for (root, nic) in roots {
                let host = Host::with_root(format!(
                    "{}/tests/fixtures/{root}",
                    env!("CARGO_MANIFEST_DIR")
                ));
                let req = Request {
                    core: 1,
                    nic: Some(nic.into()),
                    steps: vec![id],
                    failed: vec![],
                    cmdline_extra: vec![],
                };
                let plan = build(&host, &req).unwrap_or_else(|e| panic!("{id} on {root}: {e}"));
                let step = plan.steps.iter().find(|s| s.id == id);
                let step = step.unwrap_or_else(|| panic!("{id} on {root}: not planned"));
                changes += step.changes.len();
            }
            assert_eq!(
                changes == 0,
                nothing_to_do.contains(&id),
                "{id}: {changes} changes on the captured machines"
            );
        }
    }
}
