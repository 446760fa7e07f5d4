//! The directory kind: a directory fix created for a file it writes (e.g. /etc/default/grub.d). Journaled before
//! the file, so rollback removes it after the file — when nothing else was put in it since.

use serde::{Deserialize, Serialize};

use super::{How, Restored};
use crate::error::Result;
use crate::host::Host;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedDir {
    pub(crate) path: String,
}

/// The directories above `path` that do not exist yet, outermost first.
pub(crate) fn missing_parents(host: &Host, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = path;
    while let Some((parent, _)) = p.rsplit_once('/') {
        if parent.is_empty() || host.exists(parent) || host.is_symlink(parent) {
            break;
        }
        // The program's own state directory (the package creates it) is not the machine's to restore.
        if !crate::fix::JOURNAL_DIR.starts_with(parent) {
            out.push(parent.to_string());
        }
        p = parent;
    }
    out.reverse();
    out
}

pub(crate) fn restore(host: &Host, s: &SavedDir, how: How) -> Result<Restored> {
    preview_or_restore(host, s, how, &[])
}

/// The preview of `restore`, given the files the rollback removes before it comes to the directory (`removed`,
/// paths): what is left in it then decides, as in the real run.
pub(crate) fn preview(host: &Host, s: &SavedDir, removed: &[String]) -> Result<Restored> {
    let how = How {
        dry_run: true,
        force: false,
    };
    preview_or_restore(host, s, how, removed)
}

fn preview_or_restore(host: &Host, s: &SavedDir, how: How, removed: &[String]) -> Result<Restored> {
    if !host.is_dir(&s.path) {
        return Ok(Restored::Unchanged);
    }
    let left = host
        .list(&s.path)?
        .into_iter()
        .filter(|n| !removed.contains(&format!("{}/{n}", s.path)))
        .count();
    if left > 0 {
        return Ok(Restored::Kept(
            "created by fix, holds other files now: left".into(),
        ));
    }
    if !how.dry_run {
        host.remove_dir(&s.path)?;
    }
    Ok(Restored::Removed)
}
