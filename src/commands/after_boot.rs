//! The "after" that measures itself after the reboot. When fix applied a change that waits for the next boot and
//! measured "before", it arms /var/lib/rmp-eval/after-boot.json (the before result and how it was measured).
//! rmp-eval-after-boot.service (enabled by the package, ConditionPathExists on that file) runs
//! `rmp-eval after-boot` at the next boot: it waits for the system to settle, runs the same measurement, saves it as
//! `after`, writes the before/after report (after-boot-report.txt, and the journal), and disarms itself by moving
//! the arm file to after-boot-done.json — so a second reboot measures nothing. `compare` without arguments shows
//! that pair; `check` says whether it is still pending; rollback disarms. The arm file itself (path, format,
//! read/write) is src/after_boot_state.rs, below `checks`, which reads it too.

use crate::after_boot_state::{self as state, ARMED, DONE};
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::machine::RMP_EVAL_DEFAULTS as DEFAULTS;
use crate::measure::spec::RunSpec;
use crate::outln;
use crate::output::Output;
use crate::parse::defaults;
use std::io::Write;

pub(crate) const REPORT: &str = "/var/lib/rmp-eval/after-boot-report.txt";
const SETTLE: &str = "RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS";

/// `rmp-eval after-boot` (the unit's ExecStart).
pub(crate) fn execute(host: &Host, out: Output, w: &mut dyn Write) -> Result<Outcome> {
    // fix's trial boot first: it is judged by this boot (the unit's command, hence `from_unit`), before any
    // measurement, and made permanent or undone.
    crate::fix::trial::pending::resume(host, w, true)?;
    let Some(mut a) = state::load(host, ARMED)? else {
        outln!(w, "after-boot: nothing armed");
        return Ok(Outcome::Good);
    };
    let settle = host
        .read(DEFAULTS)
        .ok()
        .and_then(|t| defaults::get(&t, SETTLE))
        .map_or(Ok(60.0), |v| {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && (0.0..=3600.0).contains(s))
                .ok_or_else(|| {
                    Error::usage(format!(
                        "{}: {SETTLE}={v}: not a number of seconds",
                        DEFAULTS
                    ))
                })
        })?;
    outln!(
        w,
        "after-boot: letting the system settle for {settle} s, then measuring {} s on CPU{}",
        a.seconds,
        a.core
    );
    std::thread::sleep(std::time::Duration::from_secs_f64(settle));
    let before = crate::measure::result::store::load(&a.before)?;
    let (after, apath) =
        crate::job::measure_saved(host, out, w, &RunSpec::after_boot(&a), true, "after")?;
    let c = crate::report::compare::compare(
        &before,
        &after,
        &a.before.display().to_string(),
        &apath.display().to_string(),
    );
    let text = crate::report::compare::render_text(&c, false);
    host.write_atomic(REPORT, text.as_bytes(), None)?;
    crate::out!(w, "{text}");
    a.after = Some(apath);
    state::save(host, DONE, &a)?;
    host.remove_file(ARMED)?;
    outln!(
        w,
        "after-boot: report in {REPORT}; disarmed (`rmp-eval compare` shows it again)"
    );
    Ok(Outcome::Good)
}
