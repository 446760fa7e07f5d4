//! The "after" that measures itself after the reboot. When fix applied a change that waits for the next boot and
//! measured "before", it arms /var/lib/rmp-eval/after-boot.json (the before result and how it was measured).
//! rmp-eval-after-boot.service (enabled by the package, ConditionPathExists on that file) runs
//! `rmp-eval after-boot` at the next boot: it waits for the system to settle, runs the same measurement, saves it as
//! `after`, writes the before/after report (after-boot-report.txt, and the journal), and disarms itself by moving
//! the arm file to after-boot-done.json — so a second reboot measures nothing. `compare` without arguments shows
//! that pair; `check` says whether it is still pending; rollback disarms. The arm file itself (path, format,
//! read/write) is src/after_boot_state.rs, below `checks`, which reads it too.

use std::path::PathBuf;

use crate::after_boot_state::{self as state, ARMED, Armed, DONE};
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::spec::{Mode, RunSpec};
use crate::outln;
use crate::output::Output;
use crate::parse::defaults;

pub(crate) const REPORT: &str = "/var/lib/rmp-eval/after-boot-report.txt";
const SETTLE: &str = "RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS";

/// fix: the state to arm for a "before" saved at `before`, measured with `spec` on `core`.
pub(crate) fn armed(before: PathBuf, spec: &RunSpec, core: usize) -> Armed {
    Armed {
        version: 1,
        armed: crate::wallclock::rfc3339_now(),
        before,
        core,
        nic: spec.nic.clone(),
        mode: spec.mode.name().into(),
        period_us: spec.period_us,
        seconds: spec.duration.unwrap_or(10.0),
        after: None,
    }
}

/// The measurement the armed state describes (the same as fix's "before").
fn spec(a: &Armed) -> RunSpec {
    RunSpec {
        core: Some(a.core),
        nic: a.nic.clone(),
        mode: Mode::from_name(&a.mode).unwrap_or_default(),
        period_us: a.period_us,
        duration: Some(a.seconds),
        ..RunSpec::default()
    }
}

/// For compare without arguments: the before and after of the last after-boot measurement.
pub(crate) fn pair(host: &Host) -> Result<(PathBuf, PathBuf)> {
    if let Some(a) = state::pending(host) {
        return Err(Error::failed(format!(
            "the after-boot measurement fix armed at {} is still pending (it runs at the next boot); \
             give BEFORE and AFTER to compare other results",
            a.armed
        )));
    }
    match state::load(host, DONE)? {
        Some(Armed {
            before,
            after: Some(after),
            ..
        }) => Ok((before, after)),
        _ => Err(Error::usage(
            "nothing to compare: no after-boot measurement was made (give BEFORE and AFTER, e.g. `compare before last`)",
        )),
    }
}

/// `rmp-eval after-boot` (the unit's ExecStart).
pub(crate) fn execute(host: &Host, out: Output) -> Result<Outcome> {
    let Some(mut a) = state::load(host, ARMED)? else {
        outln!("after-boot: nothing armed");
        return Ok(Outcome::Good);
    };
    let settle = host
        .read(crate::commands::monitor::DEFAULTS)
        .ok()
        .and_then(|t| defaults::get(&t, SETTLE))
        .map_or(Ok(60.0), |v| {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && (0.0..=3600.0).contains(s))
                .ok_or_else(|| {
                    Error::usage(format!(
                        "{}: {SETTLE}={v}: not a number of seconds",
                        crate::commands::monitor::DEFAULTS
                    ))
                })
        })?;
    outln!(
        "after-boot: letting the system settle for {settle} s, then measuring {} s on CPU{}",
        a.seconds,
        a.core
    );
    std::thread::sleep(std::time::Duration::from_secs_f64(settle));
    let before = crate::measure::store::load(&a.before)?;
    let (after, apath) = crate::commands::run::measure(host, out, &spec(&a), true, "after")?;
    let c = crate::report::compare::compare(
        &before,
        &after,
        &a.before.display().to_string(),
        &apath.display().to_string(),
    );
    let text = crate::report::compare::render_text(&c, false);
    host.write_atomic(REPORT, text.as_bytes(), None)?;
    crate::out!("{text}");
    a.after = Some(apath);
    state::save(host, DONE, &a)?;
    host.remove_file(ARMED)?;
    outln!("after-boot: report in {REPORT}; disarmed (`rmp-eval compare` shows it again)");
    Ok(Outcome::Good)
}
