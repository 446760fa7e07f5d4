//! The journal: before fix writes anything, the previous state of every target (file bytes, mode, owner, or its
//! absence; kernel value) is recorded in /var/lib/rmp-eval/journal/NNNNNN.json and fsynced. rollback restores the
//! runs newest first, each in reverse order, and deletes them. A run killed midway is still complete enough to
//! undo: every target was recorded before the first change.

use serde::{Deserialize, Serialize};

use super::{Change, JOURNAL_DIR, ValueKind};
use crate::error::{Error, Result};
use crate::host::{FileMeta, Host};

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    File {
        path: String,
        previous: Option<SavedFile>,
    },
    Value {
        path: String,
        previous: String,
        value_kind: ValueKind,
        /// A kernel-managed IRQ may refuse even its old value (e.g. after a reboot): reported, not a failure.
        #[serde(default)]
        refusable: bool,
    },
    /// A NIC's ethtool field (only journaled on the live machine: under --root nothing is written).
    Ethtool {
        /// ethtool::target(nic, field), what apply and rollback match changes by.
        target: String,
        nic: String,
        field: super::ethtool::Field,
        previous: u32,
    },
}

impl Entry {
    pub fn path(&self) -> &str {
        match self {
            Entry::File { path, .. } | Entry::Value { path, .. } => path,
            Entry::Ethtool { target, .. } => target,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedFile {
    /// The bytes as text when they are UTF-8 (readable journal), else `hex`.
    pub text: Option<String>,
    pub hex: Option<String>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl SavedFile {
    fn new(bytes: Vec<u8>, m: FileMeta) -> Self {
        let (text, hex) = match String::from_utf8(bytes) {
            Ok(s) => (Some(s), None),
            Err(e) => (
                None,
                Some(e.as_bytes().iter().map(|b| format!("{b:02x}")).collect()),
            ),
        };
        SavedFile {
            text,
            hex,
            mode: m.mode,
            uid: m.uid,
            gid: m.gid,
        }
    }
    pub fn bytes(&self) -> Vec<u8> {
        if let Some(t) = &self.text {
            return t.as_bytes().to_vec();
        }
        let h = self.hex.as_deref().unwrap_or("");
        (0..h.len() / 2)
            .filter_map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok())
            .collect()
    }
    pub fn meta(&self) -> FileMeta {
        FileMeta {
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
        }
    }
}

/// Records the present state of every target of `changes` (each path once, as it is before the first change).
pub fn record(host: &Host, changes: &[&Change]) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    for c in changes {
        let entry = match c {
            Change::File { path, .. } => {
                let previous = match host.read_bytes(path) {
                    Ok(b) => Some(SavedFile::new(b, host.meta(path)?)),
                    Err(e) if e.is_not_found() => None,
                    Err(e) => return Err(e.into()),
                };
                Entry::File {
                    path: path.clone(),
                    previous,
                }
            }
            Change::Value {
                path,
                kind,
                refusable,
                ..
            } => Entry::Value {
                path: path.clone(),
                previous: host.read(path)?.trim().to_string(),
                value_kind: *kind,
                refusable: *refusable,
            },
            Change::Ethtool { .. } if !host.is_live() => continue,
            Change::Ethtool { nic, field, .. } => match super::ethtool::read(nic, *field) {
                Ok(previous) => Entry::Ethtool {
                    target: c.target(),
                    nic: nic.clone(),
                    field: *field,
                    previous,
                },
                // The driver has no such setting: the write will say so for its step; nothing to restore.
                Err(e) if super::ethtool::unsupported(&e) => continue,
                Err(e) => return Err(Error::sys(c.target(), e)),
            },
            Change::Command { .. } => continue,
        };
        if !entries.iter().any(|e| e.path() == entry.path()) {
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// Held while fix or rollback works: a second one at the same time would interleave journal runs.
pub fn lock(host: &Host) -> Result<nix::fcntl::Flock<std::fs::File>> {
    host.create_dir_all(JOURNAL_DIR)?;
    let dir =
        std::fs::File::open(host.path(JOURNAL_DIR)).map_err(|e| Error::sys(JOURNAL_DIR, e))?;
    nix::fcntl::Flock::lock(dir, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(
        |(_, errno)| {
            if errno == nix::errno::Errno::EWOULDBLOCK {
                Error::failed(
                    "another rmp-eval fix or rollback is running; try again when it has finished",
                )
            } else {
                Error::sys(format!("lock {JOURNAL_DIR}"), errno.into())
            }
        },
    )
}

/// Writes a new run and returns its path. The write is atomic and fsynced (file and directory).
pub fn create(host: &Host, run: &Run) -> Result<String> {
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

pub fn save(host: &Host, path: &str, run: &Run) -> Result<()> {
    let text =
        serde_json::to_string_pretty(run).map_err(|e| Error::failed(format!("journal: {e}")))?;
    host.write_atomic(path, format!("{text}\n").as_bytes(), None)?;
    Ok(())
}

fn list_names(host: &Host) -> Result<Vec<String>> {
    match host.list(JOURNAL_DIR) {
        Ok(v) => Ok(v
            .into_iter()
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect()),
        Err(e) if e.is_not_found() => Ok(vec![]),
        Err(e) => Err(e.into()),
    }
}

/// Every recorded run, oldest first.
pub fn load_all(host: &Host) -> Result<Vec<(String, Run)>> {
    let mut runs = Vec::new();
    for n in list_names(host)? {
        let path = format!("{JOURNAL_DIR}/{n}");
        let text = host.read(&path)?;
        let run: Run = serde_json::from_str(&text).map_err(|e| {
            Error::failed(format!(
                "{path}: not a journal rmp-eval can read ({e}); left in place"
            ))
        })?;
        runs.push((path, run));
    }
    Ok(runs)
}

/// Now, as yyyy-mm-ddThh:mm:ssZ.
pub fn utc_now() -> String {
    crate::wallclock::rfc3339_now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_files_survive_the_journal() {
        let m = FileMeta {
            mode: 0o600,
            uid: 0,
            gid: 0,
        };
        let f = SavedFile::new(vec![0xff, 0, b'a'], m.clone());
        assert!(f.text.is_none());
        let back: SavedFile = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back.bytes(), vec![0xff, 0, b'a']);
        assert_eq!(SavedFile::new(b"x\n".to_vec(), m).bytes(), b"x\n");
        let now = utc_now();
        assert_eq!(now.len(), 20);
        assert!(now.starts_with("20") && now.ends_with('Z'));
    }
}
