//! `run` (and the bare `rmp-eval`): validate everything, show the configuration checks, measure, print the final
//! report (or JSON), write --output, save under results/. Exit 0 when every sample is Great, 1 otherwise.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::checks::machine::validate_core;
use crate::cli::RunArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::result::{RunResult, Verdict};
use crate::measure::session::{Gauges, Watch};
use crate::measure::spec::{Placement, RunSpec};
use crate::measure::store;
use crate::output::Output;
use crate::report::live::LiveView;

/// The CPUs of `spec`, checked against the machine (the last CPU when none is given).
pub fn place(host: &Host, spec: &RunSpec) -> Result<Placement> {
    let core = validate_core(host, spec.core)?;
    let receive_cpu = match spec.receive_cpu {
        Some(c) => validate_core(host, Some(c)).map_err(|e| match e {
            Error::Usage(m) => Error::usage(m.replacen("--core", "--receive-cpu", 1)),
            e => e,
        })?,
        None => core,
    };
    if spec.nic.is_none() && spec.pktlen.is_some() {
        return Err(Error::usage(
            "--pktlen applies to the NIC test only (give --nic IF)",
        ));
    }
    Ok(Placement { core, receive_cpu })
}

/// Everything checked before anything starts: the CPUs, and where --output would be written.
pub fn validate(host: &Host, args: &RunArgs) -> Result<Placement> {
    let at = place(host, &args.spec())?;
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
    Ok(at)
}

pub fn execute(host: &Host, out: Output, args: &RunArgs) -> Result<Outcome> {
    let at = validate(host, args)?;
    let dest = args
        .prometheus
        .as_deref()
        .map(std::path::Path::new)
        .map(|d| crate::report::prometheus::Dest::resolve(host, d))
        .transpose()?;
    let spec = args.spec();
    if !args.no_config && !args.json {
        crate::outln!("{}", config_preamble(host, out, at, args));
    }
    let mut screen = Screen::new(out, args.json);
    let result = crate::measure::run(host, &spec, at, "run", &mut screen)?;
    if args.json {
        let text =
            serde_json::to_string_pretty(&result).map_err(|e| Error::failed(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        crate::out!("{}", crate::report::run::render_final(&result, out.color));
        if let (true, Some(rtt), Some(nic)) = (args.verbose, &result.rtt, &args.nic) {
            crate::out!("{}", crate::report::run::render_stamps(rtt, nic));
        }
    }
    let saved = persist(host, args.output.as_deref(), &result)?;
    if let Some(d) = &dest {
        crate::report::prometheus::export_run(host, d, &result, store::unix_now())?;
    }
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

/// A measurement saved under results/ with `label` (fix's before/after): checked, run, saved. Prints only the
/// live view (none when `quiet`).
pub fn measure(
    host: &Host,
    out: Output,
    spec: &RunSpec,
    quiet: bool,
    label: &str,
) -> Result<(RunResult, PathBuf)> {
    let at = place(host, spec)?;
    let result = crate::measure::run(host, spec, at, label, &mut Screen::new(out, quiet))?;
    let path = persist(host, None, &result)?;
    Ok((result, path))
}

fn persist(host: &Host, output: Option<&Path>, r: &RunResult) -> Result<PathBuf> {
    if let Some(path) = output {
        let text = serde_json::to_string_pretty(r).map_err(|e| Error::failed(e.to_string()))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| Error::sys(format!("writing {}", path.display()), e))?;
    }
    store::save(host, r, store::unix_now())
}

fn config_preamble(host: &Host, out: Output, at: Placement, args: &RunArgs) -> String {
    let ctx = crate::checks::Ctx {
        core: at.core,
        nic: args.nic.clone(),
    };
    let findings = crate::checks::run_all(host, &ctx);
    crate::report::check::render_text(host, &ctx, &findings, out)
}

/// How often the live table is redrawn on a terminal (≤ 10 Hz) and a progress line printed otherwise.
const FRAME: Duration = Duration::from_millis(100);
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The live view of a run: the table redrawn in place on a terminal, a plain progress line every 10 s on a pipe
/// or into a file, nothing with --json.
struct Screen {
    out: Output,
    show: Show,
    view: Option<LiveView>,
    last_progress: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Show {
    Live,
    Progress,
    Quiet,
}

impl Screen {
    fn new(out: Output, quiet: bool) -> Self {
        let show = match (quiet, out.terminal) {
            (true, _) => Show::Quiet,
            (false, true) => Show::Live,
            (false, false) => Show::Progress,
        };
        Screen {
            out,
            show,
            view: None,
            last_progress: Instant::now(),
        }
    }
}

impl Watch for Screen {
    fn note(&mut self, text: &str) {
        eprintln!("rmp-eval: note: {text}");
    }

    fn start(&mut self, g: Gauges) {
        let view = LiveView::new(g.period_us, g.bucket_width_us, g.series);
        self.view = Some(match g.extra {
            Some(f) => view.with_extra(f),
            None => view,
        });
        self.last_progress = Instant::now();
    }

    fn interval(&self) -> Duration {
        if self.show == Show::Live {
            FRAME
        } else {
            Duration::from_secs(1)
        }
    }

    fn tick(&mut self, elapsed: Duration) {
        let Some(view) = &mut self.view else { return };
        let secs = elapsed.as_secs_f64();
        match self.show {
            Show::Live => crate::out!("{}", view.frame(secs, self.out.color)),
            Show::Progress if self.last_progress.elapsed() >= PROGRESS_EVERY => {
                self.last_progress = Instant::now();
                crate::out!("{}", view.progress_line(secs));
            }
            _ => {}
        }
    }

    fn end(&mut self) {
        if let (Show::Live, Some(view)) = (self.show, &mut self.view) {
            crate::out!("{}", view.clear());
        }
    }
}
