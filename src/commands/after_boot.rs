//! The "after" that measures itself after the reboot. When fix applied a change that waits for the next boot and
//! measured "before", it arms /var/lib/rmp-eval/after-boot.json (the before result and how it was measured).
//! rmp-eval-after-boot.service (enabled by the package, ConditionPathExists on that file) runs
//! `rmp-eval after-boot` at the next boot: it waits for the system to settle, runs the same measurement, saves it as
//! `after`, writes the before/after report (after-boot-report.txt, and the journal), and disarms itself by moving
//! the arm file to after-boot-done.json — so a second reboot measures nothing. `compare` without arguments shows
//! that pair; `check` says whether it is still pending; rollback disarms. The arm file itself (path, format,
//! read/write) is src/after_boot_state.rs, below `checks`, which reads it too.

use crate::after_boot_state::{self as state, ARMED, DONE};
use crate::error::{Outcome, Result};
use crate::host::Host;
use crate::measure::result::store::RunLabel;
use crate::measure::spec::RunSpec;
use crate::outln;
use crate::output::Output;
use std::io::Write;

pub(crate) const REPORT: &str = "/var/lib/rmp-eval/after-boot-report.txt";

/// `rmp-eval after-boot` (the unit's ExecStart).
pub(crate) fn execute(host: &Host, out: Output, w: &mut dyn Write) -> Result<Outcome> {
    // fix's trial boot first: it is judged by this boot (the unit's command, hence `from_unit`), before any
    // measurement, and made permanent or undone.
    crate::fix::trial::pending::resume(host, w, true)?;
    let Some(mut a) = state::load(host, ARMED)? else {
        outln!(w, "after-boot: nothing armed");
        return Ok(Outcome::Good);
    };
    outln!(
        w,
        "after-boot: measuring {} s on CPU{} once the boot has settled",
        a.seconds,
        a.core
    );
    crate::job::settle::wait(host, w, "after-boot")?;
    let before = crate::measure::result::store::load(&a.before)?;
    let (after, apath) = crate::job::measure_saved(
        host,
        out,
        w,
        &RunSpec::after_boot(&a),
        true,
        RunLabel::After,
    )?;
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
