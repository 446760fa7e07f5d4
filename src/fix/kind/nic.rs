//! The ethtool kind: one field of a NIC's ethtool settings (SIOCETHTOOL: structure read, field changed, written
//! back; see fix::ethtool). Only on the live machine: under --root the plan says what would be set.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{How, Restored, Took};
use crate::error::{Error, Result};
use crate::fix::ethtool::{self, NicField};
use crate::host::Host;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthtoolChange {
    pub nic: String,
    pub field: NicField,
    pub before: u32,
    pub after: u32,
}

impl EthtoolChange {
    pub(crate) fn target(&self) -> String {
        ethtool::target(&self.nic, self.field)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedEthtool {
    /// ethtool::target(nic, field), what apply and rollback match changes by.
    pub target: String,
    pub nic: String,
    pub field: NicField,
    pub previous: u32,
    /// What fix set (not in version 1 journals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<u32>,
}

/// None under --root (nothing will be written) or when the driver has no such setting (the write will say so).
pub(crate) fn record(host: &Host, c: &EthtoolChange) -> Result<Option<SavedEthtool>> {
    if host.kernel().is_none() {
        return Ok(None);
    }
    match ethtool::read(&c.nic, c.field) {
        Ok(previous) => Ok(Some(SavedEthtool {
            target: c.target(),
            nic: c.nic.clone(),
            field: c.field,
            previous,
            written: Some(c.after),
        })),
        Err(e) if ethtool::unsupported(&e) => Ok(None),
        Err(e) => Err(Error::sys(c.target(), e)),
    }
}

pub(crate) fn apply(host: &Host, c: &EthtoolChange) -> Result<Took> {
    let Some(k) = host.kernel() else {
        return Ok(Took::WouldRun);
    };
    match ethtool::write(k, &c.nic, c.field, c.after) {
        Ok(()) => Ok(Took::Took),
        Err(e) if ethtool::unsupported(&e) => Ok(Took::Unsupported(e.to_string())),
        Err(e) => Err(Error::sys(c.target(), e)),
    }
}

pub(crate) fn verify(c: &EthtoolChange) -> Took {
    match ethtool::read(&c.nic, c.field) {
        Ok(now) if now == c.after => Took::Took,
        Ok(now) => Took::Differs(now.to_string()),
        Err(e) => Took::Differs(e.to_string()),
    }
}

pub(crate) fn restore(host: &Host, s: &SavedEthtool, how: How) -> Result<Restored> {
    let Some(k) = host.kernel() else {
        return Err(Error::failed(format!(
            "{}: a NIC setting of the machine, not restored under --root",
            s.target
        )));
    };
    let sys = |e| Error::sys(s.target.clone(), e);
    let now = ethtool::read(&s.nic, s.field).map_err(sys)?;
    if now == s.previous {
        return Ok(Restored::Unchanged);
    }
    if let Some(w) = s.written
        && now != w
        && !how.force
    {
        return Ok(Restored::Conflict(format!("reads {now}, fix set {w}")));
    }
    if !how.dry_run {
        ethtool::write(k, &s.nic, s.field, s.previous).map_err(sys)?;
    }
    Ok(Restored::Written(format!("{now} → {}", s.previous)))
}

pub(crate) fn text(c: &EthtoolChange, live: bool) -> String {
    if live {
        format!("{}: {} → {}\n", c.target(), c.before, c.after)
    } else {
        format!(
            "{}: {} → {} (would be set on the machine, not under --root)\n",
            c.target(),
            c.before,
            c.after
        )
    }
}

pub(crate) fn json(c: &EthtoolChange) -> Value {
    json!({
        "kind": "ethtool", "target": c.target(), "before": c.before.to_string(),
        "after": c.after.to_string(), "reboot_required": false, "nic": c.nic, "field": c.field.name(),
    })
}
