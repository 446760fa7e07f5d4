//! The value kind: one kernel value (sysfs, procfs), written as `echo v > file` does. Journaled: the value as
//! read (every byte, so that a fixture file comes back identical) and the value fix wrote, so that rollback
//! leaves a value someone changed since (unless --force).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{How, Restored, Took};
use crate::error::Result;
use crate::fix::ValueKind;
use crate::host::{Host, HostError};
use crate::machine::irq;

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
    /// An IRQ's devices as /proc/interrupts names them, when it has any. Journaled: IRQ numbers are given out as
    /// drivers probe, in the order the boot loads them, so after a reboot the number may be another device's.
    pub owner: Option<String>,
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
    /// The IRQ's devices when fix wrote it (`ValueChange::owner`); rollback restores that device's IRQ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
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
        owner: c.owner.clone(),
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
    let (path, moved) = match s.owner.as_deref().map(|o| irq::now_held(host, &s.path, o)) {
        None | Some(irq::HeldNow::Same) => (s.path.clone(), None),
        Some(irq::HeldNow::Renumbered(p, n)) => (p, Some(n)),
        Some(irq::HeldNow::Elsewhere(why)) => return Ok(Restored::Gone(why)),
    };
    let k = s.value_kind;
    let now = host.read(&path)?;
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
        match host.put_back(&path, &recorded, &kernel_text) {
            Err(e) if s.refusable && kernel_refused(&e) => {
                return Ok(Restored::Refused(e.reason()));
            }
            r => r?,
        }
    }
    let moved = moved.map_or_else(String::new, |n| {
        format!(
            ", {} is IRQ {n} now",
            s.owner.as_deref().unwrap_or_default()
        )
    });
    Ok(Restored::Written(format!(
        "{} → {}{moved}",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Fix pinned ens3-rx-0 (IRQ 30 then) and moved virtio0-requests (IRQ 28) off the RT core; after a reboot
    /// igb probed first: rx-0 is IRQ 28 and virtio0-requests IRQ 33, each set again by apply-saved. Rollback
    /// puts back each device's IRQ, not the numbers'.
    #[test]
    fn rollback_restores_the_irq_of_the_device_fix_changed_not_of_its_old_number() {
        let d = tempfile::tempdir().unwrap();
        let put = |p: &str, t: &str| {
            let p = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        put(
            "/proc/interrupts",
            "           CPU0       CPU1\n 28:  0  11  PCI-MSI 49153-edge      ens3-rx-0\n \
             33:  0  649  PCI-MSI 32769-edge      virtio0-requests\n 40:  0  0  PCI-MSI 1-edge      ens3-tx-9\n",
        );
        put("/proc/irq/28/smp_affinity_list", "1\n");
        put("/proc/irq/30/smp_affinity_list", "0-1\n");
        put("/proc/irq/33/smp_affinity_list", "0\n");
        put("/proc/irq/40/smp_affinity_list", "0\n");
        let host = Host::with_root(d.path());
        let saved = |irq: u32, written: &str, owner: &str| SavedValue {
            path: format!("/proc/irq/{irq}/smp_affinity_list"),
            previous: "0-1\n".into(),
            value_kind: ValueKind::CpuList,
            refusable: true,
            written: Some(written.into()),
            owner: Some(owner.into()),
        };
        let how = How::default();
        let r = restore(&host, &saved(30, "1", "ens3-rx-0"), how).unwrap();
        assert_eq!(
            r,
            Restored::Written("1 → 0-1, ens3-rx-0 is IRQ 28 now".into())
        );
        let r = restore(&host, &saved(28, "0", "virtio0-requests"), how).unwrap();
        assert!(matches!(r, Restored::Written(_)), "{r:?}");
        let read = |p: &str| std::fs::read_to_string(d.path().join(p)).unwrap();
        assert_eq!(read("proc/irq/28/smp_affinity_list"), "0-1\n");
        assert_eq!(read("proc/irq/33/smp_affinity_list"), "0-1\n");
        assert_eq!(read("proc/irq/30/smp_affinity_list"), "0-1\n");
        // A device gone whose number is another's now: that IRQ is not touched, and rollback says why.
        let r = restore(&host, &saved(40, "0", "ahci[0000:00:1f.2]"), how).unwrap();
        assert!(
            matches!(&r, Restored::Gone(w) if w.contains("ens3-tx-9")),
            "{r:?}"
        );
        assert_eq!(read("proc/irq/40/smp_affinity_list"), "0\n");
        // A journal written before owners were recorded: the number, as before.
        let mut old = saved(40, "0", "");
        old.owner = None;
        assert!(matches!(
            restore(&host, &old, how).unwrap(),
            Restored::Written(_)
        ));
        assert_eq!(read("proc/irq/40/smp_affinity_list"), "0-1\n");
    }
}
