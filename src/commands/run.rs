//! `run` (and the bare `rmp-eval`): validate everything, show the configuration checks, measure, print the final
//! report (or JSON), write --output, save under results/. Exit 0 when every sample is Great, 1 otherwise.

use std::path::{Path, PathBuf};

use crate::cli::RunArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::machine::validate_core;
use crate::measure::result::{CheckCounts, Identity, RunResult, Verdict};
use crate::measure::spec::{Placement, RunSpec};
use crate::measure::store::{self, Slot};
use crate::output::Output;

use super::run_screen::Screen;

/// The CPUs of `spec`, checked against the machine (the last CPU when none is given).
pub(crate) fn place(host: &Host, spec: &RunSpec) -> Result<Placement> {
    if let Some(n) = &spec.nic {
        crate::checks::nic::require(host, n)?;
    }
    crate::measure::queue::validate(host, spec)?;
    let core = validate_core(host, spec.core)?;
    let receive_cpu = match spec.receive_cpu {
        Some(c) => crate::machine::validate_cpu(host, Some(c), "--receive-cpu")?,
        None => core,
    };
    let mut names = std::collections::HashSet::new();
    for t in &spec.threads {
        if !names.insert(t.name.as_str()) {
            return Err(Error::usage(format!(
                "--thread {}: two threads of that name (each labels its own series)",
                t.name
            )));
        }
        if t.cpu.is_some() {
            crate::machine::validate_cpu(host, t.cpu, &format!("--thread {}@", t.name))?;
        }
    }
    if let Some(p) = spec.profile.filter(|p| p.is_linuxcnc())
        && spec.period_us != RunSpec::PERIOD_US
    {
        return Err(Error::usage(format!(
            "--period-us: --profile {} sets its threads' periods (servo 1 ms, base 25 us); change one with --thread, \
             e.g. --thread base:50us:98",
            p.name()
        )));
    }
    if spec.nic.is_none() && spec.pktlen.is_some() {
        return Err(Error::usage(
            "--pktlen applies to the NIC test only (give --nic IF)",
        ));
    }
    Ok(Placement { core, receive_cpu })
}

/// Everything checked before anything starts: the CPUs, and where --output would be written.
pub(crate) fn validate(host: &Host, args: &RunArgs) -> Result<Placement> {
    let at = place(host, &args.spec())?;
    for (opt, file) in [("--output", &args.output), ("--hlog", &args.hlog)] {
        if let Some(f) = file {
            writable(opt, f)?;
        }
    }
    Ok(at)
}

/// A file we may create: its directory exists and it is not a directory.
fn writable(opt: &str, out: &Path) -> Result<()> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(Error::usage(format!(
            "{opt} {}: no directory {}",
            out.display(),
            dir.display()
        )));
    }
    if out.is_dir() {
        return Err(Error::usage(format!(
            "{opt} {}: is a directory",
            out.display()
        )));
    }
    Ok(())
}

pub(crate) fn execute(host: &Host, out: Output, args: &RunArgs) -> Result<Outcome> {
    let at = validate(host, args)?;
    let dest = args
        .prometheus
        .as_deref()
        .map(std::path::Path::new)
        .map(|d| crate::report::prometheus::Dest::resolve(host, d))
        .transpose()?;
    let spec = args.spec();
    // Before 40 lines of checks: a run without permission for SCHED_FIFO says so first.
    let priority = match spec.nic {
        Some(_) => spec.send_priority.max(spec.receive_priority),
        None => spec.send_priority,
    };
    crate::measure::rt::probe_fifo(priority)?;
    let checks = if !args.no_config && !args.json {
        let (text, counts) = config_preamble(host, out, at, args);
        crate::outln!("{text}");
        Some(counts)
    } else {
        None
    };
    if !host.is_live() && !args.json {
        let note = match spec.hwlat {
            true => format!(
                "Note: --root {}: --hwlat drives the tracefs under it (a tree, not this machine's kernel) and keeps \
                 the results there.",
                host.root().display()
            ),
            false => measured_here(host),
        };
        crate::out!("{}", crate::report::check::wrap(&note, out.width, "", "  "));
    }
    let slot = Slot::new(host, "run", store::unix_now())?;
    let mut screen = Screen::new(out, args.json, Some(&slot));
    let lock = crate::corelock::shared(host, at.core);
    let placed = crate::cgroup::enter(host, at.core)?;
    if let (Some(p), false) = (&placed, args.json) {
        eprintln!(
            "rmp-eval: note: measuring inside the isolated cgroup partition {}",
            p.name
        );
    }
    let mut result = crate::measure::run(host, &spec, at, "run", &mut screen)?;
    drop((placed, lock));
    drop(screen);
    result.identity = Some(identity(checks));
    // Before printing, so that the printed result names the trace file saved beside it.
    slot.attach_trace(&mut result)?;
    if args.json {
        let text =
            serde_json::to_string_pretty(&result).map_err(|e| Error::failed(e.to_string()))?;
        crate::outln!("{text}");
    } else {
        let columns = if out.terminal { out.width } else { usize::MAX };
        crate::out!(
            "{}",
            crate::report::run::render_final_in(&result, out.color, columns)
        );
        let fit = |t: &str| crate::report::table::fit(t, columns);
        if let Some(l) = &result.load {
            crate::out!("{}", fit(&format!("Measured under load: {}\n", l.command)));
        }
        if let (true, Some(rtt), Some(nic)) = (args.verbose, &result.rtt, &args.nic) {
            crate::out!("{}", fit(&crate::report::run_rtt::render_stamps(rtt, nic)));
        }
    }
    let saved = persist(&slot, args.output.as_deref(), &result)?;
    if let Some(d) = &dest {
        crate::report::prometheus::export_run(
            d,
            &crate::checks::machine_id::kernel_info(host),
            &result,
            store::unix_now(),
        )?;
    }
    if !args.json {
        crate::outln!("Saved: {}", saved.display());
    }
    match result.verdict {
        Verdict::Pass => Ok(Outcome::Good),
        Verdict::Fail => Ok(Outcome::ShortFall),
        Verdict::Inconclusive => Ok(Outcome::Inconclusive),
        Verdict::Incomplete => Err(Error::failed(
            result
                .error
                .clone()
                .unwrap_or_else(|| "the run could not finish".into()),
        )),
    }
}

/// A measurement saved under results/ with `label` (fix's before/after): checked, run, saved. Prints only the
/// live view (none when `quiet`), which takes no reset: the pair is compared, so each covers its whole length.
pub fn measure(
    host: &Host,
    out: Output,
    spec: &RunSpec,
    quiet: bool,
    label: &str,
) -> Result<(RunResult, PathBuf)> {
    let at = place(host, spec)?;
    let slot = Slot::new(host, label, store::unix_now())?;
    let lock = crate::corelock::shared(host, at.core);
    let placed = crate::cgroup::enter(host, at.core)?;
    let mut result = crate::measure::run(
        host,
        spec,
        at,
        label,
        &mut Screen::new(out, quiet, Some(&slot)).fixed_length(),
    )?;
    drop((placed, lock));
    result.identity = Some(identity(None));
    slot.attach_trace(&mut result)?;
    let path = persist(&slot, None, &result)?;
    Ok((result, path))
}

/// A measurement that prints nothing and is not saved under results/ (the monitor's, every few minutes). The
/// caller holds the core's lock.
pub(crate) fn measure_unsaved(
    host: &Host,
    out: Output,
    spec: &RunSpec,
    label: &str,
) -> Result<RunResult> {
    let at = place(host, spec)?;
    let _placed = crate::cgroup::enter(host, at.core)?;
    crate::measure::run(host, spec, at, label, &mut Screen::new(out, true, None))
}

fn persist(slot: &Slot, output: Option<&Path>, r: &RunResult) -> Result<PathBuf> {
    if let Some(path) = output {
        let text = serde_json::to_string_pretty(r).map_err(|e| Error::failed(e.to_string()))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| Error::sys(format!("writing {}", path.display()), e))?;
    }
    slot.write(r)
}

fn config_preamble(
    host: &Host,
    out: Output,
    at: Placement,
    args: &RunArgs,
) -> (String, CheckCounts) {
    let ctx = crate::checks::Ctx {
        core: at.core,
        nic: args.nic.clone(),
        pid: None,
        smi_seconds: None,
    };
    let findings = crate::fix::reconcile::findings(host, &ctx);
    let sum = crate::report::check::summarize(&findings);
    let counts = CheckCounts {
        pass: sum.pass,
        fail: sum.fail,
        unknown: sum.unknown,
        failed: findings
            .iter()
            .filter(|f| f.status == crate::checks::Status::Fail)
            .map(|f| f.id.to_string())
            .collect(),
    };
    (
        crate::report::check::render_text(
            &crate::checks::machine_id::describe(host, &ctx),
            &ctx,
            &findings,
            out,
        ),
        counts,
    )
}

/// The machine and the invocation, recorded with the result for the report. The machine measured is this one,
/// also under --root (whose tree only the checks read): its name, CPU and command line are this machine's.
fn identity(checks: Option<CheckCounts>) -> Identity {
    use crate::machine;
    let host = &Host::live();
    let cpuinfo = host.read(machine::PROC_CPUINFO).unwrap_or_default();
    Identity {
        hostname: machine::hostname(host).unwrap_or_default(),
        cpu: crate::parse::cpuinfo::model(&cpuinfo).unwrap_or_default(),
        cpus: machine::online_cpus(host).map(|v| v.len()).unwrap_or(0),
        kernel_cmdline: host.read_trimmed(machine::PROC_CMDLINE).unwrap_or_default(),
        firmware: Some(crate::checks::firmware_id::read(host)),
        command: std::env::args()
            .map(|a| crate::parse::text::sanitize(&a, 200))
            .collect::<Vec<_>>()
            .join(" "),
        checks,
    }
}

/// Under --root: the checks read the tree, the measurement is of this machine. Said before it starts.
fn measured_here(root: &Host) -> String {
    let live = Host::live();
    format!(
        "Note: --root {} is read for the checks and to keep the results; the measurement runs on THIS machine \
         ({}, kernel {}), and its result records this machine.",
        root.root().display(),
        crate::machine::hostname(&live).unwrap_or_else(|| "unknown".into()),
        crate::measure::measured_kernel()
    )
}
