//! fix's before and after: a measurement of --measure-seconds on the RT core either side of the changes, saved
//! under results/, compared and drawn on one page; when the changes wait for a reboot, the after-boot
//! measurement armed with the same spec.

use std::path::{Path, PathBuf};

use crate::cli::FixArgs;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::spec::RunSpec;
use crate::outln;
use crate::output::Output;

/// The after measurement, compared with `before` (text only; `undo` is said if it fails: the changes are in).
pub(super) fn after(
    host: &Host,
    out: Output,
    args: &FixArgs,
    before: &(RunResult, PathBuf),
    undo: &str,
) -> Result<()> {
    let (b, bpath) = before;
    let (a, apath) = measure(host, out, args, "after").map_err(|e| {
        Error::failed(format!(
            "the changes are applied (undo: `{undo}`), but the after measurement failed: {e}"
        ))
    })?;
    if !args.json {
        let c = crate::report::compare::compare(
            b,
            &a,
            &bpath.display().to_string(),
            &apath.display().to_string(),
        );
        crate::out!("{}", crate::report::compare::render_text(&c, out.color));
        // The page to hand on: both runs overlaid, beside the after result.
        let page = apath.with_extension("html");
        let pair = [
            ("before".to_string(), b.clone()),
            ("after".to_string(), a.clone()),
        ];
        match crate::commands::report::write(&pair, &page, None) {
            Ok(p) => outln!("Report: {}", p.display()),
            Err(e) => eprintln!("rmp-eval: note: the before/after report was not written: {e}"),
        }
    }
    Ok(())
}

/// Arms rmp-eval-after-boot.service to measure the "after" once the machine has rebooted into the changes.
pub(super) fn arm_after_boot(host: &Host, args: &FixArgs, before: &Path) -> Result<()> {
    crate::after_boot_state::arm(
        host,
        &crate::commands::after_boot::armed(before.to_path_buf(), &fix_spec(args), args.core),
    )
}

/// A measurement of --measure-seconds on the RT core (NIC mode with --nic), saved under results/ as `label`.
pub(super) fn measure(
    host: &Host,
    out: Output,
    args: &FixArgs,
    label: &str,
) -> Result<(RunResult, PathBuf)> {
    if !args.json {
        outln!(
            "Measuring {label} the changes for {} s on CPU {} …",
            args.measure_seconds,
            args.core
        );
    }
    crate::commands::run::measure(host, out, &fix_spec(args), args.json, label).map_err(|e| {
        if label == "before" {
            Error::failed(format!(
                "the before measurement failed, nothing was changed (--no-measure skips it): {e}"
            ))
        } else {
            e
        }
    })
}

/// What fix's before and after measure (and the after-boot measurement repeats).
fn fix_spec(args: &FixArgs) -> RunSpec {
    RunSpec {
        core: Some(args.core),
        nic: args.nic.clone(),
        duration: Some(args.measure_seconds),
        ..RunSpec::default()
    }
}
