//! Prometheus text exposition for node_exporter's textfile collector: `check`, `run` and `monitor` each write
//! their own file (rmp_eval_check.prom, rmp_eval_run.prom, rmp_eval_monitor.prom; the monitor also
//! rmp_eval_qualify.prom, the latest qualification's verdict) and the identity goes in
//! rmp_eval_info.prom, so that no metric family is written by two files (node_exporter refuses duplicates).
//! Each file is replaced atomically (temporary file, rename). Names: prefix `rmp_eval_`, seconds, `_total` for
//! counters; labels are ids from a closed set (check ids, sections, series labels, step ids), never run ids.
//! Counters and histograms accumulate over runs in a state file next to the textfiles (rmp_eval.totals.json;
//! node_exporter reads only *.prom): removing the directory's contents is a counter reset, as Prometheus expects.

use std::path::Path;

use crate::checks::Finding;
use crate::checks::machine_id::KernelInfo;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::remedy::StepId;

mod check;
mod qualify;
mod run;
mod text;

use check::{checks, info};
pub use run::{LE_US, le_counts};
use run::{Totals, run};
pub(crate) use text::Text;

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

/// Writes rmp_eval_check.prom and rmp_eval_info.prom.
pub(crate) fn export_check(
    dest: &Dest,
    k: &KernelInfo,
    findings: &[Finding],
    now: u64,
) -> Result<()> {
    dest.write("rmp_eval_info.prom", &info(k))?;
    dest.write("rmp_eval_check.prom", &checks(findings, now))
}

/// Adds the run to the totals, then writes rmp_eval_run.prom and rmp_eval_info.prom.
pub(crate) fn export_run(dest: &Dest, k: &KernelInfo, r: &RunResult, now: u64) -> Result<()> {
    let mut totals = dest.load_totals();
    totals.add(r);
    dest.save_totals(&totals)?;
    dest.write("rmp_eval_info.prom", &info(k))?;
    dest.write("rmp_eval_run.prom", &run(r, &totals, now))
}

/// Writes rmp_eval_monitor.prom: drifted values per step (before any re-apply), what is left, the re-applications
/// (a counter kept in the totals, `reapplied` added to it) and the time of the pass.
pub(crate) fn export_monitor(
    dest: &Dest,
    per_step: impl Fn(StepId) -> usize,
    (remaining, reapplied): (usize, usize),
    now: u64,
) -> Result<()> {
    let total = dest.add_reapplied(reapplied as u64);
    let mut t = Text::default();
    t.family(
        "rmp_eval_drift_values",
        "gauge",
        "Values fix applied that no longer held when the monitor looked, per step (before any re-apply).",
    );
    for id in StepId::ALL {
        t.sample(
            "rmp_eval_drift_values",
            &[("step", id.as_str())],
            per_step(id) as f64,
        );
    }
    t.family(
        "rmp_eval_drift_remaining_values",
        "gauge",
        "Drifted values left after the monitor's pass (re-applied ones excluded).",
    );
    t.sample("rmp_eval_drift_remaining_values", &[], remaining as f64);
    t.family(
        "rmp_eval_drift_reapplied_total",
        "counter",
        "Drifted values the monitor wrote again.",
    );
    t.sample("rmp_eval_drift_reapplied_total", &[], total as f64);
    t.family(
        "rmp_eval_monitor_last_timestamp_seconds",
        "gauge",
        "Unix time of the monitor's last pass.",
    );
    t.sample("rmp_eval_monitor_last_timestamp_seconds", &[], now as f64);
    dest.write("rmp_eval_monitor.prom", &t.into_string())
}

/// Writes rmp_eval_qualify.prom: the verdict of qualification `q`.
pub(crate) fn export_qualification(
    dest: &Dest,
    q: &crate::report::qualification::Qualification,
) -> Result<()> {
    dest.write("rmp_eval_qualify.prom", &qualify::qualification(q))
}

#[cfg(test)]
mod tests;
