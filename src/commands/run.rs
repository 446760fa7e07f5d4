//! `run` (and the bare `rmp-eval`): validate everything, show the configuration checks, measure, print the final
//! report (or JSON), write --output, save under results/. Exit 0 when every sample is Great, 1 otherwise.

use std::io::Write;
use std::path::Path;

use crate::cli::RunArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::job::Job;
use crate::measure::result::store;
use crate::measure::result::{CheckCounts, RunResult, Verdict};
use crate::measure::spec::Workload;
use crate::measure::spec::{Placement, RunSpec};
use crate::output::Output;

/// Everything checked before anything starts: the CPUs, and where --output would be written.
pub(crate) fn validate(host: &Host, args: &RunArgs) -> Result<Placement> {
    let at = crate::job::place(host, &args.spec()?)?;
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

/// What is checked and prepared before anything is printed or made (the checks, the core's lock file in the
/// tree): the CPUs, the files to write, the metrics' destination, and permission for SCHED_FIFO.
fn prepare(
    host: &Host,
    args: &RunArgs,
) -> Result<(Placement, RunSpec, Option<crate::report::prometheus::Dest>)> {
    let at = validate(host, args)?;
    // A NIC run measures this machine's interface, which a tree does not have.
    if args.nic.is_some() && !host.is_live() {
        return Err(Error::usage("--nic measures the live machine: drop --root"));
    }
    let dest = args
        .prometheus
        .as_deref()
        .map(std::path::Path::new)
        .map(|d| crate::report::prometheus::Dest::resolve(host, d))
        .transpose()?;
    let spec = args.spec()?;
    // Before 40 lines of checks: a run without permission for SCHED_FIFO says so first.
    let priority = match spec.nic() {
        Some(_) => spec.send_priority.max(spec.receive_priority),
        None => spec.send_priority,
    };
    crate::measure::session::rt::probe_fifo(priority)?;
    Ok((at, spec, dest))
}

/// Under --root: what the run measures (this machine, or --hwlat's tracefs in the tree).
fn root_note(host: &Host, out: Output, w: &mut dyn Write, spec: &RunSpec) {
    let note = match spec.workload == Workload::Hwlat {
        true => format!(
            "Note: --root {}: --hwlat drives the tracefs under it (a tree, not this machine's kernel) and keeps \
             the results there.",
            host.root().display()
        ),
        false => measured_here(host),
    };
    crate::out!(
        w,
        "{}",
        crate::report::check::wrap(&note, out.width, "", "  ")
    );
}

/// The final report: JSON, or the table with what it was measured under.
fn show(w: &mut dyn Write, out: Output, args: &RunArgs, result: &RunResult) -> Result<()> {
    if args.json {
        let text =
            serde_json::to_string_pretty(result).map_err(|e| Error::failed(e.to_string()))?;
        crate::outln!(w, "{text}");
        return Ok(());
    }
    let columns = if out.terminal { out.width } else { usize::MAX };
    crate::out!(
        w,
        "{}",
        crate::report::run::render_final_in(result, out.color, columns)
    );
    let fit = |t: &str| crate::report::table::fit(t, columns);
    if let Some(l) = &result.load {
        crate::out!(
            w,
            "{}",
            fit(&format!("Measured under load: {}\n", l.command))
        );
    }
    if let (true, Some(rtt), Some(nic)) = (args.verbose, &result.rtt, &args.nic) {
        crate::out!(
            w,
            "{}",
            fit(&crate::report::run_rtt::render_stamps(rtt, nic))
        );
    }
    Ok(())
}

/// The exit of a run: its verdict.
fn outcome(result: &RunResult) -> Result<Outcome> {
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

pub(crate) fn execute(
    host: &Host,
    out: Output,
    w: &mut dyn Write,
    args: &RunArgs,
) -> Result<Outcome> {
    let (at, spec, dest) = prepare(host, args)?;
    let checks = if !args.no_config && !args.json {
        let (text, counts) = config_preamble(host, out, at, args);
        crate::outln!(w, "{text}");
        Some(counts)
    } else {
        None
    };
    if !host.is_live() && !args.json {
        root_note(host, out, w, &spec);
    }
    let job = Job {
        label: "run",
        quiet: args.json,
        resets: true,
        note_cgroup: !args.json,
        checks,
    };
    let measured = crate::job::measure(host, out, w, &spec, at, job)?;
    let result = &measured.result;
    show(w, out, args, result)?;
    let saved = measured.persist(args.output.as_deref())?;
    if let Some(d) = &dest {
        crate::report::prometheus::export_run(
            d,
            &crate::checks::machine_id::kernel_info(host),
            result,
            store::unix_now(),
        )?;
    }
    if !args.json {
        crate::outln!(w, "Saved: {}", saved.display());
    }
    let outcome = outcome(result);
    let _ = w.flush();
    crate::measure::rt::end_on(at.core);
    outcome
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

/// A measurement saved under results/ with `label`, as fix's before and after take it (`job::measure_saved`);
/// the integration tests call it through the library.
pub fn measure(
    host: &Host,
    out: Output,
    w: &mut dyn Write,
    spec: &crate::measure::spec::RunSpec,
    quiet: bool,
    label: &str,
) -> Result<(crate::measure::result::RunResult, std::path::PathBuf)> {
    crate::job::measure_saved(host, out, w, spec, quiet, label)
}
