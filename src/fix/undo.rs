//! Undoing journaled runs: each target put back as recorded, writing only what differs; a target someone
//! changed since fix is kept (command-line files: fix's parameters taken out) unless forced.

use super::journal::Run;
use super::kind::{self, Entry, How, Restored};
use crate::error::Error;
use crate::host::Host;

/// The command that undoes fix on `host`, as the user types it: under `--root DIR` the rollback must be given
/// the same root, or it would undo this machine's journal instead. The directory is quoted for a shell when it
/// needs it (it is only shown, never run).
pub(crate) fn hint(host: &Host) -> String {
    if host.is_live() {
        return "rmp-eval rollback".into();
    }
    let dir = host.root().display().to_string();
    let plain = !dir.is_empty()
        && dir
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@".contains(&b));
    let dir = if plain {
        dir
    } else {
        format!("'{}'", dir.replace('\'', r"'\''"))
    };
    format!("rmp-eval --root {dir} rollback")
}

/// What undoing one run did.
#[derive(Debug, Default)]
pub struct Undone {
    /// (target, what was done) for every entry, newest first.
    pub(crate) done: Vec<(String, Restored)>,
    /// Entries not restored: edited since fix (without force) or failed. The run keeps these.
    pub left: Vec<Entry>,
    pub problems: Vec<String>,
}

impl Undone {
    pub(crate) fn conflicts(&self) -> impl Iterator<Item = (&String, &String)> {
        self.done.iter().filter_map(|(t, r)| match r {
            Restored::Conflict(d) => Some((t, d)),
            _ => None,
        })
    }
}

/// Restores every entry of `run`, newest first. A value whose IRQ or interface no longer exists counts as
/// restored: there is nothing left to put back.
pub fn undo(host: &Host, run: &Run, how: How) -> Undone {
    let mut u = Undone::default();
    // Indices of the entries the run keeps: not restored, or a directory still holding a kept file.
    let mut keep = Vec::new();
    let mut kept_dirs = Vec::new();
    for (i, e) in run.entries.iter().enumerate().rev() {
        match kind::restore(host, e, how) {
            Ok(r @ Restored::Conflict(_)) => {
                keep.push(i);
                u.done.push((e.path().to_string(), r));
            }
            Ok(r @ Restored::Kept(_)) => {
                kept_dirs.push(i);
                u.done.push((e.path().to_string(), r));
            }
            Ok(r) => u.done.push((e.path().to_string(), r)),
            Err(Error::Host(h)) if h.is_not_found() && matches!(e, Entry::Value(_)) => {}
            // The interface is gone: nothing left to put back (its driver starts from defaults when it returns).
            Err(Error::Sys { source, .. })
                if source.raw_os_error() == Some(libc::ENODEV)
                    && matches!(e, Entry::Ethtool(_)) => {}
            Err(err) => {
                keep.push(i);
                u.problems.push(format!("{}: {err}", e.path()));
            }
        }
    }
    // A directory fix created goes with the last file of its own: while one is kept, so is the directory.
    if !keep.is_empty() {
        keep.extend(kept_dirs);
    }
    keep.sort_unstable();
    u.left = keep.into_iter().map(|i| run.entries[i].clone()).collect();
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_undo_hint_carries_the_root() {
        assert_eq!(hint(&Host::live()), "rmp-eval rollback");
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("snap-1");
        std::fs::create_dir(&plain).unwrap();
        assert_eq!(
            hint(&Host::with_root(&plain)),
            format!("rmp-eval --root {} rollback", plain.display())
        );
        let odd = d.path().join("it's here");
        std::fs::create_dir(&odd).unwrap();
        let h = hint(&Host::with_root(&odd));
        assert!(h.ends_with(r"/it'\''s here' rollback"), "{h}");
    }
}
