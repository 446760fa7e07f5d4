//! `run` (and the bare `rmp-eval`): validate everything, show the configuration checks, measure, print the final
//! report (or JSON), write --output, save under results/. Exit 0 when every sample is Great, 1 otherwise.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checks::sys::validate_core;
use crate::cli::RunArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::result::{RunMode, RunResult, Verdict};
use crate::measure::sampler::{self, Plan};
use crate::measure::series::Series;
use crate::measure::session::{MemoryLock, OffCore, Show, StopOnSignal, supervise};
use crate::measure::{rt, store};
use crate::output::Output;
use crate::report::live::LiveView;

/// The kernel release, recorded with each result.
const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// Arguments checked against the machine, before any thread starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    pub core: usize,
    pub receive_cpu: usize,
}

pub fn validate(host: &Host, args: &RunArgs) -> Result<Validated> {
    let core = validate_core(host, args.core)?;
    let receive_cpu = match args.receive_cpu {
        Some(c) => validate_core(host, Some(c)).map_err(|e| match e {
            Error::Usage(m) => Error::usage(m.replacen("--core", "--receive-cpu", 1)),
            e => e,
        })?,
        None => core,
    };
    if args.nic.is_none() && args.pktlen.is_some() {
        return Err(Error::usage(
            "--pktlen applies to the NIC test only (give --nic IF)",
        ));
    }
    if let Some(out) = &args.output {
        let dir = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(Error::usage(format!(
                "--output {}: no directory {}",
                out.display(),
                dir.display()
            )));
        }
        if out.is_dir() {
            return Err(Error::usage(format!(
                "--output {}: is a directory",
                out.display()
            )));
        }
    }
    Ok(Validated { core, receive_cpu })
}

pub fn execute(host: &Host, out: Output, args: &RunArgs) -> Result<Outcome> {
    let v = validate(host, args)?;
    if !args.no_config && !args.json {
        crate::outln!("{}", config_preamble(host, out, &v, args));
    }
    let result = run_validated(host, out, args, &v, "run")?;
    if args.json {
        let text =
            serde_json::to_string_pretty(&result).map_err(|e| Error::failed(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        crate::out!("{}", crate::report::run::render_final(&result, out.color));
        if let (true, Some(rtt), Some(nic)) = (args.verbose, &result.rtt, &args.nic) {
            crate::out!("{}", crate::measure::nic::render_stamps(rtt, nic));
        }
    }
    let saved = persist(host, args, &result)?;
    if !args.json {
        crate::outln!("Saved: {}", saved.display());
    }
    match result.verdict {
        Verdict::Pass => Ok(Outcome::Good),
        Verdict::Fail => Ok(Outcome::ShortFall),
        Verdict::Incomplete => Err(Error::failed(
            result
                .error
                .clone()
                .unwrap_or_else(|| "the run could not finish".into()),
        )),
    }
}

/// A measurement saved under results/ with `label` (fix's before/after): validated, run, written to --output when
/// given, saved. Prints only the live view (as `out` and --json allow).
pub fn measure(
    host: &Host,
    out: Output,
    args: &RunArgs,
    label: &str,
) -> Result<(RunResult, PathBuf)> {
    let v = validate(host, args)?;
    let result = run_validated(host, out, args, &v, label)?;
    let path = persist(host, args, &result)?;
    Ok((result, path))
}

fn persist(host: &Host, args: &RunArgs, r: &RunResult) -> Result<PathBuf> {
    if let Some(path) = &args.output {
        let text = serde_json::to_string_pretty(r).map_err(|e| Error::failed(e.to_string()))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| Error::sys(format!("writing {}", path.display()), e))?;
    }
    store::save(host, r, store::unix_now())
}

fn config_preamble(host: &Host, out: Output, v: &Validated, args: &RunArgs) -> String {
    let ctx = crate::checks::Ctx {
        core: v.core,
        nic: args.nic.clone(),
    };
    let findings = crate::checks::run_all(host, &ctx);
    crate::report::check::render_text(host, &ctx, &findings, out)
}

fn run_validated(
    host: &Host,
    out: Output,
    args: &RunArgs,
    v: &Validated,
    label: &str,
) -> Result<RunResult> {
    if args.nic.is_some() {
        return crate::measure::nic::run(host, out, args, v.core, v.receive_cpu, label);
    }
    let started = store::unix_now();
    let signals = StopOnSignal::install()?;
    let _lock = MemoryLock::acquire()?;
    let dma = rt::DmaLatency::hold(host);
    if let (Some(note), true) = (&dma.note, host.is_live()) {
        eprintln!("rmp-eval: note: {note}");
    }
    let mut series = Series::new("Cyclic", args.period_us, args.bucket_width_us);
    let mut view = LiveView::new(
        args.period_us,
        args.bucket_width_us,
        vec![("Cyclic".into(), series.live())],
    );
    let plan = Plan {
        period_ns: u64::from(args.period_us) * 1000,
        iterations: args.iterations,
        duration_ns: args.duration.map(|s| (s * 1e9) as u64),
    };
    let stop = Arc::clone(&signals.stop);
    let thread = rt::spawn_rt("rmp-eval-rt", v.core, args.send_priority, move || {
        let ended = sampler::run(&plan, &mut series, &stop, |_| {});
        (series, ended)
    })?;
    {
        let _off = OffCore::apply(&[v.core]);
        supervise(out, Show::choose(out, args.json), &mut view, || {
            thread.is_finished()
        });
    }
    let (series, ended) = thread.join()?;
    let dma_latency_held = dma.held();
    drop(dma);
    let summaries = vec![series.summary()];
    let empty = series.count() == 0;
    Ok(RunResult {
        period_us: args.period_us,
        duration_s: ended.elapsed_ns as f64 / 1e9,
        mode: RunMode::Cyclic,
        verdict: if empty {
            Verdict::Incomplete
        } else {
            RunResult::judge(&summaries, None)
        },
        series: summaries,
        rtt: None,
        bucket_width_us: series.bands().width_ns() as f64 / 1000.0,
        started: store::rfc3339(started),
        label: label.to_string(),
        core: Some(v.core),
        priority: Some(args.send_priority),
        kernel: host.read_trimmed(OSRELEASE).unwrap_or_default(),
        interrupted: ended.stopped,
        dma_latency_held,
        error: empty.then(|| "stopped before a whole period was measured".to_string()),
    })
}
