//! The change executor's dispatch: one arm per kind, the logic in the kind's own file (see ../mod.rs).

pub(crate) mod command;
pub(crate) mod dir;
pub(crate) mod file;
mod file_content;
pub mod nic;
pub(crate) mod partition;
pub mod value;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Change;
use crate::error::Result;
use crate::host::Host;

/// What the journal keeps of one target: its state before fix (and what fix wrote, to notice later edits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    File(file::SavedWrite),
    Value(value::SavedValue),
    /// A NIC's ethtool field (only journaled on the live machine: under --root nothing is written).
    Ethtool(nic::SavedEthtool),
    /// A directory fix created for a file (removed by rollback when it is empty again).
    Dir(dir::SavedDir),
    /// The RT core's isolated cgroup partition (rollback makes it a member again and stops its slice).
    Partition(partition::SavedPartition),
}

impl Entry {
    /// The target, as `Change::target` names it.
    pub fn path(&self) -> &str {
        match self {
            Entry::File(s) => &s.path,
            Entry::Value(s) => &s.path,
            Entry::Ethtool(s) => &s.target,
            Entry::Dir(s) => &s.path,
            Entry::Partition(s) => &s.path,
        }
    }
}

/// What became of one change, read back after applying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Took {
    Took,
    /// The value reads back as something else.
    Differs(String),
    /// The kernel refused it (EINVAL/EIO from a managed IRQ): reported, not fatal.
    Refused(String),
    /// The NIC's driver has no such setting (EOPNOTSUPP): reported for its step, not fatal to the others.
    Unsupported(String),
    Ran,
    /// Under --root: the command that would run on the machine.
    WouldRun,
}

impl Took {
    /// Nothing was changed on the machine (so nothing to put back).
    pub(crate) fn left_as_it_was(&self) -> bool {
        matches!(
            self,
            Took::Refused(_) | Took::Unsupported(_) | Took::WouldRun
        )
    }
}

/// What restoring one entry did (or, in a preview, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// Already as recorded: nothing written.
    Unchanged,
    Written(String),
    Removed,
    /// The kernel refused the old value (a managed IRQ): left as it is.
    Refused(String),
    /// Changed by someone since fix: fix's own part taken out, the rest kept (what was kept).
    Merged(String),
    /// Changed by someone since fix and not restored (without --force): what changed, as a diff or values.
    Conflict(String),
    /// Left as it is, and why (a directory fix created that now holds other files).
    Kept(String),
    /// What fix changed is not on the machine now (an IRQ whose device has another number, or none): nothing
    /// to put back, and why.
    Gone(String),
}

/// How to restore: `dry_run` only says what would be done; `force` restores over later changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct How {
    pub dry_run: bool,
    pub force: bool,
}

pub(crate) fn target(c: &Change) -> String {
    match c {
        Change::File(f) => f.path.clone(),
        Change::Value(v) => v.path.clone(),
        Change::Ethtool(e) => e.target(),
        Change::Command(x) => x.argv.join(" "),
        Change::Partition(p) => p.file(),
    }
}

pub(crate) fn reboot_required(c: &Change) -> bool {
    match c {
        Change::File(f) => f.reboot,
        Change::Command(x) => x.reboot,
        Change::Value(_) | Change::Ethtool(_) | Change::Partition(_) => false,
    }
}

/// The journal entries of `c`: its target(s) as they are now, before any change.
pub(crate) fn record(host: &Host, c: &Change) -> Result<Vec<Entry>> {
    match c {
        Change::File(f) => file::record(host, f),
        Change::Value(v) => Ok(vec![Entry::Value(value::record(host, v)?)]),
        Change::Ethtool(e) => Ok(nic::record(host, e)?
            .map(Entry::Ethtool)
            .into_iter()
            .collect()),
        Change::Command(_) => Ok(vec![]),
        Change::Partition(p) => Ok(vec![Entry::Partition(partition::record(host, p)?)]),
    }
}

pub(crate) fn apply(host: &Host, c: &Change) -> Result<Took> {
    match c {
        Change::File(f) => file::apply(host, f),
        Change::Value(v) => value::apply(host, v),
        Change::Ethtool(e) => nic::apply(host, e),
        Change::Command(x) => command::apply(host, x),
        Change::Partition(p) => partition::apply(host, p),
    }
}

/// Reads the target back and says whether the change took.
pub(crate) fn verify(host: &Host, c: &Change, t: Took) -> Took {
    if t != Took::Took {
        return t;
    }
    match c {
        Change::File(f) => file::verify(host, f),
        Change::Value(v) => value::verify(host, v),
        Change::Ethtool(e) => nic::verify(e),
        Change::Command(_) => t,
        Change::Partition(p) => partition::verify(host, p),
    }
}

pub fn restore(host: &Host, e: &Entry, how: How) -> Result<Restored> {
    match e {
        Entry::File(s) => file::restore(host, s, how),
        Entry::Value(s) => value::restore(host, s, how),
        Entry::Ethtool(s) => nic::restore(host, s, how),
        Entry::Dir(s) => dir::restore(host, s, how),
        Entry::Partition(s) => partition::restore(host, s, how),
    }
}

/// The change as the plan shows it (a diff, "path: before → after", a command).
pub(crate) fn text(c: &Change, live: bool) -> String {
    match c {
        Change::File(f) => file::text(f),
        Change::Value(v) => value::text(v),
        Change::Ethtool(e) => nic::text(e, live),
        Change::Command(x) => command::text(x, live),
        Change::Partition(p) => partition::text(p, live),
    }
}

/// docs/json.md: {"kind","target","before","after","reboot_required", …}.
pub(crate) fn json(c: &Change) -> Value {
    match c {
        Change::File(f) => file::json(f),
        Change::Value(v) => value::json(v),
        Change::Ethtool(e) => nic::json(e),
        Change::Command(x) => command::json(x),
        Change::Partition(p) => partition::json(p),
    }
}
