//! Prometheus text exposition for node_exporter's textfile collector: `check`, `run` and `monitor` each write
//! their own file (rmp_eval_check.prom, rmp_eval_run.prom, rmp_eval_monitor.prom) and the identity goes in
//! rmp_eval_info.prom, so that no metric family is written by two files (node_exporter refuses duplicates).
//! Each file is replaced atomically (temporary file, rename). Names: prefix `rmp_eval_`, seconds, `_total` for
//! counters; labels are ids from a closed set (check ids, sections, series labels, step ids), never run ids.
//! Counters and histograms accumulate over runs in a state file next to the textfiles (rmp_eval.totals.json;
//! node_exporter reads only *.prom): removing the directory's contents is a counter reset, as Prometheus expects.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checks::{Finding, Status, machine as sys};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::dist;
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

pub(crate) const NODE_EXPORTER_DEFAULTS: &str = "/etc/default/prometheus-node-exporter";
/// Debian's prometheus-node-exporter reads this directory unless its ARGS say otherwise.
pub(crate) const DEBIAN_TEXTFILE_DIR: &str = "/var/lib/prometheus/node-exporter";
const TOTALS: &str = "rmp_eval.totals.json";
const FLAG: &str = "--collector.textfile.directory";

/// The textfile directory named by the ARGS of /etc/default/prometheus-node-exporter (comments ignored).
pub(crate) fn dir_from_defaults(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let at = l.find(FLAG)? + FLAG.len();
            let rest = l[at..].trim_start_matches(['=', ' ', '\t']);
            let v: String = match rest.chars().next()? {
                q @ ('"' | '\'') => rest[1..].chars().take_while(|&c| c != q).collect(),
                _ => rest
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                    .collect(),
            };
            (v.starts_with('/')).then_some(v)
        })
}

/// Where the textfiles go: a directory on the machine (through `host`, so under --root in tests), checked to
/// exist before anything is measured.
#[derive(Debug, Clone)]
pub(crate) struct Dest {
    host: Host,
    dir: String,
}

impl Dest {
    /// `given` empty: the node exporter's directory (its defaults file, else Debian's). Otherwise that
    /// directory, as a path on this machine (not under --root).
    pub(crate) fn resolve(host: &Host, given: &Path) -> Result<Dest> {
        let (h, dir) = if given.as_os_str().is_empty() {
            let d = host
                .read(NODE_EXPORTER_DEFAULTS)
                .ok()
                .and_then(|t| dir_from_defaults(&t))
                .unwrap_or_else(|| DEBIAN_TEXTFILE_DIR.to_string());
            (host.clone(), d)
        } else {
            let abs = std::path::absolute(given)
                .map_err(|e| Error::usage(format!("--prometheus {}: {e}", given.display())))?;
            (Host::live(), abs.to_string_lossy().into_owned())
        };
        if !h.is_dir(&dir) {
            return Err(Error::usage(format!(
                "--prometheus: no directory {dir} (install prometheus-node-exporter, or give --prometheus=DIR)"
            )));
        }
        Ok(Dest { host: h, dir })
    }

    pub(crate) fn dir(&self) -> &str {
        &self.dir
    }

    /// Replaces DIR/name atomically.
    pub(crate) fn write(&self, name: &str, text: &str) -> Result<()> {
        // No FileMeta: the new file gets 0644 under the usual umask and the writer's owner.
        self.host
            .write_atomic(&format!("{}/{name}", self.dir), text.as_bytes(), None)?;
        Ok(())
    }

    /// Adds `n` to the monitor's re-application counter and returns the new total.
    pub(crate) fn add_reapplied(&self, n: u64) -> u64 {
        let mut t = self.load_totals();
        t.reapplied += n;
        if n > 0 {
            let _ = self.save_totals(&t);
        }
        t.reapplied
    }

    fn save_totals(&self, t: &Totals) -> Result<()> {
        let json = serde_json::to_string_pretty(t).map_err(|e| Error::failed(e.to_string()))?;
        self.write(TOTALS, &(json + "\n"))
    }

    fn load_totals(&self) -> Totals {
        self.host
            .read(&format!("{}/{TOTALS}", self.dir))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
}

/// Metric families being written: HELP and TYPE once per family, then its samples.
#[derive(Default)]
pub(crate) struct Text(String);

impl Text {
    pub(crate) fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], v: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            let l: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let _ = write!(self.0, "{{{}}}", l.join(","));
        }
        let _ = writeln!(self.0, " {}", number(v));
    }

    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

/// A label value as the exposition format wants it: backslash, double quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The preempt model as `uname -v` or /sys/kernel/realtime tell it: rt, dynamic, full, or none.
fn preempt_model(host: &Host) -> &'static str {
    if host
        .read_trimmed(crate::checks::system::REALTIME)
        .ok()
        .as_deref()
        == Some("1")
    {
        return "rt";
    }
    match sys::kernel_version(host) {
        Ok(v) if v.contains("PREEMPT_RT") || v.contains("PREEMPT RT") => "rt",
        Ok(v) if v.contains("PREEMPT_DYNAMIC") => "dynamic",
        Ok(v) if v.split_whitespace().any(|w| w == "PREEMPT") => "full",
        Ok(_) => "none",
        Err(_) => "unknown",
    }
}

/// rmp_eval_info: the identity of the machine and the tool.
pub(crate) fn info(host: &Host) -> String {
    let mut t = Text::default();
    t.family(
        "rmp_eval_info",
        "gauge",
        "rmp-eval version, kernel release, preempt model and architecture (always 1).",
    );
    let kernel = sys::kernel_release(host).unwrap_or_default();
    let arch = sys::machine(host).unwrap_or_default();
    t.sample(
        "rmp_eval_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("kernel", &kernel),
            ("preempt", preempt_model(host)),
            ("arch", &arch),
        ],
        1.0,
    );
    t.into_string()
}

/// rmp_eval_check.prom: one 0/1 gauge per check, the count per status, the time.
pub(crate) fn checks(findings: &[Finding], now: u64) -> String {
    let mut t = Text::default();
    t.family(
        "rmp_eval_check_passed",
        "gauge",
        "1 when the check passed (or is informational), 0 when it failed or could not tell.",
    );
    for f in findings {
        let ok = matches!(f.status, Status::Pass | Status::Info);
        let section = serde_json::to_value(f.section)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        t.sample(
            "rmp_eval_check_passed",
            &[("check", f.id), ("section", &section)],
            f64::from(u8::from(ok)),
        );
    }
    t.family(
        "rmp_eval_checks",
        "gauge",
        "Checks per status in the last check.",
    );
    for (status, name) in [
        (Status::Pass, "pass"),
        (Status::Fail, "fail"),
        (Status::Warn, "warn"),
        (Status::Pending, "pending"),
        (Status::Unknown, "unknown"),
        (Status::Info, "info"),
        (Status::Warn, "warn"),
        (Status::Pending, "pending"),
    ] {
        let n = findings.iter().filter(|f| f.status == status).count();
        t.sample("rmp_eval_checks", &[("status", name)], n as f64);
    }
    t.family(
        "rmp_eval_check_last_timestamp_seconds",
        "gauge",
        "Unix time of the last check.",
    );
    t.sample("rmp_eval_check_last_timestamp_seconds", &[], now as f64);
    t.into_string()
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

/// Writes rmp_eval_check.prom and rmp_eval_info.prom.
pub(crate) fn export_check(host: &Host, dest: &Dest, findings: &[Finding], now: u64) -> Result<()> {
    dest.write("rmp_eval_info.prom", &info(host))?;
    dest.write("rmp_eval_check.prom", &checks(findings, now))
}

/// Adds the run to the totals, then writes rmp_eval_run.prom and rmp_eval_info.prom.
pub(crate) fn export_run(host: &Host, dest: &Dest, r: &RunResult, now: u64) -> Result<()> {
    let mut totals = dest.load_totals();
    totals.add(r);
    dest.save_totals(&totals)?;
    dest.write("rmp_eval_info.prom", &info(host))?;
    dest.write("rmp_eval_run.prom", &run(r, &totals, now))
}

#[cfg(test)]
#[path = "prometheus_tests.rs"]
mod tests;
