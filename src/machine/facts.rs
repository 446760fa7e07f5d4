//! Facts only a system call can tell (a NIC's ethtool settings, whether the futex prctl works): asked live on the
//! running machine, and under `--root` read from what `snapshot` recorded at the root of its copy.

use std::io;

use serde_json::{Value, json};

use crate::host::Host;
use crate::sys::ethtool;

/// Facts only a system call can tell, recorded by `snapshot` at the root of the copy.
pub(crate) const SNAPSHOT_FACTS: &str = "/rmp-eval-snapshot.json";
pub(crate) const FACT_FUTEX_PRCTL: &str = "futex_hash_prctl";

pub(crate) fn snapshot_fact(host: &Host, key: &str) -> Option<String> {
    let text = host.read(SNAPSHOT_FACTS).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get(key)?.as_str().map(str::to_string)
}

/// What `snapshot` records beside the files: on the running machine the facts only its kernel can tell (the
/// futex prctl, each interface's ethtool readings), from a tree the facts it recorded in turn; None when a tree
/// has none.
pub(crate) fn snapshot_facts(host: &Host) -> Option<Vec<u8>> {
    if !host.is_live() {
        return host.read_bytes(SNAPSHOT_FACTS).ok();
    }
    let nics = host.list(super::net::NET).unwrap_or_default();
    Some(live_facts(&nics).to_string().into_bytes())
}

/// prctl(PR_FUTEX_HASH)'s answer on the running machine (None under --root: a tree has no kernel to ask).
pub(crate) fn futex_prctl(host: &Host) -> Option<std::io::Result<i32>> {
    host.is_live().then(crate::sys::term::futex_hash_slots)
}

fn live_facts(nics: &[String]) -> serde_json::Value {
    let ethtool: serde_json::Map<String, serde_json::Value> =
        nics.iter().map(|n| (n.clone(), live_readings(n))).collect();
    let futex = match crate::sys::term::futex_hash_slots() {
        Ok(_) => "ok".to_string(),
        Err(e) => e.to_string(),
    };
    serde_json::json!({
        "rmp_eval_version": env!("CARGO_PKG_VERSION"),
        FACT_FUTEX_PRCTL: futex,
        "ethtool": ethtool,
    })
}

fn reading(r: io::Result<Value>) -> Value {
    r.unwrap_or_else(|e| match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => json!("unsupported"),
        _ => json!(format!("error: {e}")),
    })
}

/// The NIC's coalescing and EEE settings as recorded in a snapshot (and as the checks use them).
pub fn live_readings(nic: &str) -> Value {
    let co = ethtool::get::<ethtool::Coalesce>(nic).map(|c| {
        json!({"rx_usecs": c.rx_coalesce_usecs, "rx_frames": c.rx_max_coalesced_frames,
               "adaptive_rx": c.use_adaptive_rx_coalesce != 0})
    });
    let eee = ethtool::get::<ethtool::Eee>(nic).map(|e| {
        json!({"supported": e.supported != 0, "enabled": e.eee_enabled != 0, "active": e.eee_active != 0})
    });
    json!({"coalesce": reading(co), "eee": reading(eee)})
}

/// Why a recorded fact is not there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FactError {
    #[error("needs the live machine or a snapshot")]
    NoSnapshot,
    #[error("snapshot facts unreadable")]
    Unreadable,
    #[error("not in the snapshot")]
    NotRecorded,
}

/// Live: the ioctl. Under --root: the snapshot's recorded readings, if any.
pub(crate) fn ethtool_readings(host: &Host, nic: &str, what: &str) -> Result<Value, FactError> {
    if host.is_live() {
        return Ok(live_readings(nic)[what].clone());
    }
    let text = host
        .read(SNAPSHOT_FACTS)
        .map_err(|_| FactError::NoSnapshot)?;
    let v: Value = serde_json::from_str(&text).map_err(|_| FactError::Unreadable)?;
    let r = v["ethtool"][nic][what].clone();
    if r.is_null() {
        return Err(FactError::NotRecorded);
    }
    Ok(r)
}
