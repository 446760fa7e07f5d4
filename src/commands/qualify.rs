//! `rmp-eval qualify`: the plan first (the steps it may apply, which are tried in a trial boot first, the
//! measurements and the time they take), one question (or --yes), then unattended to the end: the driver
//! (qualify/drive.rs) reboots into each trial boot and rmp-eval-qualify.service resumes it at the next boot
//! (`qualify --resume`). `--status` says where it is and what it has learned; `--abort` undoes what it applied
//! and stops it.

use std::io::Write;

use crate::cli::QualifyArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::journal;
use crate::fix::plan;
use crate::host::Host;
use crate::outln;
use crate::output::Output;
use crate::qualify::drive::{Drive, Stop};
use crate::qualify::state::{self, Phase, Qualify, QualifyEvent, StepOutcome};
use crate::remedy::StepId;
use crate::report::tail::span;

/// The unit that resumes qualify after each boot.
const UNIT: &str = "rmp-eval-qualify.service";

pub(crate) fn execute(
    host: &Host,
    out: Output,
    w: &mut dyn Write,
    args: &QualifyArgs,
) -> Result<Outcome> {
    if args.status {
        return status(host, w);
    }
    // The fix/rollback lock for the whole run: nothing else changes the machine under qualify.
    let _lock = journal::lock(host)?;
    let found = under_way(host)?;
    if args.abort
        || found
            .as_ref()
            .is_some_and(|q| matches!(q.phase, Phase::Aborted { .. }))
    {
        return abort(host, out, w, found.filter(|q| q.phase != Phase::Done));
    }
    let mut q = match (found, args.resume) {
        (Some(q), _) => {
            outln!(
                w,
                "qualify: resuming the run started {}: {}",
                q.started,
                q.phase.describe()
            );
            q
        }
        (None, true) => {
            outln!(w, "qualify: nothing under way");
            return Ok(Outcome::Good);
        }
        (None, false) => match plan_and_ask(host, w, args)? {
            Some(q) => q,
            None => return Ok(Outcome::Good),
        },
    };
    state::save(host, &q)?;
    let stop = Drive {
        host,
        out,
        w: &mut *w,
        from_unit: args.resume,
    }
    .run(&mut q)?;
    match stop {
        Stop::Reboot(argv) => reboot(host, w, &argv),
        Stop::Done => {
            summary(w, &q);
            let (json, html) = crate::qualify::result::write(host, &q)?;
            outln!(w, "qualify: {}", crate::qualify::result::build(&q).verdict);
            outln!(w, "Result: {}\nReport: {}", json.display(), html.display());
            Ok(Outcome::Good)
        }
        Stop::Aborted => Ok(Outcome::Good),
    }
}

/// The qualify to go on with: none when done (and reported) or aborted (and all undone).
fn under_way(host: &Host) -> Result<Option<Qualify>> {
    Ok(state::load(host)?.filter(|q| match q.phase {
        // Aborted, but cut short while undoing: the resume (or --abort again) undoes the rest.
        Phase::Aborted { .. } => abort_unfinished(host, q),
        // Done, but killed before its result was written: the resume writes it.
        Phase::Done => !crate::qualify::result::written(host, q),
        _ => true,
    }))
}

/// The plan: the steps the failing checks name (the command line first: its trial boot comes before the
/// measurements of the others), the periods, the time; then the one question.
fn plan_and_ask(host: &Host, w: &mut dyn Write, args: &QualifyArgs) -> Result<Option<Qualify>> {
    let core = args.core.ok_or_else(|| {
        Error::usage("qualify: --core N is needed to start (or --status, --abort)")
    })?;
    crate::qualify::check_step_seconds(args.one_at_a_time, args.seconds)?;
    crate::machine::validate_core(host, Some(core))?;
    if core == 0 {
        return Err(Error::usage(
            "--core 0 refused: CPU 0 carries the housekeeping",
        ));
    }
    let ctx = crate::checks::Ctx {
        core,
        nic: args.nic.clone(),
        pid: None,
        smi_seconds: None,
    };
    let (mut ids, _) = plan::from_findings(&crate::registry::run_all(host, &ctx));
    // The user's own parameters go on the command line even where the checks ask nothing of it.
    if !args.cmdline_extra.is_empty() && !ids.contains(&StepId::Cmdline) {
        ids.insert(0, StepId::Cmdline);
    }
    let steps: Vec<(StepId, bool)> = ids.iter().map(|&s| (s, s == StepId::Cmdline)).collect();
    let periods = periods(args);
    let mut q = Qualify::new(
        core,
        args.nic.clone(),
        &steps,
        &periods,
        args.one_at_a_time,
        args.seconds,
    );
    q.confidence_per_hour = args.confidence.map(|per_s| per_s * 3600.0);
    q.load = args.load.clone();
    q.budget_s = args.budget;
    q.cmdline_extra = args.cmdline_extra.clone();
    within_budget(&q)?;
    subdevice_answers(host, w, &q)?;
    show_plan(w, &q, crate::job::settle::seconds(host)?);
    if !args.yes {
        if !crate::sys::term::interactive() {
            return Err(Error::usage(
                "qualify: give --yes to start without a terminal",
            ));
        }
        let go = dialoguer::Confirm::new()
            .with_prompt("Start? (it reboots the machine by itself for each trial boot)")
            .default(false)
            .interact()
            .map_err(|e| Error::failed(format!("prompt: {e}")))?;
        if !go {
            return Ok(None);
        }
    }
    Ok(Some(q))
}

/// With --nic, every measurement is a round trip through it: a SubDevice that does not answer now stops qualify
/// before the plan is shown, with nothing changed (the run's own preflight, nothing measured).
fn subdevice_answers(host: &Host, w: &mut dyn Write, q: &Qualify) -> Result<()> {
    let spec = crate::qualify::drive::spec(q, q.sweep_period(0), None);
    let answered = crate::job::answers(host, &spec, &mut |n| eprintln!("rmp-eval: note: {n}"))
        .map_err(|e| Error::failed(format!("qualify: {e}; nothing was changed")))?;
    if let (Some(wkc), Some(nic)) = (answered, &q.nic) {
        outln!(
            w,
            "qualify: the SubDevice answers on {nic} (working counter {wkc})"
        );
    }
    Ok(())
}

/// A plan whose measurements may take longer than --budget is refused before anything is changed.
fn within_budget(q: &Qualify) -> Result<()> {
    match q.budget_s {
        Some(b) if q.planned_seconds() > b => Err(Error::usage(format!(
            "qualify: the plan's measurements may take {} ({:.0} s), more than --budget {} ({b:.0} s): give a \
             longer budget, a smaller --confidence claim, fewer --periods or shorter --seconds",
            span(q.planned_seconds()),
            q.planned_seconds().ceil(),
            span(b)
        ))),
        _ => Ok(()),
    }
}

/// The target period and 2×, 4×, 8× its rate, or --periods.
fn periods(args: &QualifyArgs) -> Vec<u32> {
    match &args.periods {
        Some(p) => p.clone(),
        None => [1, 2, 4, 8]
            .iter()
            .map(|d| args.period_us / d)
            .filter(|&p| p >= 50)
            .collect(),
    }
}

fn show_plan(w: &mut dyn Write, q: &Qualify, settle: f64) {
    outln!(w, "qualify: CPU {} as the RT core", q.core);
    let what = q.nic.as_ref().map_or(String::new(), |n| {
        format!("round trips through {n} to the SubDevice with the sender's cycles, ")
    });
    outln!(
        w,
        "  1. measure the machine as it is ({what}{} at {} µs)",
        span(q.seconds),
        q.sweep_period(0)
    );
    for (i, s) in q.steps.iter().enumerate() {
        let how = if s.reboot {
            "tried in a trial boot first (the default boot entry untouched), kept only if that boot comes up \
             healthy; a reboot"
        } else {
            "applied now"
        };
        let measured = if q.one_at_a_time {
            ", then measured and compared"
        } else {
            ""
        };
        let extra = if s.step == StepId::Cmdline && !q.cmdline_extra.is_empty() {
            format!(" (with your {})", q.cmdline_extra.join(" "))
        } else {
            String::new()
        };
        outln!(w, "  {}. step {}{extra}: {how}{measured}", i + 2, s.step);
    }
    show_sweep(w, q);
    let reboots = q.steps.iter().filter(|s| s.reboot).count();
    let budget = q
        .budget_s
        .map_or(String::new(), |b| format!(" (--budget {})", span(b)));
    outln!(
        w,
        "  at most {} of measurement{budget} and {reboots} reboot(s); `rmp-eval rollback` undoes every change",
        span(q.planned_seconds())
    );
    if settle > 0.0 {
        outln!(
            w,
            "  each measurement starts once the machine has been up {} (a boot still settling is not measured)",
            span(settle)
        );
    }
}

/// The sweep's line: its periods, how long each runs (the claim it is to prove), the load.
fn show_sweep(w: &mut dyn Write, q: &Qualify) {
    let periods: Vec<String> = q
        .sweep
        .iter()
        .map(|s| format!("{} µs", s.period_us))
        .collect();
    let each = match q.confidence_per_hour {
        Some(per_h) => format!(
            "each until it proves, at 95 %, a rate of cycles outside Great below {}: up to {} each, or until the first \
             such cycle",
            crate::report::tail::rate(per_h),
            span(
                (0..q.sweep.len())
                    .map(|i| q.sweep_seconds(i))
                    .fold(0.0, f64::max)
            )
        ),
        None => format!("{} each", span(q.seconds)),
    };
    outln!(
        w,
        "  {}. cycle-time sweep: {} ({each})",
        q.steps.len() + 2,
        periods.join(", ")
    );
    if !q.load.is_empty() {
        let kinds: Vec<&str> = q.load.iter().map(|k| k.name()).collect();
        outln!(
            w,
            "  every measurement under load: stress-ng {} on the housekeeping CPUs",
            kinds.join(", ")
        );
    }
}

fn reboot(host: &Host, w: &mut dyn Write, argv: &[String]) -> Result<Outcome> {
    let line = argv.join(" ");
    let unit = host.exists(&format!("/lib/systemd/system/{UNIT}"));
    match host.kernel() {
        Some(k) if unit => {
            outln!(
                w,
                "qualify: rebooting ({line}); {UNIT} resumes after the boot"
            );
            crate::fix::kind::command::run_reboot(k, argv)?;
        }
        _ => outln!(
            w,
            "qualify: reboot now ({line}), then run `rmp-eval qualify --resume` once the machine is up \
             (no {UNIT} here to do it)"
        ),
    }
    Ok(Outcome::Good)
}

fn status(host: &Host, w: &mut dyn Write) -> Result<Outcome> {
    let Some(q) = state::load(host)? else {
        outln!(w, "qualify: nothing under way");
        return Ok(Outcome::Good);
    };
    outln!(
        w,
        "qualify started {} on CPU {}: {}",
        q.started,
        q.core,
        q.phase.describe()
    );
    summary(w, &q);
    Ok(Outcome::Good)
}

/// What qualify has learned: each step's outcome, each period's result.
fn summary(w: &mut dyn Write, q: &Qualify) {
    if let Some(b) = &q.baseline {
        outln!(w, "  baseline: {}", b.display());
    }
    for s in &q.steps {
        let what = match &s.outcome {
            None => "not yet".to_string(),
            Some(StepOutcome::Kept { effect: None }) => "applied".into(),
            Some(StepOutcome::Kept { effect: Some(e) }) => format!("kept ({e:?})"),
            Some(StepOutcome::Reverted) => "reverted: made the tail significantly worse".into(),
            Some(StepOutcome::TrialFailed { why }) => format!("trial boot failed, left out: {why}"),
            Some(StepOutcome::NotTried { why }) => format!("not applied: {why}"),
            Some(StepOutcome::MeasureFailed { why }) => format!("not measured, undone: {why}"),
        };
        outln!(w, "  {}: {what}", s.step);
    }
    for p in &q.sweep {
        let r = match (&p.result, &p.failed) {
            (Some(r), _) => r.display().to_string(),
            (None, Some(why)) => format!("not measured: {why}"),
            (None, None) => "not yet".into(),
        };
        outln!(w, "  {} µs: {r}", p.period_us);
    }
}

fn abort(host: &Host, out: Output, w: &mut dyn Write, found: Option<Qualify>) -> Result<Outcome> {
    let Some(mut q) = found else {
        outln!(w, "qualify: nothing under way");
        return Ok(Outcome::Good);
    };
    let runs: Vec<String> = q.journals().map(String::from).collect();
    // Recorded first: a power cut while undoing leaves "aborted" with runs still in force, which the next
    // resume undoes, never a qualify that goes on measuring with its changes half undone.
    if !matches!(q.phase, Phase::Aborted { .. }) {
        state::advance(
            host,
            &mut q,
            QualifyEvent::Abort {
                why: "qualify --abort".into(),
            },
        )?;
    }
    let mut d = Drive {
        host,
        out,
        w: &mut *w,
        from_unit: false,
    };
    for r in runs.iter().rev() {
        d.undo(r)?;
    }
    outln!(
        w,
        "qualify: aborted; what it applied is undone ({} journal run(s))",
        runs.len()
    );
    Ok(Outcome::Good)
}

/// Whether an abort was cut short: a journal run it was to undo is still there.
fn abort_unfinished(host: &Host, q: &Qualify) -> bool {
    let there: Vec<String> = crate::fix::trial::runs(host)
        .map(|r| r.into_iter().map(|(p, _)| p).collect())
        .unwrap_or_default();
    q.journals().any(|j| there.iter().any(|p| p == j))
}
