//! Undoing journaled runs: each target put back as recorded, writing only what differs; a target someone
//! changed since fix is kept (command-line files: fix's parameters taken out) unless forced.

use super::journal::Run;
use super::kind::{self, Entry, How, Restored};
use crate::error::Error;
use crate::host::Host;

/// Whether parameters the user added to fix's command-line state file stay in it through a rollback: then the
/// GRUB drop-in fix made, which hands that file to GRUB, stays too — else they would stop taking effect while the
/// file still holds them, and the next fix would bring them back unasked. Fed every entry of a run in the order
/// they are restored (the state file comes before the drop-in, which was journaled first).
#[derive(Default)]
pub(crate) struct UsersParams {
    state_restored: bool,
    kept: Option<String>,
}

impl UsersParams {
    pub(crate) fn saw(&mut self, e: &Entry, r: &Restored) {
        if e.path() != super::CMDLINE_STATE {
            return;
        }
        self.state_restored = true;
        if let Restored::Merged(k) = r
            && k.split(' ').any(|t| t.starts_with('+'))
        {
            self.kept = Some(k.clone());
        }
    }

    /// What becomes of `e` instead of its restore: kept, when it is a GRUB drop-in fix created and the state file
    /// keeps the user's parameters (this rollback merged them, or an earlier one did and they are still there).
    pub(crate) fn keeps(&self, host: &Host, e: &Entry) -> Option<Restored> {
        let Entry::File(f) = e else { return None };
        if f.previous_bytes().is_some()
            || !crate::tunable::cmdline::boot::grub_layout::is_our_dropin_path(&f.path)
        {
            return None;
        }
        let params = match &self.kept {
            Some(k) => k.clone(),
            None if !self.state_restored => {
                let now = host.read(super::CMDLINE_STATE).unwrap_or_default();
                let toks = crate::tunable::cmdline::boot::tokens::tokens(&now);
                if toks.is_empty() {
                    return None;
                }
                toks.join(" ")
            }
            None => return None,
        };
        Some(Restored::Kept(format!(
            "kept: it hands the parameters you added to {} ({params}) to GRUB, so that they still take effect; \
             to drop them, take them out of that file and run `rmp-eval rollback` again (it then removes this \
             file)",
            super::CMDLINE_STATE
        )))
    }
}

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
    let mut users = UsersParams::default();
    for (i, e) in run.entries.iter().enumerate().rev() {
        if let Some(r) = users.keeps(host, e) {
            // Stays in the journal: the next rollback removes it once the user's parameters are gone.
            keep.push(i);
            u.done.push((e.path().to_string(), r));
            continue;
        }
        let restored = kind::restore(host, e, how);
        if let Ok(r) = &restored {
            users.saw(e, r);
        }
        match restored {
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
