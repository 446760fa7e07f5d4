//! The value kind: one kernel value (sysfs, procfs), written as `echo v > file` does. Journaled: the value as
//! read (every byte, so that a fixture file comes back identical) and the value fix wrote, so that rollback
//! leaves a value someone changed since (unless --force).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{How, Restored, Took};
use crate::error::Result;
use crate::fix::ValueKind;
use crate::host::{Host, HostError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueChange {
    pub path: String,
    pub before: String,
    pub after: String,
    pub kind: ValueKind,
    /// EINVAL/EIO is reported, not fatal (managed IRQs).
    pub refusable: bool,
    /// What the value belongs to, for people: an IRQ's devices ("ahci[0000:00:1f.2]"). Not journaled.
    pub label: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedValue {
    pub path: String,
    /// As read (version 1 journals: trimmed).
    pub previous: String,
    pub value_kind: ValueKind,
    /// A kernel-managed IRQ may refuse even its old value (e.g. after a reboot): reported, not a failure.
    #[serde(default)]
    pub refusable: bool,
    /// What fix wrote (not in version 1 journals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

/// A write the kernel refuses for a managed IRQ: EINVAL, EIO, or EPERM (virtio queues on 6.x). As root, a
/// "permission denied" on such a file comes from the kernel, not from file modes.
pub(crate) fn kernel_refused(e: &HostError) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIO))
        || (crate::sys::process::is_root() && matches!(e, HostError::PermissionDenied { .. }))
}

pub(crate) fn record(host: &Host, c: &ValueChange) -> Result<SavedValue> {
    Ok(SavedValue {
        path: c.path.clone(),
        previous: host.read(&c.path)?,
        value_kind: c.kind,
        refusable: c.refusable,
        written: Some(c.after.clone()),
    })
}

pub(crate) fn apply(host: &Host, c: &ValueChange) -> Result<Took> {
    match host.write_value(&c.path, &format!("{}\n", c.after)) {
        Ok(()) => Ok(Took::Took),
        Err(e) if c.refusable && kernel_refused(&e) => Ok(Took::Refused(e.reason())),
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn verify(host: &Host, c: &ValueChange) -> Took {
    match host.read(&c.path) {
        Ok(now) if c.kind.same(&now, &c.after) => Took::Took,
        Ok(now) => Took::Differs(now.trim().to_string()),
        Err(e) => Took::Differs(e.reason()),
    }
}

/// Writes only what differs (a managed IRQ refuses even its own value). On the machine the value is written as
/// `echo` would; under --root the recorded bytes are put back as they were.
pub(crate) fn restore(host: &Host, s: &SavedValue, how: How) -> Result<Restored> {
    let k = s.value_kind;
    let now = host.read(&s.path)?;
    if host.holds(&now, &s.previous, k.same(&now, &s.previous)) {
        return Ok(Restored::Unchanged);
    }
    if let Some(w) = &s.written
        && !k.same(&now, w)
        && !how.force
    {
        return Ok(Restored::Conflict(format!(
            "reads {}, fix wrote {w}",
            k.normal(&now)
        )));
    }
    let recorded = if s.previous.ends_with('\n') {
        s.previous.clone()
    } else {
        format!("{}\n", s.previous)
    };
    let kernel_text = format!("{}\n", k.normal(&s.previous));
    if !how.dry_run {
        match host.put_back(&s.path, &recorded, &kernel_text) {
            Err(e) if s.refusable && kernel_refused(&e) => {
                return Ok(Restored::Refused(e.reason()));
            }
            r => r?,
        }
    }
    Ok(Restored::Written(format!(
        "{} → {}",
        k.normal(&now),
        k.normal(&s.previous)
    )))
}

pub(crate) fn text(c: &ValueChange) -> String {
    match &c.label {
        Some(l) => format!("{} ({l}): {} → {}\n", c.path, c.before, c.after),
        None => format!("{}: {} → {}\n", c.path, c.before, c.after),
    }
}

pub(crate) fn json(c: &ValueChange) -> Value {
    let mut v = json!({
        "kind": "value", "target": c.path, "before": c.before, "after": c.after, "reboot_required": false,
    });
    if let Some(l) = &c.label {
        v["label"] = json!(l);
    }
    v
}
