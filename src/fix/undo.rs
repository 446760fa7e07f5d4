//! Undoing journaled changes: each target put back as recorded, writing only what differs.

use super::journal::{Entry, Run};
use crate::error::{Error, Result};
use crate::host::{Host, HostError};

/// What restoring one entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// Already as recorded: nothing written.
    Unchanged,
    Written(String),
    Removed,
    /// The kernel refused the old value (a managed IRQ): left as it is.
    Refused(String),
}

/// A write the kernel refuses for a managed IRQ: EINVAL, EIO, or EPERM (virtio queues on 6.x). As root, a
/// "permission denied" on such a file comes from the kernel, not from file modes.
pub fn kernel_refused(e: &HostError) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EIO))
        || (nix::unistd::geteuid().is_root() && matches!(e, HostError::PermissionDenied { .. }))
}

/// Puts one target back as recorded. Writes only what differs (a managed IRQ refuses even its own value).
/// Values are written as `echo` does, with a newline (every kernel file accepts it; fixture files keep theirs).
pub fn restore(host: &Host, e: &Entry, dry_run: bool) -> Result<Restored> {
    match e {
        Entry::File {
            path,
            previous: None,
        } => {
            if host.meta(path).is_err() {
                return Ok(Restored::Unchanged);
            }
            if !dry_run {
                host.remove_file(path)?;
            }
            Ok(Restored::Removed)
        }
        Entry::File {
            path,
            previous: Some(f),
        } => {
            let bytes = f.bytes();
            let same = host.read_bytes(path).ok().as_ref() == Some(&bytes)
                && host.meta(path).ok() == Some(f.meta());
            if same {
                return Ok(Restored::Unchanged);
            }
            if !dry_run {
                host.write_atomic(path, &bytes, Some(&f.meta()))?;
            }
            Ok(Restored::Written(format!(
                "{} bytes, mode {:o}",
                bytes.len(),
                f.mode
            )))
        }
        Entry::Value {
            path,
            previous,
            value_kind,
            refusable,
        } => {
            let now = host.read(path)?;
            if value_kind.same(&now, previous) {
                return Ok(Restored::Unchanged);
            }
            let v = value_kind.normal(previous);
            if !dry_run {
                match host.write_value(path, &format!("{v}\n")) {
                    Err(e) if *refusable && kernel_refused(&e) => {
                        return Ok(Restored::Refused(e.reason()));
                    }
                    r => r?,
                }
            }
            Ok(Restored::Written(format!(
                "{} → {v}",
                value_kind.normal(&now)
            )))
        }
        Entry::Ethtool {
            target,
            nic,
            field,
            previous,
        } => {
            if !host.is_live() {
                return Err(Error::failed(format!(
                    "{target}: a NIC setting of the machine, not restored under --root"
                )));
            }
            let sys = |e| Error::sys(target.clone(), e);
            let now = super::ethtool::read(nic, *field).map_err(sys)?;
            if now == *previous {
                return Ok(Restored::Unchanged);
            }
            if !dry_run {
                super::ethtool::write(nic, *field, *previous).map_err(sys)?;
            }
            Ok(Restored::Written(format!("{now} → {previous}")))
        }
    }
}

/// Restores every entry of `run`, newest first. Returns the targets that could not be restored (a value whose
/// IRQ or interface no longer exists counts as restored: there is nothing left to put back).
pub fn undo(host: &Host, run: &Run) -> Vec<String> {
    let mut problems = Vec::new();
    for e in run.entries.iter().rev() {
        match restore(host, e, false) {
            Ok(_) => {}
            Err(Error::Host(h)) if h.is_not_found() && matches!(e, Entry::Value { .. }) => {}
            // The interface is gone: nothing left to put back (its driver starts from defaults when it returns).
            Err(Error::Sys { source, .. })
                if source.raw_os_error() == Some(libc::ENODEV)
                    && matches!(e, Entry::Ethtool { .. }) => {}
            Err(err) => problems.push(format!("{}: {err}", e.path())),
        }
    }
    problems
}
