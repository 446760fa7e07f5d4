//! The journal: before fix writes anything, the previous state of every target (file bytes, mode, owner, or its
//! absence; kernel value) is recorded in /var/lib/rmp-eval/journal/NNNNNN.json and fsynced. rollback restores the
//! runs newest first, each in reverse order, and deletes them. A run killed midway is still complete enough to
//! undo: every target was recorded before the first change.

use serde::{Deserialize, Serialize};

use super::JOURNAL_DIR;
pub use super::kind::Entry;
use crate::error::{Error, Result};
use crate::host::Host;

mod strict;
mod untrusted;

/// The journal format this version writes. Version 1 (no `written` fingerprints) is still read.
pub(crate) const VERSION: u32 = 2;
const READS: [u32; 2] = [1, 2];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub version: u32,
    /// UTC, yyyy-mm-ddThh:mm:ssZ.
    pub created: String,
    pub core: usize,
    pub nic: Option<String>,
    pub steps: Vec<String>,
    pub entries: Vec<Entry>,
    /// Programs to run after restoring (update-grub, systemctl try-restart …).
    pub after_restore: Vec<Vec<String>>,
    /// False while fix is applying; a run left false was interrupted.
    pub complete: bool,
}

/// Held while fix or rollback works, from before they read any state until they are done (prompts included): a
/// second one at the same time would plan on stale state or interleave journal runs.
pub(crate) fn lock(host: &Host) -> Result<crate::sys::fs::FileLock> {
    host.lock_tree()?.ok_or_else(|| {
        Error::failed("another rmp-eval fix or rollback is running; try again when it has finished")
    })
}

/// Writes a new run and returns its path. The write is atomic and fsynced (file and directory).
pub(crate) fn create(host: &Host, run: &Run) -> Result<String> {
    host.create_dir_all(JOURNAL_DIR)?;
    let next = list_names(host)?
        .iter()
        .filter_map(|n| n.strip_suffix(".json")?.parse::<u64>().ok())
        .max()
        .map_or(1, |n| n + 1);
    let path = format!("{JOURNAL_DIR}/{next:06}.json");
    save(host, &path, run)?;
    Ok(path)
}

pub(crate) fn to_bytes(run: &Run) -> Result<Vec<u8>> {
    let text =
        serde_json::to_string_pretty(run).map_err(|e| Error::failed(format!("journal: {e}")))?;
    Ok(format!("{text}\n").into_bytes())
}

pub(crate) fn save(host: &Host, path: &str, run: &Run) -> Result<()> {
    host.write_atomic(path, &to_bytes(run)?, None)?;
    Ok(())
}

/// Space set aside in the journal's directory before the first change, given back just before the journal's
/// last write (and before putting files back after a failure): on a nearly full disk that write must not be
/// the one that fails. A leftover of a killed run is removed like any stale temporary file.
pub(crate) struct Reserve(String);

impl Reserve {
    pub(crate) fn take(host: &Host, bytes: usize) -> Result<Reserve> {
        let path = format!("{JOURNAL_DIR}/.reserve.rmp-eval.{}", std::process::id());
        host.write_atomic(&path, &vec![0u8; bytes], None)?;
        Ok(Reserve(path))
    }
    pub(crate) fn release(&self, host: &Host) {
        let _ = host.remove_file(&self.0);
    }
}

/// The runs' names, oldest first: by their number (999999.json before 1000000.json), then any other name.
fn list_names(host: &Host) -> Result<Vec<String>> {
    let mut names: Vec<String> = match host.list(JOURNAL_DIR) {
        Ok(v) => v
            .into_iter()
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect(),
        Err(e) if e.is_not_found() => vec![],
        Err(e) => return Err(e.into()),
    };
    let number = |n: &str| n.strip_suffix(".json").and_then(|d| d.parse::<u64>().ok());
    names.sort_by(|a, b| match (number(a), number(b)) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    });
    Ok(names)
}

/// One run, decoded strictly: a version this program does not read, a key given twice, any entry it cannot
/// restore exactly (bad hex, no content) or must never restore (see `untrusted`), is an error naming the file.
pub(crate) fn parse(path: &str, text: &str) -> Result<Run> {
    let bad = |why: String| {
        Error::failed(format!(
            "{path}: not a journal rmp-eval can read ({why}); nothing was changed, the file is left in place"
        ))
    };
    let v = serde_json::from_str::<strict::NoDuplicates>(text)
        .map_err(|e| bad(e.to_string()))?
        .0;
    match v.get("version").and_then(serde_json::Value::as_u64) {
        Some(n) if READS.iter().any(|&r| u64::from(r) == n) => {}
        Some(n) => {
            return Err(bad(format!(
                "version {n}; this rmp-eval reads versions 1 and 2"
            )));
        }
        None => return Err(bad("no version".into())),
    }
    let run: Run = serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
    for e in &run.entries {
        untrusted::entry(e).map_err(bad)?;
    }
    Ok(run)
}

/// Every recorded run, oldest first.
pub fn load_all(host: &Host) -> Result<Vec<(String, Run)>> {
    let mut runs = Vec::new();
    for n in list_names(host)? {
        let path = format!("{JOURNAL_DIR}/{n}");
        let text = host.read_bytes(&path)?;
        let text = String::from_utf8(text).map_err(|_| {
            Error::failed(format!("{path}: not UTF-8, not a journal; left in place"))
        })?;
        runs.push((path.clone(), parse(&path, &text)?));
    }
    Ok(runs)
}

/// Removes what a killed fix or rollback left half-written: temporary files beside the journal, the state
/// files and every file the runs name. Returns the paths removed.
pub(crate) fn remove_stale_temps(
    host: &Host,
    runs: &[(String, Run)],
    also: &[&str],
) -> Vec<String> {
    let mut files: Vec<String> = vec![
        format!("{JOURNAL_DIR}/x"),
        format!("{}/x", super::STATE_DIR),
    ];
    files.extend(also.iter().map(|s| s.to_string()));
    for (_, r) in runs {
        files.extend(r.entries.iter().map(|e| e.path().to_string()));
    }
    files
        .iter()
        .flat_map(|f| host.remove_stale_temps(f))
        .collect()
}

/// The line that reports a cleanup of stale temporary files, when there was one.
pub(crate) fn removed_temps_line(removed: &[String]) -> Option<String> {
    (!removed.is_empty()).then(|| {
        format!(
            "Removed {} temporary file(s) a killed fix or rollback had left: {}",
            removed.len(),
            removed.join(", ")
        )
    })
}

/// The journal held for a change: locked before it is read and until the work is done (prompts included), so
/// that no other fix or rollback plans on what this one is changing.
pub(crate) struct Held {
    _lock: crate::sys::fs::FileLock,
    pub(crate) runs: Vec<(String, Run)>,
}

impl Held {
    /// Locks, then reads every run; `unreadable` says what a journal that cannot be read means to the caller.
    pub(crate) fn take(host: &Host, unreadable: impl FnOnce(Error) -> Error) -> Result<Held> {
        let lock = lock(host)?;
        Ok(Held {
            _lock: lock,
            runs: load_all(host).map_err(unreadable)?,
        })
    }

    /// Removes what a killed fix or rollback left half-written; the line that says so, when there was any.
    pub(crate) fn clean_temps(&self, host: &Host) -> Option<String> {
        let removed = remove_stale_temps(host, &self.runs, &super::known_targets());
        removed_temps_line(&removed)
    }
}

/// Now, as yyyy-mm-ddThh:mm:ssZ.
pub fn utc_now() -> String {
    crate::wallclock::rfc3339_now()
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = r#"{"version":1,"created":"2026-01-01T00:00:00Z","core":1,"nic":null,"steps":["sysctl"],
      "entries":[{"kind":"file","path":"/etc/x","previous":{"text":"a\n","hex":null,"mode":420,"uid":0,"gid":0}},
                 {"kind":"value","path":"/proc/sys/kernel/timer_migration","previous":"1","value_kind":"exact"}],
      "after_restore":[],"complete":true}"#;

    #[test]
    fn version_1_reads_unknown_versions_and_bad_content_do_not() {
        let r = parse("j", V1).unwrap();
        assert_eq!(r.entries.len(), 2);
        let e = parse("/j/7.json", &V1.replace("\"version\":1", "\"version\":9")).unwrap_err();
        assert!(
            e.to_string().contains("/j/7.json") && e.to_string().contains("version 9"),
            "{e}"
        );
        let e = parse("j", &V1.replace("\"text\":\"a\\n\"", "\"text\":null")).unwrap_err();
        assert!(e.to_string().contains("no content"), "{e}");
        assert!(
            parse(
                "j",
                &V1.replace(
                    "\"text\":\"a\\n\",\"hex\":null",
                    "\"text\":null,\"hex\":\"6g\""
                )
            )
            .is_err()
        );
        let now = utc_now();
        assert_eq!(now.len(), 20);
        assert!(now.starts_with("20") && now.ends_with('Z'));
    }

    #[test]
    fn a_journal_from_anyone_cannot_make_rollback_write_what_fix_never_writes() {
        let refused = |from: &str, to: &str, why: &str| {
            let e = parse("/j/1.json", &V1.replace(from, to))
                .unwrap_err()
                .to_string();
            assert!(e.contains("/j/1.json") && e.contains(why), "{to}: {e}");
        };
        // 04755 is 2541: a setuid file.
        refused("\"mode\":420", "\"mode\":2541", "setuid");
        refused("\"mode\":420", "\"mode\":4095", "setuid");
        refused("\"/etc/x\"", "\"/etc/shadow\"", "never writes");
        refused("\"/etc/x\"", "\"/etc/sudoers.d/99-x\"", "never writes");
        refused("\"/etc/x\"", "\"/etc/passwd\"", "never writes");
        refused("\"/etc/x\"", "\"/etc/../etc/shadow\"", "`..`");
        refused("\"/etc/x\"", "\"etc/x\"", "absolute");
        refused(
            "\"/proc/sys/kernel/timer_migration\"",
            "\"/proc/sys/../../etc/x\"",
            "`..`",
        );
        // The same key twice: serde_json would keep the second mode silently.
        refused("\"mode\":420", "\"mode\":420,\"mode\":2541", "twice");
        refused("\"version\":1", "\"version\":1,\"version\":1", "twice");
    }

    #[test]
    fn runs_are_ordered_by_their_number_not_their_name() {
        let d = tempfile::tempdir().unwrap();
        let host = Host::with_root(d.path());
        let dir = d.path().join(JOURNAL_DIR.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        for (n, core) in [("1000000", 3), ("999999", 2), ("000010", 1)] {
            std::fs::write(
                dir.join(format!("{n}.json")),
                V1.replace("\"core\":1", &format!("\"core\":{core}")),
            )
            .unwrap();
        }
        let cores: Vec<usize> = load_all(&host)
            .unwrap()
            .iter()
            .map(|(_, r)| r.core)
            .collect();
        assert_eq!(cores, [1, 2, 3]);
        assert!(
            create(&host, &parse("j", V1).unwrap())
                .unwrap()
                .ends_with("/1000001.json")
        );
    }
}
