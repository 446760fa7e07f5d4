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
/// fix's own before and after, when it measured both without a reboot between: what bare `compare` shows when it
/// is newer than the after-boot pair.
pub(crate) const FIX_PAIR: &str = "/var/lib/rmp-eval/fix-pair.json";

/// fix's before and after results (both measured by fix, the changes applied between them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FixPair {
    pub(crate) version: u32,
    /// UTC, when fix measured the after.
    pub(crate) at: String,
    pub(crate) before: PathBuf,
    pub(crate) after: PathBuf,
}

/// fix: its after is measured and compared; bare `compare` will show this pair until a newer one exists.
pub(crate) fn record_fix_pair(host: &Host, before: PathBuf, after: PathBuf) -> Result<()> {
    let p = FixPair {
        version: 1,
        at: crate::wallclock::rfc3339_now(),
        before,
        after,
    };
    let text = serde_json::to_string_pretty(&p).map_err(|e| Error::failed(e.to_string()))?;
    host.write_atomic(FIX_PAIR, format!("{text}\n").as_bytes(), None)?;
    Ok(())
}

fn load_fix_pair(host: &Host) -> Result<Option<FixPair>> {
    match host.read(FIX_PAIR) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| Error::failed(format!("{FIX_PAIR}: {e}"))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Which pair bare `compare` chose, said before its table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chosen {
    pub(crate) before: PathBuf,
    pub(crate) after: PathBuf,
    pub(crate) what: String,
}

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

/// For compare without arguments: the newer of fix's own before/after and the last after-boot measurement's pair.
pub(crate) fn pair(host: &Host) -> Result<Chosen> {
    let fix = load_fix_pair(host)?;
    if let Some(a) = pending(host) {
        // A fix that waits for its reboot armed this after its own pair (if any) was measured.
        return Err(Error::failed(format!(
            "the after-boot measurement fix armed at {} is still pending (it runs at the next boot); \
             give BEFORE and AFTER to compare other results",
            a.armed
        )));
    }
    let boot = match load(host, DONE)? {
        Some(Armed {
            before,
            after: Some(after),
            armed,
            ..
        }) => Some((armed, before, after)),
        _ => None,
    };
    match (fix, boot) {
        (Some(f), Some((armed, _, _))) if f.at >= armed => Ok(from_fix(f)),
        (_, Some((armed, before, after))) => Ok(Chosen {
            before,
            after,
            what: format!(
                "the after-boot measurement of the fix of {armed}, against that fix's before"
            ),
        }),
        (Some(f), None) => Ok(from_fix(f)),
        (None, None) => Err(Error::usage(
            "nothing to compare: fix has not measured a before and after, and no after-boot measurement was made \
             (give BEFORE and AFTER, e.g. `compare before last`)",
        )),
    }
}

fn from_fix(f: FixPair) -> Chosen {
    Chosen {
        what: format!("fix's before and after of {}", f.at),
        before: f.before,
        after: f.after,
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

    #[test]
    fn bare_compare_takes_the_newer_of_fixs_pair_and_the_after_boot_pair() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        let e = pair(&host).unwrap_err().to_string();
        assert!(e.contains("nothing to compare"), "{e}");
        record_fix_pair(&host, "/r/b.json".into(), "/r/a.json".into()).unwrap();
        let c = pair(&host).unwrap();
        assert_eq!(
            (c.before, c.after),
            ("/r/b.json".into(), "/r/a.json".into())
        );
        assert!(
            c.what.starts_with("fix's before and after of "),
            "{}",
            c.what
        );
        // An after-boot pair armed later (a fix that needed a reboot) is the newer one.
        let mut done = sample();
        done.armed = "2999-01-01T00:00:00Z".into();
        done.after = Some("/r/after-boot.json".into());
        save(&host, DONE, &done).unwrap();
        let c = pair(&host).unwrap();
        assert_eq!(c.after, PathBuf::from("/r/after-boot.json"));
        assert!(c.what.contains("after-boot"), "{}", c.what);
        // An older after-boot pair loses to fix's own newer pair.
        done.armed = "2000-01-01T00:00:00Z".into();
        save(&host, DONE, &done).unwrap();
        assert_eq!(pair(&host).unwrap().after, PathBuf::from("/r/a.json"));
        // While an after-boot measurement is pending, nothing is guessed.
        arm(&host, &sample()).unwrap();
        assert!(
            pair(&host)
                .unwrap_err()
                .to_string()
                .contains("still pending")
        );
    }
}
