//! The file kind: create, replace or remove one file. Journaled: the previous bytes, mode and owner (of the
//! link's target for a symbolic link: the write goes through the link), the directories the write creates, and
//! what fix wrote, so that rollback notices a later edit: a command-line file gets fix's parameters taken out and
//! the edit kept; any other file is refused (a diff of the edit) unless --force.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use similar::TextDiff;

use super::file_content::{Content, SavedFile};
use super::{Entry, How, Restored, Took, dir};
use crate::error::Result;
use crate::host::{FileMeta, Host};
use crate::tunable::cmdline::boot::{grub_trial, tokens};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub(crate) path: String,
    /// None: the file does not exist.
    pub(crate) before: Option<Vec<u8>>,
    /// None: the file is removed.
    pub(crate) after: Option<Vec<u8>>,
    /// The mode of a file this change creates (an existing file keeps its own mode and owner).
    pub(crate) mode: u32,
    pub(crate) reboot: bool,
    /// For a kernel command-line file: the parameters fix puts in and those they replace.
    pub(crate) cmdline: Option<CmdlineEdit>,
}

impl FileChange {
    /// A file set to `after` (created with mode 0644 when absent).
    pub(crate) fn new(path: &str, before: Option<Vec<u8>>, after: Vec<u8>, reboot: bool) -> Self {
        FileChange {
            path: path.into(),
            before,
            after: Some(after),
            mode: 0o644,
            reboot,
            cmdline: None,
        }
    }
}

/// The parameters a command-line change adds, and the ones of the same names it replaces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CmdlineEdit {
    pub(crate) added: Vec<String>,
    pub(crate) replaced: Vec<String>,
}

/// The journal entry of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedWrite {
    pub(crate) path: String,
    /// None: the file did not exist.
    pub(crate) previous: Option<SavedFile>,
    /// What fix wrote (not in journals of version 1, nor when fix removed the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) written: Option<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cmdline: Option<CmdlineEdit>,
}

impl SavedWrite {
    /// The file's bytes before fix (None: it did not exist).
    pub(crate) fn previous_bytes(&self) -> Option<&[u8]> {
        self.previous.as_ref().map(|p| p.content.bytes())
    }
    /// What fix wrote (None: removed, or a version 1 journal).
    pub(crate) fn written_bytes(&self) -> Option<&[u8]> {
        self.written.as_ref().map(Content::bytes)
    }
}

pub(crate) fn record(host: &Host, c: &FileChange) -> Result<Vec<Entry>> {
    let mut out: Vec<Entry> = dir::missing_parents(host, &c.path)
        .into_iter()
        .map(|path| Entry::Dir(dir::SavedDir { path }))
        .collect();
    // Refuses a link to nothing or to a directory now, before anything is changed.
    host.write_target(&c.path)?;
    let previous = match host.read_bytes(&c.path) {
        Ok(b) => Some(SavedFile::new(b, host.target_meta(&c.path)?)),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    out.push(Entry::File(SavedWrite {
        path: c.path.clone(),
        previous,
        written: c.after.clone().map(Content::new),
        cmdline: c.cmdline.clone(),
    }));
    Ok(out)
}

pub(crate) fn apply(host: &Host, c: &FileChange) -> Result<Took> {
    match &c.after {
        Some(bytes) => {
            // An existing file keeps its mode and owner; a new one gets the change's mode, owned by us.
            let (uid, gid) = crate::sys::process::effective_ids();
            let new = FileMeta {
                mode: c.mode,
                uid,
                gid,
            };
            let meta = host.target_meta(&c.path).ok();
            host.write_atomic(&c.path, bytes, Some(meta.as_ref().unwrap_or(&new)))?;
        }
        None => match host.remove_file(&c.path) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        },
    }
    Ok(Took::Took)
}

pub(crate) fn verify(host: &Host, c: &FileChange) -> Took {
    let now = host.read_bytes(&c.path).ok();
    if now == c.after {
        Took::Took
    } else {
        Took::Differs(now.map_or("absent".into(), |b| {
            format!("{} bytes, not as written", b.len())
        }))
    }
}

/// Puts the file back as recorded. A file no longer as fix wrote it: a command-line file keeps the edit (fix's
/// parameters taken out), any other is a conflict unless `force`.
pub(crate) fn restore(host: &Host, s: &SavedWrite, how: How) -> Result<Restored> {
    let now = match host.read_bytes(&s.path) {
        Ok(b) => Some(b),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    let prev = s.previous.as_ref().map(|p| p.content.bytes());
    let same_meta = || match &s.previous {
        Some(p) => host.target_meta(&s.path).ok() == Some(p.meta()),
        None => true,
    };
    if now.as_deref() == prev && same_meta() {
        return Ok(Restored::Unchanged);
    }
    let edited = match (&s.written, &now) {
        (Some(w), Some(n)) => {
            w.bytes() != n.as_slice() && !grub_trial::cleared_by_grub(&s.path, w.bytes(), n)
        }
        (Some(_), None) => true,
        (None, _) => false,
    };
    if edited && !how.force {
        let written = s.written.as_ref().map(|w| w.bytes().to_vec());
        if let (Some(edit), Some(n), Some(w)) = (&s.cmdline, &now, &written) {
            let (merged, kept) = tokens::take_out(n, w, edit);
            if !how.dry_run {
                let meta = s.previous.as_ref().map(SavedFile::meta);
                host.write_atomic(&s.path, &merged, meta.as_ref())?;
            }
            return Ok(Restored::Merged(kept));
        }
        return Ok(Restored::Conflict(diff(&s.path, &written, &now)));
    }
    match &s.previous {
        None => {
            if !how.dry_run {
                host.remove_file(&s.path)?;
            }
            Ok(Restored::Removed)
        }
        Some(p) => {
            if !how.dry_run {
                host.write_atomic(&s.path, p.content.bytes(), Some(&p.meta()))?;
            }
            Ok(Restored::Written(format!(
                "{} bytes, mode {:o}",
                p.content.bytes().len(),
                p.mode
            )))
        }
    }
}

fn lossy(b: &Option<Vec<u8>>) -> Option<String> {
    b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned())
}

/// A unified diff (a/ and b/ headers, /dev/null for an absent file).
pub(crate) fn diff(path: &str, before: &Option<Vec<u8>>, after: &Option<Vec<u8>>) -> String {
    let (a, b) = (
        lossy(before).unwrap_or_default(),
        lossy(after).unwrap_or_default(),
    );
    let old = if before.is_some() {
        format!("a{path}")
    } else {
        "/dev/null".into()
    };
    let new = if after.is_some() {
        format!("b{path}")
    } else {
        "/dev/null".into()
    };
    TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string()
}

/// New files longer than this show their first lines only in the text plan (the JSON plan has the whole diff).
const NEW_FILE_LINES: usize = 12;

pub(crate) fn text(c: &FileChange) -> String {
    let d = diff(&c.path, &c.before, &c.after);
    let long = c.before.is_none()
        && c.after
            .as_ref()
            .is_some_and(|b| b.iter().filter(|&&x| x == b'\n').count() > NEW_FILE_LINES);
    if !long {
        return d;
    }
    let lines: Vec<&str> = d.lines().collect();
    let shown = (3 + NEW_FILE_LINES / 2).min(lines.len());
    format!(
        "{}\n… {} more lines of the new file (`--dry-run --json` shows them all)\n",
        lines[..shown].join("\n"),
        lines.len() - shown
    )
}

pub(crate) fn json(c: &FileChange) -> Value {
    json!({
        "kind": "file", "target": c.path, "before": lossy(&c.before), "after": lossy(&c.after),
        "reboot_required": c.reboot, "diff": diff(&c.path, &c.before, &c.after),
    })
}
