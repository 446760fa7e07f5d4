//! Persistence of runtime tunings: fix saves its intent (core, NIC, runtime steps) in
//! /var/lib/rmp-eval/runtime.json; `rmp-eval apply-saved` (the systemd unit at boot, the udev rule when the NIC
//! appears) plans those steps afresh and writes the values. Intent rather than values: IRQ numbers change.

use serde::{Deserialize, Serialize};

use super::runtime::{self, Target};
use super::{Change, RUNTIME_JSON, Step};
use super::{ethtool, irq};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::remedy;

/// Steps whose effect is lost at reboot and that apply-saved re-applies.
pub const RUNTIME_STEPS: &[&str] = &[
    remedy::GOVERNOR,
    remedy::TURBO,
    remedy::THP,
    remedy::WORKQUEUE,
    remedy::IRQ_AFFINITY,
    remedy::RPS,
    remedy::NIC_COALESCE,
    remedy::NIC_EEE,
];
/// Steps that concern the NIC (what the udev rule re-applies when the interface appears).
pub const NIC_STEPS: &[&str] = &[
    remedy::IRQ_AFFINITY,
    remedy::RPS,
    remedy::NIC_COALESCE,
    remedy::NIC_EEE,
];
pub const PERSIST: &str = "persist";
const UNIT_PATHS: &[&str] = &[
    "/lib/systemd/system/rmp-eval.service",
    "/usr/lib/systemd/system/rmp-eval.service",
    "/etc/systemd/system/rmp-eval.service",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub version: u32,
    pub core: usize,
    pub nic: Option<String>,
    pub steps: Vec<String>,
}

pub fn load(host: &Host) -> Result<Option<Saved>> {
    match host.read(RUNTIME_JSON) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| Error::failed(format!("{RUNTIME_JSON}: {e}"))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The persist step: runtime.json holding the runtime steps of this run merged with those saved before.
pub fn persist_step(host: &Host, core: usize, nic: Option<&str>, steps: &[&str]) -> Option<Step> {
    let mine: Vec<&str> = steps
        .iter()
        .copied()
        .filter(|s| RUNTIME_STEPS.contains(s))
        .collect();
    if mine.is_empty() {
        return None;
    }
    let old = load(host).ok().flatten();
    let mut all: Vec<String> = old.as_ref().map(|o| o.steps.clone()).unwrap_or_default();
    all.extend(mine.iter().map(|s| s.to_string()));
    let all: Vec<String> = RUNTIME_STEPS
        .iter()
        .filter(|s| all.iter().any(|a| a == *s))
        .map(|s| s.to_string())
        .collect();
    let nic = nic.map(str::to_string).or_else(|| old.and_then(|o| o.nic));
    let saved = Saved {
        version: 1,
        core,
        nic,
        steps: all,
    };
    let text = format!("{}\n", serde_json::to_string_pretty(&saved).ok()?);
    let before = host.read_bytes(RUNTIME_JSON).ok();
    let mut s = Step {
        id: PERSIST,
        title: "Re-apply the runtime settings at every boot".into(),
        why: "kernel values written now are lost at reboot; rmp-eval.service and the udev rule re-apply them".into(),
        changes: vec![],
        notes: vec![],
    };
    if before.as_deref() != Some(text.as_bytes()) {
        s.changes.push(Change::File {
            path: RUNTIME_JSON.into(),
            before,
            after: Some(text.into_bytes()),
            mode: 0o644,
            reboot: false,
        });
    }
    if !UNIT_PATHS.iter().any(|p| host.exists(p)) {
        s.notes.push("rmp-eval.service is not installed (install the package): these settings last until reboot".into());
    }
    Some(s)
}

/// The runtime steps of `saved`, planned on the machine as it is now (only the NIC's with `only_nic`).
pub fn plan(host: &Host, saved: &Saved, online: Vec<usize>, only_nic: bool) -> Vec<Step> {
    let t = Target {
        core: saved.core,
        nic: saved.nic.clone(),
        online,
    };
    saved
        .steps
        .iter()
        .filter(|s| !only_nic || NIC_STEPS.contains(&s.as_str()))
        .filter_map(|id| match id.as_str() {
            remedy::GOVERNOR => Some(runtime::governor(host, &t)),
            remedy::TURBO => Some(runtime::turbo(host)),
            remedy::THP => Some(runtime::thp(host)),
            remedy::WORKQUEUE => Some(runtime::workqueue(host, &t)),
            remedy::IRQ_AFFINITY => Some(irq::irq_affinity(host, &t)),
            remedy::RPS => Some(irq::rps(host, &t)),
            remedy::NIC_COALESCE => Some(ethtool::coalesce(host, &t)),
            remedy::NIC_EEE => Some(ethtool::eee(host, &t)),
            _ => None,
        })
        .collect()
}
