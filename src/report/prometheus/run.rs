//! rmp_eval_run.prom: the last run's gauges, and the counters and histograms accumulated over runs (`Totals`,
//! kept in the state file beside the textfiles).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Text;
use crate::measure::result::dist;
use crate::measure::result::{RunResult, Verdict};

/// The bounds (µs) of the exported histograms: around the thresholds people use (LinuxCNC's 15–50 µs, RMP's
/// 125 µs at 1 kHz, 1 ms unsuitable).
pub const LE_US: [f64; 14] = [
    5.0, 10.0, 15.0, 20.0, 30.0, 50.0, 75.0, 100.0, 125.0, 250.0, 500.0, 1000.0, 2000.0, 10000.0,
];

/// Values ≤ each bound of `LE_US`, from a result's stored histogram (HdrHistogram, ns; within its 0.1 %
/// resolution). None when the result has no histogram (saved by an older version).
pub fn le_counts(hdr: &str) -> Option<Vec<u64>> {
    let h = dist::decode(hdr).ok()?;
    Some(
        LE_US
            .iter()
            .map(|le| h.count_between(0, (le * 1000.0) as u64))
            .collect(),
    )
}

/// A cumulative histogram at `LE_US` (in µs) with its count and sum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hist {
    pub(crate) le: Vec<u64>,
    pub(crate) count: u64,
    pub(crate) sum_us: f64,
}

impl Hist {
    fn add(&mut self, le: &[u64], count: u64, sum_us: f64) {
        self.le.resize(LE_US.len(), 0);
        for (a, b) in self.le.iter_mut().zip(le) {
            *a += b;
        }
        self.count += count;
        self.sum_us += sum_us;
    }

    fn write(&self, t: &mut Text, name: &str, labels: &[(&str, &str)]) {
        let bucket = format!("{name}_bucket");
        for (i, le) in LE_US.iter().enumerate() {
            let b = format!("{}", le / 1e6);
            let mut l = labels.to_vec();
            l.push(("le", &b));
            t.sample(&bucket, &l, self.le.get(i).copied().unwrap_or(0) as f64);
        }
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        t.sample(&bucket, &l, self.count as f64);
        t.sample(&format!("{name}_sum"), labels, self.sum_us / 1e6);
        t.sample(&format!("{name}_count"), labels, self.count as f64);
    }
}

/// What the counters and histograms have accumulated since the state file was created.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Totals {
    pub(crate) runs: u64,
    /// Per series label.
    pub(crate) late_cycles: BTreeMap<String, u64>,
    pub(crate) wakeup: BTreeMap<String, Hist>,
    pub(crate) rtt: Hist,
    pub(crate) lost_frames: u64,
    pub(crate) wkc_errors: u64,
    /// Drifted values the monitor wrote again.
    #[serde(default)]
    pub(crate) reapplied: u64,
}

impl Totals {
    pub(crate) fn add(&mut self, r: &RunResult) {
        self.runs += 1;
        for s in &r.series {
            *self.late_cycles.entry(s.label.clone()).or_default() +=
                s.buckets.not_great() + s.missed;
            if let Some(w) = &s.wakeup
                && let Some(le) = le_counts(&w.hdr)
            {
                self.wakeup.entry(s.label.clone()).or_default().add(
                    &le,
                    w.count,
                    w.avg_us * w.count as f64,
                );
            }
        }
        if let Some(rtt) = &r.rtt {
            if let Some(le) = le_counts(&rtt.hdr) {
                self.rtt.add(&le, rtt.count, rtt.avg_us * rtt.count as f64);
            }
            self.lost_frames += rtt.lost;
            // Older results counted only WKC 0; newer ones every reply with another WKC (0 included).
            self.wkc_errors += rtt.wkc_zero.max(rtt.checks.wkc_errors);
        }
    }
}

/// rmp_eval_run.prom for the run `r` on top of `totals` (which already include it).
pub(crate) fn run(r: &RunResult, totals: &Totals, now: u64) -> String {
    let mut t = Text::default();
    t.family(
        "rmp_eval_runs_total",
        "counter",
        "Measurements written to this directory.",
    );
    t.sample("rmp_eval_runs_total", &[], totals.runs as f64);
    t.family(
        "rmp_eval_run_last_timestamp_seconds",
        "gauge",
        "Unix time the last run ended.",
    );
    t.sample("rmp_eval_run_last_timestamp_seconds", &[], now as f64);
    t.family(
        "rmp_eval_run_duration_seconds",
        "gauge",
        "Length of the last run.",
    );
    t.sample("rmp_eval_run_duration_seconds", &[], r.duration_s);
    t.family(
        "rmp_eval_run_period_seconds",
        "gauge",
        "Cycle period of the last run.",
    );
    t.sample(
        "rmp_eval_run_period_seconds",
        &[],
        f64::from(r.period_us) / 1e6,
    );
    t.family(
        "rmp_eval_run_passed",
        "gauge",
        "1 when every period of the last run was Great and no frame was lost.",
    );
    t.sample(
        "rmp_eval_run_passed",
        &[],
        f64::from(u8::from(r.verdict == Verdict::Pass)),
    );
    t.family(
        "rmp_eval_cycle_deviation_max_seconds",
        "gauge",
        "Worst deviation of a period from its target, late or early, in the last run.",
    );
    for s in &r.series {
        t.sample(
            "rmp_eval_cycle_deviation_max_seconds",
            &[("series", &s.label)],
            s.max_us / 1e6,
        );
    }
    t.family(
        "rmp_eval_late_cycles_total",
        "counter",
        "Periods outside the Great band (late, early after a late one) or skipped.",
    );
    for (label, n) in &totals.late_cycles {
        t.sample(
            "rmp_eval_late_cycles_total",
            &[("series", label)],
            *n as f64,
        );
    }
    if !totals.wakeup.is_empty() {
        t.family(
            "rmp_eval_wakeup_latency_seconds",
            "histogram",
            "Wakeup latency (now - scheduled wakeup, cyclictest's metric) of the scheduled threads.",
        );
        for (label, h) in &totals.wakeup {
            h.write(
                &mut t,
                "rmp_eval_wakeup_latency_seconds",
                &[("series", label)],
            );
        }
    }
    let with_wakeup: Vec<_> = r
        .series
        .iter()
        .filter_map(|s| Some((s, s.wakeup.as_ref()?)))
        .collect();
    if !with_wakeup.is_empty() {
        t.family(
            "rmp_eval_wakeup_latency_max_seconds",
            "gauge",
            "Largest wakeup latency of the last run.",
        );
        for (s, w) in with_wakeup {
            t.sample(
                "rmp_eval_wakeup_latency_max_seconds",
                &[("series", &s.label)],
                w.max_us / 1e6,
            );
        }
    }
    if totals.rtt.count > 0 || r.rtt.is_some() {
        t.family(
            "rmp_eval_rtt_seconds",
            "histogram",
            "Round trip time of a frame through the SubDevice (NIC mode).",
        );
        totals.rtt.write(&mut t, "rmp_eval_rtt_seconds", &[]);
        t.family(
            "rmp_eval_lost_frames_total",
            "counter",
            "Frames sent that never came back.",
        );
        t.sample("rmp_eval_lost_frames_total", &[], totals.lost_frames as f64);
        t.family(
            "rmp_eval_wkc_errors_total",
            "counter",
            "EtherCAT replies whose working counter was 0 (no SubDevice processed them).",
        );
        t.sample("rmp_eval_wkc_errors_total", &[], totals.wkc_errors as f64);
    }
    if let Some(rtt) = &r.rtt {
        t.family(
            "rmp_eval_rtt_max_seconds",
            "gauge",
            "Largest round trip of the last run.",
        );
        t.sample("rmp_eval_rtt_max_seconds", &[], rtt.max_us / 1e6);
    }
    t.into_string()
}
