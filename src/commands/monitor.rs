//! `rmp-eval monitor`: one pass of the fleet monitor (rmp-eval-monitor.timer starts it). Settings come from
//! /etc/default/rmp-eval. check → drift of the values fix saved (reported, re-applied when configured) → a short
//! cyclic run on the saved RT core → Prometheus textfiles. Everything it finds is printed, one line each, for the
//! journal. Skipped (exit 0) while another measurement holds the core. Exit 1 while drift remains.

use crate::checks::machine_id::kernel_info;
use crate::checks::{Ctx, Finding, Status};
use crate::cli::MonitorArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::{drift, plan, saved};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::result::store::{RunLabel, unix_now};
use crate::measure::spec::RunSpec;
use crate::outln;
use crate::output::Output;
use crate::parse::defaults;
use crate::report::prometheus::{self, Dest};
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
    let dest = textfiles(w, host, &cfg);
    let ctx = Ctx {
        core,
        nic: saved.as_ref().and_then(|s| s.nic.clone()),
        pid: None,
        smi_seconds: None,
    };
    let findings = crate::registry::run_all(host, &ctx);
    outln!(w, "{}", check_line(&findings));
    let online = plan::online_cpus(host)?;
    let pass = drift::pass(host, saved.as_ref(), online, cfg.reapply)?;
    for line in drift_lines(&pass) {
        outln!(w, "{line}");
    }
    let result = short_run(w, host, out, &cfg, core)?;
    if let Some(d) = &dest {
        export(w, host, d, (&findings, result.as_ref(), &pass), now)?;
    }
    Ok(if pass.remaining > 0 {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}

/// Where the Prometheus textfiles go, if anywhere. A missing directory is said once and the pass goes on: drift
/// still goes to the journal.
fn textfiles(w: &mut dyn Write, host: &Host, cfg: &Config) -> Option<Dest> {
    match cfg
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
    }
}

/// The pass's textfiles: the checks, the run, the drift, the latest qualification.
fn export(
    w: &mut dyn Write,
    host: &Host,
    d: &Dest,
    (findings, result, pass): (&[Finding], Option<&RunResult>, &drift::Pass),
    now: u64,
) -> Result<()> {
    let k = kernel_info(host);
    prometheus::export_check(d, &k, findings, now)?;
    if let Some(r) = result {
        prometheus::export_run(d, &k, r, unix_now())?;
    }
    let counts = (pass.remaining, pass.written());
    prometheus::export_monitor(d, |id| pass.per_step(id), counts, now)?;
    if let Some(q) = crate::qualify::result::latest(host) {
        prometheus::export_qualification(d, &q)?;
    }
    outln!(w, "monitor: metrics in {}", d.dir());
    Ok(())
}

/// The checks' line: how many passed and failed, and which failed.
fn check_line(findings: &[Finding]) -> String {
    let failed: Vec<&str> = findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .map(|f| f.id.as_str())
        .collect();
    format!(
        "check: {} passed, {} failed{}{}",
        findings.iter().filter(|f| f.status == Status::Pass).count(),
        failed.len(),
        if failed.is_empty() { "" } else { ": " },
        failed.join(", ")
    )
}

/// The drift pass's lines: each drifted value, then what re-applying did (or that nothing drifted).
fn drift_lines(pass: &drift::Pass) -> Vec<String> {
    let mut lines = Vec::new();
    for (id, changes) in &pass.drifted {
        for (target, now_v, want) in changes {
            lines.push(format!("drift: {id}: {target} is {now_v}, fix set {want}"));
        }
    }
    match &pass.reapplied {
        Some(r) => {
            for t in &r.refused {
                lines.push(format!(
                    "drift: {t}: the kernel refuses it (managed IRQ or unsupported): no longer counted"
                ));
            }
            lines.extend(
                r.problems
                    .iter()
                    .map(|p| format!("drift: re-apply failed: {p}")),
            );
            lines.push(format!(
                "drift: {} value(s) re-applied, {} still drifted",
                r.written, pass.remaining
            ));
        }
        None if pass.remaining == 0 => lines.push("drift: none".to_string()),
        None => {}
    }
    lines
}

/// The short cyclic run on the saved core (none with a run of 0 s), said in one line.
fn short_run(
    w: &mut dyn Write,
    host: &Host,
    out: Output,
    cfg: &Config,
    core: usize,
) -> Result<Option<RunResult>> {
    if cfg.run_seconds <= 0.0 {
        return Ok(None);
    }
    let spec = RunSpec {
        core: Some(core),
        duration: Some(cfg.run_seconds),
        ..RunSpec::default()
    };
    let r = crate::job::measure_unsaved(host, out, &spec, RunLabel::Run)?;
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
    Ok(Some(r))
}
