//! The checks' findings as fix sees them: a failing check names its fix step only where that step would change
//! something now (fix's own planner, read-only, is asked); a step an earlier fix already set for the next boot
//! makes the finding `pending`; otherwise the finding says what to do by hand. `check`, `run`'s header and
//! `fix` itself report these.

use super::{journal, plan};
use crate::checks::{Ctx, Finding, Status};
use crate::host::Host;
use crate::remedy::StepId;

/// Every check's finding, with the fix step named only where that step would change something now: fix's own
/// planner (read-only) is asked. A step that has nothing left to change because an earlier fix set what takes
/// effect at boot makes the finding `pending`; otherwise the finding says what to do by hand.
pub(crate) fn findings(host: &Host, ctx: &Ctx) -> Vec<Finding> {
    let mut findings = crate::registry::run_all(host, ctx);
    reconcile(host, ctx, &mut findings);
    findings
}

fn reconcile(host: &Host, ctx: &Ctx, findings: &mut [Finding]) {
    if ctx.core == 0 {
        for f in findings.iter_mut().filter(|f| f.remedy.is_some()) {
            f.no_remedy(
                "fix does not tune CPU 0 (it carries the boot-time housekeeping): choose the RT core with --core N",
            );
        }
        return;
    }
    let (steps, failed) = plan::from_findings(findings);
    if steps.is_empty() {
        return;
    }
    let req = plan::Request {
        core: ctx.core,
        nic: ctx.nic.clone(),
        steps,
        failed,
        cmdline_extra: vec![],
    };
    let planned = match plan::build(host, &req) {
        Ok(p) => p,
        Err(e) => {
            for f in findings.iter_mut().filter(|f| f.remedy.is_some()) {
                f.no_remedy(format!("fix cannot plan this here: {e}"));
            }
            return;
        }
    };
    let pending = pending_reboot(host);
    for f in findings.iter_mut() {
        let Some(r) = f.remedy else { continue };
        let step = planned.steps.iter().find(|s| s.id == r);
        if step.is_some_and(|s| !s.changes.is_empty()) {
            continue;
        }
        if pending.contains(&r) {
            f.status = Status::Pending;
            f.remedy = None;
            f.detail
                .push_str(" (fix set it; takes effect at the next reboot)");
            continue;
        }
        // The step's own note says why (no boot loader, no cpufreq control…); else the check's advice.
        let what = match (
            step.and_then(|s| s.notes.first()),
            crate::registry::find(f.id),
        ) {
            (Some(note), _) => format!(
                "fix's {r} step cannot change this: {}",
                match note {
                    crate::fix::Note::ByHand(h) => h.clone(),
                    n => n.to_string(),
                }
            ),
            (None, Some(c)) if c.by_hand.is_some() => c.by_hand.unwrap_or_default().to_string(),
            (None, _) => format!("fix's {r} step finds nothing to change; see the detail"),
        };
        f.no_remedy(what);
    }
}

/// Fix steps whose changes take effect at boot and that a fix since the last boot applied (fix's journal, read
/// through Host): their checks still see the old boot.
fn pending_reboot(host: &Host) -> Vec<StepId> {
    let Some(boot) = crate::machine::boot_time(host) else {
        return vec![];
    };
    let booted = crate::wallclock::rfc3339(boot);
    let runs = journal::load_all(host).unwrap_or_default();
    // Only the kernel command line waits for a reboot; runtime steps act at once.
    [StepId::Cmdline]
        .into_iter()
        .filter(|step| {
            runs.iter().any(|(_, run)| {
                run.complete
                    && run.created >= booted
                    && run.steps.iter().any(|s| s == step.as_str())
            })
        })
        .collect()
}
