//! `rmp-eval monitor`: one pass of the fleet monitor (rmp-eval-monitor.timer starts it). Settings come from
//! /etc/default/rmp-eval. check → drift of the values fix saved (reported, re-applied when configured) → a short
//! cyclic run on the saved RT core → Prometheus textfiles. Everything it finds is printed, one line each, for the
//! journal. Skipped (exit 0) while another measurement holds the core. Exit 1 while drift remains.

use crate::checks::machine_id::kernel_info;
use crate::checks::{Ctx, Status};
use crate::cli::MonitorArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::StepId;
use crate::fix::{drift, plan, saved};
use crate::host::Host;
use crate::measure::result::store::unix_now;
use crate::measure::spec::RunSpec;
use crate::outln;
use crate::output::Output;
use crate::parse::defaults;
use crate::report::prometheus::{self, Dest, Text};
use std::io::Write;

use crate::machine::RMP_EVAL_DEFAULTS as DEFAULTS;
const RUN_SECONDS: &str = "RMP_EVAL_MONITOR_RUN_SECONDS";
const REAPPLY: &str = "RMP_EVAL_MONITOR_REAPPLY";
const PROMETHEUS: &str = "RMP_EVAL_MONITOR_PROMETHEUS";

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    pub(crate) run_seconds: f64,
    pub(crate) reapply: bool,
    /// None: no textfiles; Some(""): the node exporter's directory; Some(dir).
    pub(crate) prometheus: Option<String>,
}

/// The settings in /etc/default/rmp-eval (defaults for what is missing; a bad value is an error naming it).
pub(crate) fn config(host: &Host) -> Result<Config> {
    let text = host.read(DEFAULTS).unwrap_or_default();
    let bad = |k: &str, v: &str, what: &str| Error::usage(format!("{DEFAULTS}: {k}={v}: {what}"));
    let run_seconds = match defaults::get(&text, RUN_SECONDS) {
        None => 10.0,
        Some(v) => match v.parse::<f64>() {
            Ok(s) if s.is_finite() && (0.0..=3600.0).contains(&s) => s,
            _ => {
                return Err(bad(
                    RUN_SECONDS,
                    &v,
                    "not a number of seconds from 0 to 3600",
                ));
            }
        },
    };
    let reapply = match defaults::get(&text, REAPPLY).as_deref() {
        None | Some("no") | Some("") => false,
        Some("yes") => true,
        Some(v) => return Err(bad(REAPPLY, v, "yes or no")),
    };
    let prometheus = match defaults::get(&text, PROMETHEUS) {
        Some(v) if v == "no" => None,
        Some(v) if v.is_empty() || v.starts_with('/') => Some(v),
        None => Some(String::new()),
        Some(v) => return Err(bad(PROMETHEUS, &v, "empty, an absolute directory, or no")),
    };
    Ok(Config {
        run_seconds,
        reapply,
        prometheus,
    })
}

pub(crate) fn execute(
    host: &Host,
    out: Output,
    w: &mut dyn Write,
    _args: &MonitorArgs,
) -> Result<Outcome> {
    let cfg = config(host)?;
    let saved = saved::load(host)?;
    let core = crate::machine::validate_core(host, saved.as_ref().map(|s| s.core))?;
    let Some(_lock) = crate::corelock::try_exclusive(host, core)? else {
        outln!(
            w,
            "monitor: a measurement on CPU{core} is running: this pass is skipped"
        );
        return Ok(Outcome::Good);
    };
    let now = unix_now();
    // A missing textfile directory is said once and the pass goes on: drift still goes to the journal.
    let dest = match cfg
        .prometheus
        .as_deref()
        .map(|d| Dest::resolve(host, std::path::Path::new(d)))
    {
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            outln!(w, "monitor: no Prometheus textfiles: {e}");
            None
        }
        None => None,
    };

    let ctx = Ctx {
        core,
        nic: saved.as_ref().and_then(|s| s.nic.clone()),
        pid: None,
        smi_seconds: None,
    };
    let findings = crate::registry::run_all(host, &ctx);
    let failed: Vec<crate::checks::CheckId> = findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .map(|f| f.id)
        .collect();
    outln!(
        w,
        "check: {} passed, {} failed{}{}",
        findings.iter().filter(|f| f.status == Status::Pass).count(),
        failed.len(),
        if failed.is_empty() { "" } else { ": " },
        failed
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );

    let online = plan::online_cpus(host)?;
    let found = drift::find(host, saved.as_ref(), online.clone())?;
    let mut per_step: Vec<(String, usize)> = Vec::new();
    for s in &found {
        for c in &s.changes {
            let (target, now_v, want) = drift::describe(c);
            outln!(
                w,
                "drift: {}: {target} is {now_v}, fix set {want}",
                s.id.as_str()
            );
        }
        per_step.push((s.id.as_str().to_string(), s.changes.len()));
    }
    let mut reapplied = 0;
    let mut remaining = found.iter().map(|s| s.changes.len()).sum::<usize>();
    if cfg.reapply && remaining > 0 {
        let (written, refused, problems) = drift::reapply(host, &found)?;
        reapplied = written;
        for r in &refused {
            outln!(
                w,
                "drift: {r}: the kernel refuses it (managed IRQ or unsupported): no longer counted"
            );
        }
        for p in &problems {
            outln!(w, "drift: re-apply failed: {p}");
        }
        remaining = drift::find(host, saved.as_ref(), online)?
            .iter()
            .map(|s| s.changes.len())
            .sum();
        outln!(
            w,
            "drift: {written} value(s) re-applied, {remaining} still drifted"
        );
    } else if remaining == 0 {
        outln!(w, "drift: none");
    }

    let result = if cfg.run_seconds > 0.0 {
        let spec = RunSpec {
            core: Some(core),
            duration: Some(cfg.run_seconds),
            ..RunSpec::default()
        };
        let r = crate::job::measure_unsaved(host, out, &spec, "run")?;
        let worst = r.series.iter().map(|s| s.max_us).fold(0.0, f64::max);
        let outside: u64 = r
            .series
            .iter()
            .map(|s| s.buckets.not_great() + s.missed)
            .sum();
        outln!(
            w,
            "run: {} s on CPU{core}: max deviation {worst} us, {outside} period(s) outside Great, {:?}",
            cfg.run_seconds,
            r.verdict
        );
        Some(r)
    } else {
        None
    };

    if let Some(d) = &dest {
        prometheus::export_check(d, &kernel_info(host), &findings, now)?;
        if let Some(r) = &result {
            prometheus::export_run(d, &kernel_info(host), r, unix_now())?;
        }
        d.write(
            "rmp_eval_monitor.prom",
            &metrics(&per_step, remaining, reapplied, d, now),
        )?;
        if let Some(q) = crate::qualify::result::latest(host) {
            prometheus::export_qualification(d, &q)?;
        }
        outln!(w, "monitor: metrics in {}", d.dir());
    }
    Ok(if remaining > 0 {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}

/// rmp_eval_monitor.prom: drifted values per step, what is left, re-applications (a counter kept in the totals).
fn metrics(
    per_step: &[(String, usize)],
    remaining: usize,
    reapplied: usize,
    d: &Dest,
    now: u64,
) -> String {
    let total = d.add_reapplied(reapplied as u64);
    let mut t = Text::default();
    t.family(
        "rmp_eval_drift_values",
        "gauge",
        "Values fix applied that no longer held when the monitor looked, per step (before any re-apply).",
    );
    for id in StepId::ALL {
        let n = per_step
            .iter()
            .find(|(s, _)| s == id.as_str())
            .map_or(0, |p| p.1);
        t.sample("rmp_eval_drift_values", &[("step", id.as_str())], n as f64);
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
    t.into_string()
}
