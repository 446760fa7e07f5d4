//! `rmp-eval check`: every configuration check, as text or JSON. Reads files only (through Host): no subprocess,
//! no change to the machine. Exit status: 0 all good, 1 a check failed, 4 only warnings (what a newer kernel or
//! other hardware would change), 5 nothing failed but a change fix made waits for a reboot; 2 bad input.

use crate::checks::machine_id::describe;
use crate::checks::{self, Ctx, Finding, Status};
use crate::cli::CheckArgs;
use crate::error::{Outcome, Result};
use crate::fix::{journal, plan};
use crate::host::Host;
use crate::machine;
use crate::output::Output;
use crate::remedy;
use crate::report::check as report;
use crate::report::prometheus;

/// Validates the arguments against the machine and builds the check context.
pub(crate) fn context(host: &Host, core: Option<usize>, nic_name: Option<&str>) -> Result<Ctx> {
    if let Some(n) = nic_name {
        checks::nic::require(host, n)?;
    }
    let core = machine::validate_core(host, core)?;
    Ok(Ctx {
        core,
        nic: nic_name.map(str::to_string),
        pid: None,
    })
}

/// The process `--pid` or `--process` names, checked to exist.
fn audited_pid(host: &Host, pid: Option<u32>, name: Option<&str>) -> Result<Option<u32>> {
    match (pid, name) {
        (Some(p), _) if !host.is_dir(&format!("{}/{p}/task", machine::PROC)) => Err(
            crate::error::Error::usage(format!("--pid {p}: no such process")),
        ),
        (Some(p), _) => Ok(Some(p)),
        (None, Some(n)) => checks::process_threads::find(host, n).map(Some),
        (None, None) => Ok(None),
    }
}

pub(crate) fn execute(host: &Host, out: Output, args: &CheckArgs) -> Result<Outcome> {
    let mut ctx = context(host, args.core, args.nic.as_deref())?;
    machine::require_cpu_dir(host, ctx.core)?;
    ctx.pid = audited_pid(host, args.pid, args.process.as_deref())?;
    let dest = args
        .prometheus
        .as_deref()
        .map(std::path::Path::new)
        .map(|d| prometheus::Dest::resolve(host, d))
        .transpose()?;
    let findings = findings(host, &ctx);
    if let Some(d) = &dest {
        prometheus::export_check(
            d,
            &crate::checks::machine_id::kernel_info(host),
            &findings,
            crate::measure::store::unix_now(),
        )?;
    }
    if args.json {
        crate::outln!(
            "{}",
            report::render_json(&describe(host, &ctx), &ctx, &findings)
        );
    } else {
        crate::out!(
            "{}",
            report::render_text(&describe(host, &ctx), &ctx, &findings, out)
        );
    }
    Ok(outcome(&findings))
}

/// The exit status of a set of findings: a failure first, then a reboot that is due, then warnings.
pub(crate) fn outcome(findings: &[Finding]) -> Outcome {
    let any = |s: Status| findings.iter().any(|f| f.status == s);
    if any(Status::Fail) {
        Outcome::ShortFall
    } else if any(Status::Pending) {
        Outcome::RebootPending
    } else if any(Status::Warn) {
        Outcome::Warnings
    } else {
        Outcome::Good
    }
}

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
fn pending_reboot(host: &Host) -> Vec<remedy::StepId> {
    let Some(boot) = boot_time(host) else {
        return vec![];
    };
    let booted = crate::wallclock::rfc3339(boot);
    let runs = journal::load_all(host).unwrap_or_default();
    // Only the kernel command line waits for a reboot; runtime steps act at once.
    [remedy::CMDLINE]
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

/// When the running kernel booted: /proc/stat's btime (seconds since the epoch).
fn boot_time(host: &Host) -> Option<u64> {
    let stat = host.read("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}
