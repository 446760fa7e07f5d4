//! What the one-line command-line files (systemd-boot's /etc/kernel/cmdline, a Raspberry Pi's cmdline.txt) share:
//! the file's change, its tokens merged with the managed parameters and written back as one line.

use super::tokens::{merge_bytes, replaced};
use crate::fix::Change;
use crate::fix::Step;
use crate::fix::kind::file::{CmdlineEdit, FileChange};

/// Tokens as text, for merging and notes (the bytes themselves are written back as they were).
pub(super) fn lossy(toks: &[Vec<u8>]) -> Vec<String> {
    toks.iter()
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect()
}

/// A command-line file's change: `base` tokens merged with `managed`, written as one line (plus `rest`).
pub(super) fn line_change(
    path: &str,
    before: Option<Vec<u8>>,
    base: &[Vec<u8>],
    managed: &[String],
    newline: bool,
    rest: &[u8],
) -> Option<Change> {
    let mut after = merge_bytes(base, managed).join(&b' ');
    if newline {
        after.push(b'\n');
    }
    after.extend_from_slice(rest);
    if before.as_deref() == Some(&after[..]) {
        return None;
    }
    let mut c = FileChange::new(path, before, after, true);
    c.cmdline = Some(CmdlineEdit {
        added: managed.to_vec(),
        replaced: replaced(base, managed),
    });
    Some(Change::File(c))
}

/// A note for each configured parameter whose value could not be understood (left as it is).
pub(super) fn skipped_notes(s: &mut Step, skipped: &[String]) {
    for k in skipped {
        s.note(format!("left as configured (cannot merge): {k}"));
    }
}
