//! The "after" that measures itself after the reboot. When fix applied a change that waits for the next boot and
//! measured "before", it arms /var/lib/rmp-eval/after-boot.json (the before result and how it was measured).
//! rmp-eval-after-boot.service (enabled by the package, ConditionPathExists on that file) runs
//! `rmp-eval after-boot` at the next boot: it waits for the system to settle, runs the same measurement, saves it as
//! `after`, writes the before/after report (after-boot-report.txt, and the journal), and disarms itself by moving
//! the arm file to after-boot-done.json — so a second reboot measures nothing. `compare` without arguments shows
//! that pair; `check` says whether it is still pending; rollback disarms. The arm file is rmp-eval's own state
//! (like results/), not a machine setting: it is not in fix's journal, and rollback removes it itself.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::measure::spec::{Mode, RunSpec};
use crate::outln;
use crate::output::Output;
use crate::parse::defaults;

pub(crate) const ARMED: &str = "/var/lib/rmp-eval/after-boot.json";
pub(crate) const DONE: &str = "/var/lib/rmp-eval/after-boot-done.json";
pub(crate) const REPORT: &str = "/var/lib/rmp-eval/after-boot-report.txt";
const SETTLE: &str = "RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS";

/// What fix measured "before" with, and where it saved it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Armed {
    pub(crate) version: u32,
    /// UTC, when fix armed it.
    pub(crate) armed: String,
    pub(crate) before: PathBuf,
    pub(crate) core: usize,
    pub(crate) nic: Option<String>,
    /// "ecat", "raw" or "udp" (NIC mode only).
    pub(crate) mode: String,
    pub(crate) period_us: u32,
    pub(crate) seconds: f64,
    /// The after result, once measured (in after-boot-done.json).
    #[serde(default)]
    pub(crate) after: Option<PathBuf>,
}

impl Armed {
    pub(crate) fn new(before: PathBuf, spec: &RunSpec, core: usize) -> Armed {
        Armed {
            version: 1,
            armed: crate::measure::store::rfc3339(crate::measure::store::unix_now()),
            before,
            core,
            nic: spec.nic.clone(),
            mode: spec.mode.name().into(),
            period_us: spec.period_us,
            seconds: spec.duration.unwrap_or(10.0),
            after: None,
        }
    }

    fn spec(&self) -> RunSpec {
        RunSpec {
            core: Some(self.core),
            nic: self.nic.clone(),
            mode: Mode::from_name(&self.mode).unwrap_or_default(),
            period_us: self.period_us,
            duration: Some(self.seconds),
            ..RunSpec::default()
        }
    }
}

fn load(host: &Host, path: &str) -> Result<Option<Armed>> {
    match host.read(path) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| Error::failed(format!("{path}: {e}"))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn save(host: &Host, path: &str, a: &Armed) -> Result<()> {
    let text = serde_json::to_string_pretty(a).map_err(|e| Error::failed(e.to_string()))?;
    host.write_atomic(path, format!("{text}\n").as_bytes(), None)?;
    Ok(())
}

/// fix: arm the measurement for the next boot (a later fix re-arms with its own before).
pub(crate) fn arm(host: &Host, a: &Armed) -> Result<()> {
    save(host, ARMED, a)
}

/// rollback: nothing is measured at the next boot any more. True when it was armed.
pub(crate) fn disarm(host: &Host) -> Result<bool> {
    if !host.exists(ARMED) {
        return Ok(false);
    }
    host.remove_file(ARMED)?;
    Ok(true)
}

/// For check: Some(armed) while the after-boot measurement is pending.
pub(crate) fn pending(host: &Host) -> Option<Armed> {
    load(host, ARMED).ok().flatten()
}

/// For compare without arguments: the before and after of the last after-boot measurement.
pub(crate) fn pair(host: &Host) -> Result<(PathBuf, PathBuf)> {
    if let Some(a) = pending(host) {
        return Err(Error::failed(format!(
            "the after-boot measurement fix armed at {} is still pending (it runs at the next boot); \
             give BEFORE and AFTER to compare other results",
            a.armed
        )));
    }
    match load(host, DONE)? {
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
    let Some(mut a) = load(host, ARMED)? else {
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
    let (after, apath) = crate::commands::run::measure(host, out, &a.spec(), true, "after")?;
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
    save(host, DONE, &a)?;
    host.remove_file(ARMED)?;
    outln!("after-boot: report in {REPORT}; disarmed (`rmp-eval compare` shows it again)");
    Ok(Outcome::Good)
}
