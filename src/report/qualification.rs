//! The qualification result: what `qualify` ends with, one self-contained JSON file (every measurement it made
//! is embedded, so the file can be mailed to a customer) and its HTML page. Built by qualify from its state; here
//! only what is read from the measurements: each period's pass or fail with the rate of cycles outside the Great
//! band and its 95 % interval, and the one answer.

use serde::{Deserialize, Serialize};

use super::compare::Trend;
use super::tail::{rate, span};
use crate::measure::result::confidence::{HOUR_S, TailRate};
use crate::measure::result::{Claim, RunResult, Verdict};

/// The `kind` every qualification result carries: how `report` and `compare` tell it from a run's result.
pub(crate) const KIND: &str = "rmp-eval qualification";
pub(crate) const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Qualification {
    pub(crate) kind: String,
    pub(crate) version: u32,
    /// UTC: when the plan was accepted, when the result was written.
    pub(crate) started: String,
    pub(crate) finished: String,
    pub(crate) core: usize,
    pub(crate) nic: Option<String>,
    /// The target cycle time (the sweep's first period).
    pub(crate) period_us: u32,
    pub(crate) one_at_a_time: bool,
    /// Seconds of the baseline and of each step's measurement.
    pub(crate) seconds: f64,
    /// `--confidence`: the claim each period was measured for, cycles outside Great per hour.
    pub(crate) confidence_per_hour: Option<f64>,
    /// `--load`: the stress-ng loads every measurement ran under.
    pub(crate) load: Vec<String>,
    pub(crate) budget_s: Option<f64>,
    /// The machine as it was found.
    pub(crate) baseline: Option<RunResult>,
    pub(crate) steps: Vec<StepRow>,
    pub(crate) periods: Vec<PeriodRow>,
    /// The smallest period that passed (None: none did).
    pub(crate) smallest_safe_period_us: Option<u32>,
    /// The one answer, in words.
    pub(crate) verdict: String,
}

/// One step of the plan and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StepRow {
    pub(crate) step: String,
    /// A kernel command-line change: booted once in a trial boot before it was kept.
    pub(crate) reboot: bool,
    /// applied (not measured alone), kept, reverted, trial_failed, not_tried.
    pub(crate) outcome: String,
    pub(crate) why: Option<String>,
    /// The command line its trial boot was to have.
    pub(crate) trial_cmdline: Option<String>,
    /// compare's verdict against the state before the step, by its noise rule (one at a time).
    pub(crate) effect: Option<Trend>,
    pub(crate) compare_summary: Option<String>,
    /// The measurement with the step in place (one at a time).
    pub(crate) result: Option<RunResult>,
}

/// One period of the cycle-time sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PeriodRow {
    pub(crate) period_us: u32,
    /// Every cycle Great over a run long enough to judge (and the --confidence claim, if asked, proved).
    pub(crate) passed: bool,
    /// The run's cycles at or beyond the Great boundary: count, exposure, rate, 95 % interval and bound.
    pub(crate) outside_great: Option<TailRate>,
    pub(crate) claim: Option<Claim>,
    /// What the run proved, in one sentence.
    pub(crate) statement: String,
    pub(crate) result: Option<RunResult>,
}

impl PeriodRow {
    /// The row of period `period_us` from its measurement (None: not measured).
    pub(crate) fn of(period_us: u32, result: Option<RunResult>) -> PeriodRow {
        let Some(r) = result else {
            return PeriodRow {
                period_us,
                passed: false,
                outside_great: None,
                claim: None,
                statement: format!("{period_us} µs: not measured"),
                result: None,
            };
        };
        let outside = r
            .series
            .first()
            .and_then(|s| r.tail_rates(s).first().cloned());
        let passed = r.verdict == Verdict::Pass && r.claim.is_none_or(|c| c.held);
        let statement = outside.as_ref().map_or_else(
            || format!("{period_us} µs: no series measured"),
            |t| super::tail::sentence(&format!("{period_us} µs"), t),
        );
        PeriodRow {
            period_us,
            passed,
            outside_great: outside,
            claim: r.claim,
            statement,
            result: Some(r),
        }
    }
}

/// The one answer from the sweep: "Great at 1000 µs and 500 µs with fewer than one cycle outside Great per 3.3 h
/// (95 %); at 250 µs: 3 cycles outside Great in 20.0 min".
pub(crate) fn verdict(periods: &[PeriodRow]) -> String {
    let passed: Vec<&PeriodRow> = periods.iter().filter(|p| p.passed).collect();
    let mut parts = Vec::new();
    if !passed.is_empty() {
        let list: Vec<String> = passed
            .iter()
            .map(|p| format!("{} µs", p.period_us))
            .collect();
        // The weakest bound of them holds for all.
        let bound = passed
            .iter()
            .filter_map(|p| p.outside_great.as_ref())
            .map(|t| t.per_hour_at_most)
            .fold(0.0, f64::max);
        parts.push(format!(
            "Great at {} with fewer than one cycle outside Great per {} (95 %)",
            list.join(" and "),
            span(HOUR_S / bound)
        ));
    }
    for p in periods.iter().filter(|p| !p.passed) {
        let what = match &p.outside_great {
            Some(t) if t.cycles > 0 => format!(
                "{} cycle(s) outside Great in {} ({}, 95 %: {} – {})",
                t.cycles,
                span(t.exposure_s),
                rate(t.per_hour),
                rate(t.per_hour_low),
                rate(t.per_hour_high)
            ),
            Some(t) => format!(
                "none outside Great in {}, too short to judge",
                span(t.exposure_s)
            ),
            None => "not measured".into(),
        };
        parts.push(format!("at {} µs: {what}", p.period_us));
    }
    match (parts.is_empty(), passed.is_empty()) {
        (true, _) => "No cycle time was measured.".into(),
        (false, true) => format!(
            "Not qualified at any period measured: {}.",
            parts.join("; ")
        ),
        (false, false) => format!("{}.", parts.join("; ")),
    }
}

impl Qualification {
    /// The measurement that stands for the qualified machine (compare, report overlays): the target period's,
    /// else the last one made.
    pub(crate) fn tuned(&self) -> Option<&RunResult> {
        self.periods
            .iter()
            .find_map(|p| p.result.as_ref())
            .or_else(|| self.steps.iter().rev().find_map(|s| s.result.as_ref()))
            .or(self.baseline.as_ref())
    }
}

/// A qualification result from a file's bytes; None when they are not one (a run's result, say).
pub(crate) fn parse(bytes: &[u8]) -> Option<Qualification> {
    #[derive(Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    let k: Kind = serde_json::from_slice(bytes).ok()?;
    if k.kind.as_deref() != Some(KIND) {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::result::SeriesSummary;

    fn run(period_us: u32, great: u64, outside: u64, verdict: Verdict) -> RunResult {
        let s: SeriesSummary = serde_json::from_value(serde_json::json!({
            "label": "Cyclic", "count": great + outside, "min_us": 0.0, "max_us": 0.0, "max_index": 0,
            "p50_us": 0.0, "p99_us": 0.0, "p999_us": 0.0, "p9999_us": 0.0,
            "buckets": {"great": great, "good": outside, "poor": 0, "bad": 0, "pathetic": 0},
            "min_period_us": 0.0, "max_period_us": 0.0, "early": 0, "missed": 0, "hdr": "",
        }))
        .unwrap();
        RunResult {
            period_us,
            bucket_width_us: f64::from(period_us) / 8.0,
            verdict,
            ..RunResult::for_test(vec![s])
        }
    }

    #[test]
    fn the_answer_names_the_periods_that_passed_with_their_bound_and_the_cycles_of_the_others() {
        // 600 s at 1000 µs with none outside: fewer than one per 3.3 min; 250 µs: 3 outside in 60 s.
        let rows = [
            PeriodRow::of(1000, Some(run(1000, 600_000, 0, Verdict::Pass))),
            PeriodRow::of(250, Some(run(250, 239_997, 3, Verdict::Fail))),
        ];
        assert!(rows[0].passed && !rows[1].passed);
        assert_eq!(rows[1].outside_great.as_ref().unwrap().cycles, 3);
        let v = verdict(&rows);
        assert!(
            v.starts_with("Great at 1000 µs with fewer than one cycle outside Great per 3.3 min (95 %); at 250 µs: 3 cycle(s) outside Great in 1.0 min"),
            "{v}"
        );
        let none = [PeriodRow::of(500, Some(run(500, 100, 2, Verdict::Fail)))];
        assert!(verdict(&none).starts_with("Not qualified at any period measured"));
    }

    #[test]
    fn only_a_qualification_is_parsed_as_one() {
        assert!(parse(br#"{"period_us":1000}"#).is_none());
        assert!(parse(br#"{"kind":"rmp-eval qualification"}"#).is_none());
        assert!(parse(b"not json").is_none());
    }
}
