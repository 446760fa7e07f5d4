//! One builder for a run's result — the cyclic run's and the NIC run's, at a checkpoint and at the end: what the
//! settings say, what was measured, and what the session recorded.

use super::{RttSummary, RunResult, SeriesSummary, Verdict};
use crate::measure::session::Ended;
use crate::measure::spec::{Placement, RunMode, RunSpec};

/// What every result of a run carries from its settings: the same at each checkpoint and at the end.
pub(crate) struct Header<'a> {
    pub(crate) spec: &'a RunSpec,
    pub(crate) at: Placement,
    /// run, before, after.
    pub(crate) label: &'a str,
    pub(crate) mode: RunMode,
    /// The series' band width W, in µs.
    pub(crate) width_us: f64,
}

/// What was measured, over how long.
pub(crate) struct Measurement {
    pub(crate) series: Vec<SeriesSummary>,
    pub(crate) rtt: Option<RttSummary>,
    pub(crate) duration_s: f64,
    /// Why the run could not finish its job; the verdict is then incomplete.
    pub(crate) error: Option<String>,
}

impl Measurement {
    /// What cyclic loops measured (no round trips): nothing at all (stopped before a whole period) leaves the run
    /// incomplete.
    pub(crate) fn of_loops(series: Vec<SeriesSummary>, duration_s: f64) -> Self {
        let empty = series.iter().all(|x| x.count == 0);
        Measurement {
            series,
            rtt: None,
            duration_s,
            error: empty.then(|| "stopped before a whole period was measured".to_string()),
        }
    }
}

impl Header<'_> {
    /// The result of `m` with what the session recorded (`s`); the caller adds what only it has (interference,
    /// trace). A checkpoint is marked so by `Session::supervise`.
    pub(crate) fn result(&self, m: Measurement, s: &Ended) -> RunResult {
        let verdict = match m.error {
            Some(_) => Verdict::Incomplete,
            None => RunResult::judge(&m.series, m.rtt.as_ref()),
        };
        RunResult {
            period_us: self.spec.period_us,
            // After a reset, the span the series cover: from the reset on.
            duration_s: s
                .since_reset_s
                .map_or(m.duration_s, |d| d.min(m.duration_s)),
            mode: self.mode,
            verdict,
            series: m.series,
            rtt: m.rtt,
            bucket_width_us: self.width_us,
            started: s.started.clone(),
            label: self.label.to_string(),
            core: Some(self.at.core),
            priority: Some(self.spec.send_priority),
            kernel: crate::measure::measured_kernel(),
            interrupted: s.interrupted,
            stopped_by: s.stopped_by.filter(|_| s.interrupted),
            dma_latency_held: s.dma_latency_held,
            error: m.error,
            checkpoint: false,
            reset_at: s.reset_at.clone(),
            resets: s.resets,
            identity: None,
            load: None,
            interference: None,
            trace: None,
            claim: None,
            iterations: self.spec.iterations,
            profile: None,
            linuxcnc: None,
            hwlat: None,
        }
        .with_tail_rates(self.spec.until_confident)
    }
}
