//! A run's result as saved and printed (`--json`, `--output`, results/…). Keys follow docs/json.md; the extra keys
//! (p9999_us, wakeup, early, missed, …) are additions, and every addition has a serde default so that results
//! written by an older version still load in `compare`.

use serde::{Deserialize, Serialize};

pub(crate) use super::spec::RunMode;

mod arrival;
mod build;
pub mod confidence;
pub mod dist;
pub(crate) mod hlog;
mod rtt;
pub mod store;

pub(crate) use arrival::{ArrivalCounts, ArrivalReport, Sync0Report};
pub(crate) use build::{Header, Measurement};
pub(crate) use rtt::RttSummary;
pub(crate) use rtt::{EscId, ReplyChecks, StampCounts, Timestamps, XdpMode, XdpReport};

/// pass: every sample Great and no frame lost; fail: the machine falls short; inconclusive: nothing fell short,
/// but the run was too short to call it a pass (exit 3); incomplete: the run could not finish its job (replies
/// stopped) — what was measured is reported, the exit status is 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Inconclusive,
    Incomplete,
}

/// A pass needs at least this many seconds of measurement…
pub(crate) const MIN_PASS_SECONDS: f64 = 10.0;
/// …and at least this many cycles: a rare stall (an SMI, a timer storm) hides in a shorter run.
pub(crate) const MIN_PASS_CYCLES: u64 = 10_000;

/// Counts per band (see `series::Bands`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct Buckets {
    pub(crate) great: u64,
    pub(crate) good: u64,
    pub(crate) poor: u64,
    pub(crate) bad: u64,
    pub(crate) pathetic: u64,
}

impl Buckets {
    pub(crate) fn as_array(&self) -> [u64; 5] {
        [self.great, self.good, self.poor, self.bad, self.pathetic]
    }
    pub(crate) fn total(&self) -> u64 {
        self.as_array().iter().sum()
    }
    pub(crate) fn not_great(&self) -> u64 {
        self.total() - self.great
    }
}

/// Summary of a distribution of times, in µs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct DistSummary {
    pub(crate) count: u64,
    pub(crate) min_us: f64,
    pub(crate) avg_us: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
    pub(crate) p9999_us: f64,
    pub(crate) max_us: f64,
    /// The full histogram (ns), HdrHistogram's compressed V2 encoding in base64 (see `dist::encode`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) hdr: String,
}

/// One row: a thread's periods. The deviation is (this wakeup − previous wakeup) − period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesSummary {
    pub(crate) label: String,
    /// Periods recorded.
    pub count: u64,
    /// Smallest signed deviation: negative when a period came early.
    pub(crate) min_us: f64,
    /// Largest absolute deviation, late or early (the original's "Max Latency").
    pub(crate) max_us: f64,
    /// Index (0-based, among recorded periods) of `max_us`.
    pub(crate) max_index: u64,
    /// Percentiles of the absolute deviation.
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
    #[serde(default)]
    pub(crate) p9999_us: f64,
    pub(crate) buckets: Buckets,
    #[serde(default)]
    pub(crate) min_period_us: f64,
    #[serde(default)]
    pub(crate) max_period_us: f64,
    /// Periods outside Great because they were too short (a late wakeup followed by a catch-up).
    #[serde(default)]
    pub(crate) early: u64,
    /// Periods skipped because the thread woke after the next deadline had passed.
    #[serde(default)]
    pub missed: u64,
    /// Wakeup latency (now − scheduled time, cyclictest's metric), for threads that sleep to a schedule.
    #[serde(default)]
    pub(crate) wakeup: Option<DistSummary>,
    /// The full histogram of the absolute deviation (ns), HdrHistogram's compressed V2 encoding in base64.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) hdr: String,
    /// The largest deviation of each interval over the run (the plots' "max per interval").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_per_interval: Option<MaxPerInterval>,
    /// The rate of cycles beyond each band boundary, with its 95 % bounds (confidence.rs). Recomputed
    /// from the bands wherever it is read, so results without it (older versions) show the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tail: Vec<confidence::TailRate>,
    /// `run --thread`: this series' own thread (period, band width, priority, CPU); absent, the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) thread: Option<ThreadInfo>,
}

/// The thread a series measured, when the run had several (`run --thread`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThreadInfo {
    pub(crate) period_us: u32,
    /// Its band width W, µs (its period / 8 unless --bucket-width-us).
    pub(crate) bucket_width_us: f64,
    pub(crate) priority: u8,
    pub(crate) cpu: usize,
}

/// Maxima per interval: `max_us[i]` is the largest deviation between i·interval_s and (i+1)·interval_s after the
/// start (or the last reset). At most 2048 points: long runs have longer intervals.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct MaxPerInterval {
    pub(crate) interval_s: f64,
    pub(crate) max_us: Vec<f64>,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub period_us: u32,
    pub duration_s: f64,
    pub mode: RunMode,
    pub series: Vec<SeriesSummary>,
    pub rtt: Option<RttSummary>,
    pub verdict: Verdict,
    /// Band width W in µs (period/8 unless --bucket-width-us).
    #[serde(default)]
    pub bucket_width_us: f64,
    /// UTC start time, RFC 3339.
    #[serde(default)]
    pub started: String,
    /// The label it was saved with: run, before, after.
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub core: Option<usize>,
    #[serde(default)]
    pub priority: Option<u8>,
    /// Kernel release (uname -r), so that a compare across a reboot shows what changed.
    #[serde(default)]
    pub kernel: String,
    /// Ended by q, Ctrl+C or SIGTERM rather than by --duration or --iterations.
    #[serde(default)]
    pub interrupted: bool,
    /// What ended an interrupted run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<StoppedBy>,
    /// /dev/cpu_dma_latency was held at 0 during the run.
    #[serde(default)]
    pub dma_latency_held: bool,
    /// Why the run could not finish (verdict incomplete), e.g. "replies stopped on eth1 after 2.1 s".
    #[serde(default)]
    pub error: Option<String>,
    /// A checkpoint written while the run went on (once a minute): the run did not end when this is what is left.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint: bool,
    /// When the statistics were last reset (`r` or SIGUSR1; RFC 3339, UTC): the counts start there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_at: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resets: u64,
    /// The machine and the invocation, for the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// The stress-ng load the run was measured under (`run --load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::measure::load::LoadInfo>,
    /// What ran on the RT core besides the loop (the counters, always on in the cyclic run).
    #[serde(default)]
    pub interference: Option<crate::measure::interference::report::Interference>,
    /// `--trace`: the late cycles explained from the kernel's trace.
    #[serde(default)]
    pub trace: Option<crate::trace::session::TraceReport>,
    /// `--until-confident`: the claim asked for and whether the run proved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    /// `-i N`: the cycles asked for — the periods each series spans, its `count` and `missed` together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// `run --profile`: its name (the threads are the series').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Under a LinuxCNC profile: each thread's max jitter in latency-test's terms and what LinuxCNC's Latency
    /// Test chapter concludes from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linuxcnc: Option<crate::measure::cyclic::profile::LinuxcncReading>,
    /// `run --hwlat`: the hardware latency detector's settings and gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hwlat: Option<super::hwlat::HwlatReport>,
}

/// "Fewer than `per_hour` cycles outside the Great band per hour, with 95 % confidence" — held when every series
/// proves it (none outside Great over long enough), broken by the first cycle outside.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub(crate) per_hour: f64,
    pub(crate) held: bool,
}

/// A cyclic result for tests (unit and integration): 1 s at 1000 µs, bands of 125 µs, verdict pass, everything
/// else empty; a test sets what it looks at with `..` over it.
impl RunResult {
    #[doc(hidden)]
    pub fn for_test(series: Vec<SeriesSummary>) -> Self {
        RunResult {
            period_us: 1000,
            duration_s: 1.0,
            mode: RunMode::Cyclic,
            series,
            rtt: None,
            verdict: Verdict::Pass,
            bucket_width_us: 125.0,
            started: String::new(),
            label: String::new(),
            core: None,
            priority: None,
            kernel: String::new(),
            interrupted: false,
            stopped_by: None,
            dma_latency_held: false,
            error: None,
            checkpoint: false,
            reset_at: None,
            resets: 0,
            identity: None,
            load: None,
            interference: None,
            trace: None,
            claim: None,
            iterations: None,
            profile: None,
            linuxcnc: None,
            hwlat: None,
        }
    }
}

/// Which machine measured, how it was asked, and what its configuration checks said before the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Identity {
    pub(crate) hostname: String,
    pub(crate) cpu: String,
    pub(crate) cpus: usize,
    /// /proc/cmdline.
    pub(crate) kernel_cmdline: String,
    /// rmp-eval's own command line.
    pub(crate) command: String,
    /// The board and its firmware (SMBIOS or device-tree model); absent in results of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) firmware: Option<crate::checks::firmware_id::Firmware>,
    /// The checks run before the measurement (none with --no-config): counts, and the ids that failed.
    #[serde(default)]
    pub(crate) checks: Option<CheckCounts>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct CheckCounts {
    pub(crate) pass: usize,
    pub(crate) fail: usize,
    pub(crate) unknown: usize,
    pub(crate) failed: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RunResult {
    /// The interference report's IPI rows name their senders, when the run's trace recorded them.
    pub(crate) fn name_ipi_senders(&mut self) {
        let senders = self.trace.as_ref().and_then(|t| t.ipi_senders.as_ref());
        if let (Some(i), Some(s)) = (&mut self.interference, senders) {
            i.name_senders(s);
        }
    }

    /// A pass from a run shorter than MIN_PASS_SECONDS or MIN_PASS_CYCLES becomes inconclusive; a failure
    /// found in a short run stays a failure.
    pub(crate) fn conclusive(mut self) -> Self {
        if self.verdict == Verdict::Pass && self.too_short() {
            self.verdict = Verdict::Inconclusive;
        }
        self
    }

    /// The band width W of series `s`, in µs.
    pub(crate) fn width_of(&self, s: &SeriesSummary) -> f64 {
        if let Some(t) = &s.thread {
            t.bucket_width_us
        } else if self.bucket_width_us > 0.0 {
            self.bucket_width_us
        } else {
            f64::from(self.period_us) / 8.0
        }
    }

    /// The period of series `s`, in µs.
    pub(crate) fn period_of(&self, s: &SeriesSummary) -> f64 {
        f64::from(s.thread.map_or(self.period_us, |t| t.period_us))
    }

    /// The rates beyond each band boundary of series `s`, from its bands: the same for a result saved without
    /// them.
    pub(crate) fn tail_rates(&self, s: &SeriesSummary) -> Vec<confidence::TailRate> {
        confidence::tail_rates(s.buckets.as_array(), self.width_of(s), self.period_of(s))
    }

    /// NIC mode: the rate of missed cycles (`RttSummary::missed`) over the run's frames × period, with its 95 %
    /// interval and bound; `beyond_us` is the reply budget. A round trip is in time (Great, for the wire) when its
    /// reply came back within the budget with the expected working counter; anything else is a missed cycle —
    /// there is no Good for a reply: one late by a microsecond costs the MainDevice its cycle as a lost one does.
    pub(crate) fn missed_round_trips(&self) -> Option<super::confidence::TailRate> {
        let r = self.rtt.as_ref()?;
        let exposure_s = r.frames() as f64 * f64::from(self.period_us) / 1e6;
        Some(super::confidence::TailRate::of(
            r.checks.budget_us,
            r.missed(),
            exposure_s,
        ))
    }

    /// Fills each series' `tail` (what the JSON carries) and, for `--until-confident RATE` (per second), the
    /// claim.
    pub(crate) fn with_tail_rates(mut self, until_confident: Option<f64>) -> Self {
        let rates: Vec<_> = self.series.iter().map(|s| self.tail_rates(s)).collect();
        self.claim = until_confident.map(|per_s| Claim {
            per_hour: per_s * confidence::HOUR_S,
            held: !rates.is_empty()
                && rates
                    .iter()
                    .all(|t| t.first().is_some_and(|g| g.proves_below(per_s))),
        });
        for (s, t) in self.series.iter_mut().zip(rates) {
            s.tail = t;
        }
        self
    }

    /// Fewer seconds or cycles than a pass needs.
    /// The detector has no cycles: its runs are judged by their seconds alone.
    pub(crate) fn too_short(&self) -> bool {
        if self.mode == RunMode::Hwlat {
            return self.duration_s < MIN_PASS_SECONDS;
        }
        self.duration_s < MIN_PASS_SECONDS || self.span_cycles() < MIN_PASS_CYCLES
    }

    /// The periods the run spanned: the cycles measured and the periods the loop skipped because it woke after
    /// their deadline (`missed`), of its longest series. A machine that misses a few periods of a 10 s run at
    /// 1 ms still spans 10 000 of them.
    pub(crate) fn span_cycles(&self) -> u64 {
        self.series
            .iter()
            .map(|s| s.count + s.missed)
            .max()
            .unwrap_or(0)
    }

    /// The whole seconds a run at this period needs for a pass: MIN_PASS_SECONDS, or MIN_PASS_CYCLES periods
    /// when they take longer.
    pub(crate) fn seconds_to_pass(&self) -> u64 {
        let cycles_s = MIN_PASS_CYCLES as f64 * f64::from(self.period_us) / 1e6;
        MIN_PASS_SECONDS.max(cycles_s).ceil() as u64
    }

    /// pass when every series is all Great and (NIC mode) every frame was sent and answered in time with the
    /// expected working counter.
    pub fn judge(series: &[SeriesSummary], rtt: Option<&RttSummary>) -> Verdict {
        let great = series.iter().all(|s| s.buckets.not_great() == 0);
        let frames_ok = rtt.is_none_or(|r| r.checks.shortfalls(r).is_empty());
        if great && frames_ok {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }
}

/// What stopped a run before its --duration or --iterations (the `stopped_by` key: "q", "sigint", "sigterm").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoppedBy {
    /// `q` typed in the live view.
    Q = 1,
    /// SIGINT: Ctrl+C on the terminal, or kill -INT.
    Sigint = 2,
    Sigterm = 3,
}

impl StoppedBy {
    /// How the verdict line says it.
    pub(crate) fn words(self) -> &'static str {
        match self {
            StoppedBy::Q => "stopped with q",
            StoppedBy::Sigint => "stopped by Ctrl+C (SIGINT)",
            StoppedBy::Sigterm => "stopped by SIGTERM",
        }
    }
}

#[cfg(test)]
mod tests {
    /// A saved result (an AF_XDP NIC run saved as fix's "before") reads back and writes out as the same JSON, keys
    /// and values: the enums in the result keep the strings the files hold.
    #[test]
    fn a_saved_result_keeps_its_json() {
        let text = include_str!("../../../tests/fixtures/results/nic-run-af-xdp-before.json");
        let saved: serde_json::Value = serde_json::from_str(text).unwrap();
        let r: super::RunResult = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), saved);
    }
}
