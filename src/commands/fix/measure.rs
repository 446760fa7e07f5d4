//! fix's before and after: a measurement of --measure-seconds on the RT core either side of the changes, saved
//! under results/, compared and drawn on one page; when the changes wait for a reboot, the after-boot
//! measurement armed with the same spec. Both cover the whole length (no reset restarts them); a before stopped
//! early stops fix before any change, an after stopped early is not compared.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::FixArgs;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::result::store::RunLabel;
use crate::measure::spec::{NicSpec, RunSpec, Workload};
use crate::outln;
use crate::output::Output;

/// The after measurement, compared with `before` (text only; `undo` is said if it fails: the changes are in).
pub(super) fn after(
    w: &mut dyn Write,
    host: &Host,
    out: Output,
    args: &FixArgs,
    core: usize,
    before: &(RunResult, PathBuf),
    undo: &str,
) -> Result<()> {
    let (b, bpath) = before;
    let (a, apath) = measure(w, host, out, args, core, RunLabel::After).map_err(|e| {
        Error::failed(format!(
            "the changes are applied (undo: `{undo}`), but the after measurement failed: {e}"
        ))
    })?;
    if let Some(why) = cut_short(&a, args) {
        // The pair would differ in length: compare would rank the runs, not the changes.
        if !args.json {
            let nic = args
                .nic
                .as_ref()
                .map(|n| format!(" --nic={n}"))
                .unwrap_or_default();
            outln!(
                w,
                "No comparison: {why}, so it is shorter than the before. The changes are applied (undo: `{undo}`); \
                 measure again with `rmp-eval run --core {}{nic} --duration {}` and `rmp-eval compare {} last`.",
                core,
                args.measure_seconds,
                bpath.display()
            );
        }
        return Ok(());
    }
    // Bare `compare` shows this pair from now on; a failure to record it costs only that.
    if let Err(e) = crate::after_boot_state::record_fix_pair(host, bpath.clone(), apath.clone()) {
        eprintln!(
            "rmp-eval: note: `rmp-eval compare` without arguments will not find this pair: {e}"
        );
    }
    if !args.json {
        show_pair(w, out, (b, bpath), (&a, &apath));
    }
    Ok(())
}

/// The comparison of before and after on the terminal, and the page to hand on: both runs overlaid, beside the
/// after result.
fn show_pair(
    w: &mut dyn Write,
    out: Output,
    (b, bpath): (&RunResult, &Path),
    (a, apath): (&RunResult, &Path),
) {
    let c = crate::report::compare::compare(
        b,
        a,
        &bpath.display().to_string(),
        &apath.display().to_string(),
    );
    crate::out!(w, "{}", crate::report::compare::render_text(&c, out.color));
    let page = apath.with_extension("html");
    let pair = [
        (RunLabel::Before.to_string(), b.clone()),
        (RunLabel::After.to_string(), a.clone()),
    ];
    match crate::report::html::write(&pair, &page, None) {
        Ok(p) => outln!(w, "Report: {}", p.display()),
        Err(e) => eprintln!("rmp-eval: note: the before/after report was not written: {e}"),
    }
}

/// Arms rmp-eval-after-boot.service to measure the "after" once the machine has rebooted into the changes.
pub(super) fn arm_after_boot(
    host: &Host,
    args: &FixArgs,
    core: usize,
    before: &Path,
) -> Result<()> {
    crate::after_boot_state::arm(
        host,
        &fix_spec(args, core).armed(before.to_path_buf(), core),
    )
}

/// A measurement of --measure-seconds on the RT core (NIC mode with --nic), saved under results/ as `label`.
pub(super) fn measure(
    w: &mut dyn Write,
    host: &Host,
    out: Output,
    args: &FixArgs,
    core: usize,
    label: RunLabel,
) -> Result<(RunResult, PathBuf)> {
    if !args.json {
        outln!(
            w,
            "Measuring {label} the changes for {} s on CPU {} …",
            args.measure_seconds,
            core
        );
    }
    let before = label == RunLabel::Before;
    let (r, path) = crate::job::measure_saved(
        host,
        out,
        w,
        &fix_spec(args, core),
        args.json,
        label,
    )
    .map_err(|e| {
        if before {
            Error::failed(format!(
                "the before measurement failed, nothing was changed (--no-measure skips it): {e}"
            ))
        } else {
            e
        }
    })?;
    // A before cut short (q, Ctrl+C, SIGTERM) is no baseline, and the user asked to stop: fix stops too.
    if let (true, Some(why)) = (before, cut_short(&r, args)) {
        return Err(Error::failed(format!(
            "{why}: nothing was changed (saved: {}; --no-measure skips the measurements)",
            path.display()
        )));
    }
    Ok((r, path))
}

/// Why `r` does not cover fix's whole measurement: stopped early or unable to finish.
fn cut_short(r: &RunResult, args: &FixArgs) -> Option<String> {
    let label = &r.label;
    if let Some(e) = &r.error {
        return Some(format!("the {label} measurement could not finish ({e})"));
    }
    r.interrupted.then(|| {
        format!(
            "the {label} measurement was stopped after {:.1} s of {} s (q, Ctrl+C or SIGTERM)",
            r.duration_s, args.measure_seconds
        )
    })
}

/// What fix's before and after measure (and the after-boot measurement repeats).
fn fix_spec(args: &FixArgs, core: usize) -> RunSpec {
    RunSpec {
        core: Some(core),
        workload: match &args.nic {
            Some(n) => Workload::Nic(NicSpec::new(n.clone())),
            None => Workload::Cyclic,
        },
        duration: Some(args.measure_seconds),
        ..RunSpec::default()
    }
}
