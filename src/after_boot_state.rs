//! The after-boot measurement's state file: /var/lib/rmp-eval/after-boot.json while armed, moved to
//! after-boot-done.json once measured. Its path, format and read/write live here, below `checks`, because three
//! layers use it: `fix` arms it (commands/fix/measure.rs), `rmp-eval after-boot` measures and disarms it
//! (commands/after_boot.rs; measure/spec.rs turns it into a run spec and back), `compare` without arguments
//! shows its pair, and the after_boot check reports it
//! (checks/after_boot.rs). It is rmp-eval's own state (like results/), not a machine setting: it is not in fix's
//! journal, and rollback removes it itself.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::host::Host;

pub(crate) const ARMED: &str = "/var/lib/rmp-eval/after-boot.json";
pub(crate) const DONE: &str = "/var/lib/rmp-eval/after-boot-done.json";

/// What fix measured "before" with, and where it saved it. Plain fields (not a `RunSpec`): the file is a format,
/// and the measurement's types live a layer above.
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

/// The armed (`ARMED`) or measured (`DONE`) state; None when the file is absent.
pub(crate) fn load(host: &Host, path: &str) -> Result<Option<Armed>> {
    match host.read(path) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| Error::failed(format!("{path}: {e}"))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn save(host: &Host, path: &str, a: &Armed) -> Result<()> {
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

/// Some(armed) while the after-boot measurement is pending (an unreadable file counts as not pending).
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

/// Whether an after-boot measurement was made (after-boot-done.json exists).
pub(crate) fn measured(host: &Host) -> bool {
    host.exists(DONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Armed {
        Armed {
            version: 1,
            armed: "2026-12-03T13:50:00Z".into(),
            before: "/var/lib/rmp-eval/results/before.json".into(),
            core: 1,
            nic: None,
            mode: "ecat".into(),
            period_us: 1000,
            seconds: 10.0,
            after: None,
        }
    }

    #[test]
    fn arm_pending_disarm_round_trip_under_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        assert_eq!(pending(&host), None);
        assert!(!disarm(&host).unwrap());
        arm(&host, &sample()).unwrap();
        assert!(dir.path().join("var/lib/rmp-eval/after-boot.json").exists());
        assert_eq!(pending(&host), Some(sample()));
        assert!(!measured(&host));
        assert!(disarm(&host).unwrap());
        assert_eq!(pending(&host), None);
    }

    #[test]
    fn a_file_without_after_reads_and_a_broken_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        let mut text = serde_json::to_value(sample()).unwrap();
        text.as_object_mut().unwrap().remove("after");
        std::fs::create_dir_all(dir.path().join("var/lib/rmp-eval")).unwrap();
        std::fs::write(
            dir.path().join("var/lib/rmp-eval/after-boot-done.json"),
            text.to_string(),
        )
        .unwrap();
        assert_eq!(load(&host, DONE).unwrap(), Some(sample()));
        assert!(measured(&host));
        std::fs::write(dir.path().join("var/lib/rmp-eval/after-boot.json"), "{").unwrap();
        assert!(load(&host, ARMED).is_err());
        assert_eq!(pending(&host), None);
    }
}
