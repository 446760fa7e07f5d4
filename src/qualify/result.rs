//! The qualification result, built from the state once qualify is done: every measurement it made embedded
//! (report/qualification.rs), each step's effect as compare judges it against the state before it, each period's
//! pass or fail; written as JSON and HTML under /var/lib/rmp-eval/qualification/.

use std::path::{Path, PathBuf};

use super::state::{Qualify, StepOutcome};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::report::compare::compare;
use crate::report::qualification::{self as q11n, PeriodRow, Qualification, StepRow};

/// Where the results go, named by the time the plan was accepted.
pub(crate) const DIR: &str = "/var/lib/rmp-eval/qualification";

/// A measurement qualify saved; a file gone since is shown as not measured, not an error.
fn load(p: Option<&PathBuf>) -> Option<RunResult> {
    p.and_then(|p| crate::measure::result::store::load(p).ok())
}

fn step_row(q: &Qualify, i: usize) -> StepRow {
    let s = &q.steps[i];
    let (outcome, why) = match &s.outcome {
        None => ("not_reached", None),
        Some(StepOutcome::Kept { effect: None }) => ("applied", None),
        Some(StepOutcome::Kept { .. }) => ("kept", None),
        Some(StepOutcome::Reverted) => {
            ("reverted", Some("made the tail significantly worse".into()))
        }
        Some(StepOutcome::TrialFailed { why }) => ("trial_failed", Some(why.clone())),
        Some(StepOutcome::NotTried { why }) => ("not_tried", Some(why.clone())),
        Some(StepOutcome::MeasureFailed { why }) => ("measure_failed", Some(why.clone())),
    };
    let result = load(s.result.as_ref());
    let judged = match (&result, load(q.previous_result(i).as_ref())) {
        (Some(after), Some(before)) => Some(compare(&before, after, "before", s.step.as_str())),
        _ => None,
    };
    StepRow {
        step: s.step.to_string(),
        reboot: s.reboot,
        outcome: outcome.into(),
        why,
        trial_cmdline: s.trial_cmdline.clone(),
        effect: judged.as_ref().map(|c| c.verdict),
        compare_summary: judged.map(|c| c.summary),
        result,
    }
}

/// The result of a finished qualify.
pub(crate) fn build(q: &Qualify) -> Qualification {
    let periods: Vec<PeriodRow> = q
        .sweep
        .iter()
        .map(|p| match (&p.result, &p.failed) {
            (None, Some(why)) => PeriodRow::not_measured(p.period_us, Some(why)),
            _ => PeriodRow::of(p.period_us, load(p.result.as_ref())),
        })
        .collect();
    let smallest = periods
        .iter()
        .filter(|p| p.passed)
        .map(|p| p.period_us)
        .min();
    Qualification {
        kind: q11n::KIND.into(),
        version: q11n::VERSION,
        started: q.started.clone(),
        finished: crate::wallclock::rfc3339_now(),
        core: q.core,
        nic: q.nic.clone(),
        period_us: q.sweep_period(0),
        one_at_a_time: q.one_at_a_time,
        seconds: q.seconds,
        confidence_per_hour: q.confidence_per_hour,
        load: q.load.iter().map(|k| k.name().to_string()).collect(),
        budget_s: q.budget_s,
        baseline: load(q.baseline.as_ref()),
        steps: (0..q.steps.len()).map(|i| step_row(q, i)).collect(),
        verdict: q11n::verdict(&periods, q.nic.as_deref()),
        smallest_safe_period_us: smallest,
        periods,
        rests_on: match q.nic {
            Some(_) => q11n::RESTS_ON_ROUND_TRIPS,
            None => q11n::RESTS_ON_CYCLIC,
        }
        .into(),
    }
}

/// The result's JSON and HTML paths, named by the time the plan was accepted (so names sort in time).
fn paths(q: &Qualify) -> (String, String) {
    let stem: String = q
        .started
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    (format!("{DIR}/{stem}.json"), format!("{DIR}/{stem}.html"))
}

/// Whether the result of `q` is written (both files: the page is written last).
pub(crate) fn written(host: &Host, q: &Qualify) -> bool {
    let (json, html) = paths(q);
    host.exists(&json) && host.exists(&html)
}

/// Writes the result's JSON and HTML (atomically, fsynced); returns their real paths.
pub(crate) fn write(host: &Host, q: &Qualify) -> Result<(PathBuf, PathBuf)> {
    let r = build(q);
    let (json, html) = paths(q);
    let text = serde_json::to_vec_pretty(&r).map_err(|e| Error::failed(e.to_string()))?;
    host.create_dir_all(DIR)?;
    host.write_atomic(&json, &text, None)?;
    let page = crate::report::qualification_html::page(&r)?;
    host.write_atomic(&html, page.as_bytes(), None)?;
    Ok((host.path(&json), host.path(&html)))
}

/// The newest qualification result written (names are the UTC start, so they sort in time); None: none, or
/// not readable as one.
pub(crate) fn latest(host: &Host) -> Option<Qualification> {
    let names = host.list(DIR).ok()?;
    let newest = names.iter().filter(|n| n.ends_with(".json")).max()?;
    q11n::parse(&host.read_bytes(&format!("{DIR}/{newest}")).ok()?)
}

/// A file `report` or `compare` was given: a qualification result (Some) or not (None: read it as a run's).
pub(crate) fn read(path: &Path) -> Option<Qualification> {
    let bytes = crate::measure::result::store::read_bounded(path).ok()?;
    q11n::parse(&bytes)
}

/// A file's run result; of a qualification result, the measurement that stands for the qualified machine.
pub(crate) fn run_of(p: &Path) -> Result<RunResult> {
    match read(p) {
        Some(q) => q.tuned().cloned().ok_or_else(|| {
            Error::usage(format!(
                "{}: a qualification without any measurement",
                crate::parse::text::sanitize(&p.display().to_string(), 200)
            ))
        }),
        None => crate::measure::result::store::load(p),
    }
}
