//! From failing checks (or --only) to a Plan: which steps, in remedy::ALL order, each planned against the
//! machine as it is. Reads, never writes.

use super::cmdline::Want;
use super::irq;
use super::runtime::{self, Target};
use super::{Plan, Step, boot, ethtool, saved};
use crate::checks::{Finding, Status, id};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::remedy;

/// What to plan for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub core: usize,
    pub nic: Option<String>,
    /// Step ids (crate::remedy), any order.
    pub steps: Vec<&'static str>,
    /// Ids of the checks that failed (they pick the kernel parameters).
    pub failed: Vec<&'static str>,
}

pub fn online_cpus(host: &Host) -> Result<Vec<usize>> {
    Ok(crate::checks::machine::online_cpus(host)?)
}

/// The steps named by failing checks, and the ids of those checks.
pub fn from_findings(findings: &[Finding]) -> (Vec<&'static str>, Vec<&'static str>) {
    let failed: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .collect();
    let steps = remedy::ALL
        .iter()
        .copied()
        .filter(|s| failed.iter().any(|f| f.remedy == Some(*s)))
        .collect();
    (steps, failed.iter().map(|f| f.id).collect())
}

/// --only: step ids, each one of crate::remedy::ALL.
pub fn parse_only(only: &[String]) -> Result<Vec<&'static str>> {
    only.iter()
        .map(|s| {
            remedy::ALL
                .iter()
                .copied()
                .find(|id| id == &s.trim())
                .ok_or_else(|| {
                    Error::usage(format!(
                        "--only: unknown step '{s}' (steps: {})",
                        remedy::ALL.join(", ")
                    ))
                })
        })
        .collect()
}

/// A step id this version has no planner for (every id of remedy::ALL has one today).
fn unsupported(id: &'static str) -> Step {
    Step {
        id,
        title: format!("{id} (not automated)"),
        why: "no change this version can make and undo safely".into(),
        changes: vec![],
        notes: vec!["see the check's detail".into()],
    }
}

pub fn build(host: &Host, req: &Request) -> Result<Plan> {
    let online = online_cpus(host)?;
    let t = Target {
        core: req.core,
        nic: req.nic.clone(),
        online: online.clone(),
    };
    let mut ids: Vec<&'static str> = req.steps.clone();
    // The IRQ deferral check names no remedy of its own: the RPS step zeroes those knobs too.
    if req.failed.contains(&id::NIC_IRQ_DEFER) && !ids.contains(&remedy::RPS) {
        ids.push(remedy::RPS);
    }
    // irqbalance would undo the IRQ affinity within seconds.
    if ids.contains(&remedy::IRQ_AFFINITY) && !ids.contains(&remedy::IRQBALANCE) {
        ids.push(remedy::IRQBALANCE);
    }
    let mut plan = Plan::default();
    for id in remedy::ALL.iter().copied().filter(|s| ids.contains(s)) {
        let step = match id {
            remedy::CMDLINE => {
                let f = |c: &str| req.failed.contains(&c);
                let isolation = [
                    id::CORE_ISOLATED,
                    id::NOHZ_FULL,
                    id::RCU_NOCBS,
                    id::IRQAFFINITY,
                    id::SMT_SIBLING,
                ];
                let any = isolation.iter().any(|c| f(c));
                let mut want = Want {
                    core: req.core,
                    online: online.clone(),
                    isolcpus: !any || f(id::CORE_ISOLATED) || f(id::SMT_SIBLING),
                    nohz_full: !any || f(id::NOHZ_FULL) || f(id::SMT_SIBLING),
                    rcu_nocbs: !any || f(id::RCU_NOCBS) || f(id::SMT_SIBLING),
                    irqaffinity: !any || f(id::IRQAFFINITY) || f(id::SMT_SIBLING),
                    ..Default::default()
                };
                if f(id::CSTATES) || f(id::IDLE_STATES) {
                    want.cstates = boot::cstate_caps(host);
                }
                if let Ok(rel) = crate::checks::machine::kernel_release(host) {
                    want.old_kernel = crate::fix::cmdline::older_than(&rel, 5, 6);
                }
                if f(id::SKEW_TICK) {
                    want.extra.push("skew_tick=1".into());
                }
                if f(id::TSC_RELIABLE) {
                    want.extra.push("tsc=reliable".into());
                }
                if f(id::SMT_SIBLING) {
                    want.siblings = boot::siblings(host, req.core);
                }
                boot::plan(host, &want)
                    .map_err(|e| Error::failed(format!("kernel command line: {e}")))?
            }
            remedy::GOVERNOR => runtime::governor(host, &t),
            remedy::TURBO => runtime::turbo(host),
            remedy::SYSCTL => runtime::sysctl(host, &t, &req.failed),
            remedy::THP => runtime::thp(host),
            remedy::WORKQUEUE => runtime::workqueue(host, &t),
            remedy::IRQBALANCE => irq::irqbalance(host, &t),
            remedy::IRQ_AFFINITY => irq::irq_affinity(host, &t),
            remedy::RPS => irq::rps(host, &t),
            remedy::NIC_COALESCE => ethtool::coalesce(host, &t),
            remedy::NIC_EEE => ethtool::eee(host, &t),
            other => unsupported(other),
        };
        plan.steps.push(step);
    }
    let with_changes: Vec<&str> = plan
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
pub fn select(host: &Host, req: &Request, plan: &Plan, chosen: &[&str]) -> Plan {
    let mut steps: Vec<Step> = plan
        .steps
        .iter()
        .filter(|s| s.id != saved::PERSIST && chosen.contains(&s.id))
        .cloned()
        .collect();
    let with_changes: Vec<&str> = steps
        .iter()
        .filter(|s| !s.changes.is_empty())
        .map(|s| s.id)
        .collect();
    if let Some(p) = saved::persist_step(host, req.core, req.nic.as_deref(), &with_changes) {
        steps.push(p);
    }
    Plan { steps }
}
