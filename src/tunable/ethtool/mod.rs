//! The NIC's ethtool settings: interrupt coalescing and Energy Efficient Ethernet, each a tunable (its check in
//! `checks.rs`, its step here). They are the NIC's values, read and written with the SIOCETHTOOL ioctl
//! (crate::fix::ethtool, the change kind's), lost at reboot and when the interface goes: apply-saved sets them
//! again at boot and when the saved NIC appears. Under --root the readings are the snapshot's.

mod checks;

pub(crate) use checks::{NIC_COALESCE, NIC_EEE};

use serde_json::Value;

use super::{Persistence, Tunable};
use crate::fix::ethtool::NicField;
use crate::fix::kind::nic::EthtoolChange;
use crate::fix::runtime::{Target, step};
use crate::fix::{Change, Step, StepId};
use crate::host::Host;
use crate::machine::facts::{FactError, ethtool_readings};

pub(crate) const COALESCE: Tunable = Tunable {
    step: StepId::NicCoalesce,
    persistence: Persistence::Nic { each_nic: None },
    plan: |host, t, _| Ok(coalesce(host, t)),
    risks: |_, _| {
        vec![
            "one interrupt per frame: at high frame rates the CPU that takes them does more work"
                .into(),
        ]
    },
};

pub(crate) const EEE: Tunable = Tunable {
    step: StepId::NicEee,
    persistence: Persistence::Nic { each_nic: None },
    plan: |host, t, _| Ok(eee(host, t)),
    risks: |_, _| vec!["the link no longer saves power when idle".into()],
};

/// Why a NIC step has no readings to plan from; the step's note.
#[derive(Debug, thiserror::Error)]
enum NoReadings {
    #[error("no --nic given: nothing to do")]
    NoNic,
    #[error("{0}: not supported by the driver (EOPNOTSUPP): nothing to change")]
    Unsupported(String),
    #[error("{nic}: cannot read: {why}")]
    Unreadable { nic: String, why: String },
    #[error("{nic}: {why}")]
    Fact { nic: String, why: FactError },
}

/// The NIC's readings (live ioctl, or the snapshot under --root), or why there are none.
fn readings(host: &Host, t: &Target, what: &str) -> Result<(String, Value), NoReadings> {
    let nic = t.nic.clone().ok_or(NoReadings::NoNic)?;
    match ethtool_readings(host, &nic, what) {
        Ok(Value::String(s)) if s == "unsupported" => Err(NoReadings::Unsupported(nic)),
        // The reading records the ioctl's failure as text (live, or as the snapshot kept it).
        Ok(Value::String(why)) => Err(NoReadings::Unreadable { nic, why }),
        Ok(v) => Ok((nic, v)),
        Err(why) => Err(NoReadings::Fact { nic, why }),
    }
}

fn change(s: &mut Step, nic: &str, field: NicField, before: Option<u64>, after: u32) {
    match before.and_then(|b| u32::try_from(b).ok()) {
        Some(b) if b == after => {}
        Some(b) => s.changes.push(Change::Ethtool(EthtoolChange {
            nic: nic.into(),
            field,
            before: b,
            after,
        })),
        None => s.note(format!("{nic}: no {} in the reading", field.name())),
    }
}

/// rx-usecs 0 and adaptive-rx off (what the nic_coalesce check passes on). rx-usecs 0 with rx-frames 0 would
/// mean "never interrupt" (ethtool.h forbids it), so rx-frames becomes 1 first in that case; undone in reverse.
fn coalesce(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::NicCoalesce,
        "NIC interrupt coalescing off",
        "coalescing holds each received frame until a timer or frame count fires: up to rx-usecs added to every \
         EtherCAT reply",
    );
    let (nic, r) = match readings(host, t, "coalesce") {
        Ok(x) => x,
        Err(note) => {
            s.note(note.to_string());
            return s;
        }
    };
    let frames = r["rx_frames"].as_u64();
    if frames == Some(0) {
        change(&mut s, &nic, NicField::RxFrames, frames, 1);
    }
    let adaptive = r["adaptive_rx"].as_bool().map(u64::from);
    change(&mut s, &nic, NicField::AdaptiveRx, adaptive, 0);
    change(&mut s, &nic, NicField::RxUsecs, r["rx_usecs"].as_u64(), 0);
    // Nothing to do for coalescing itself: leave rx-frames as it is.
    if !s.changes.iter().any(|c| {
        matches!(
            c,
            Change::Ethtool(EthtoolChange {
                field: NicField::RxUsecs | NicField::AdaptiveRx,
                ..
            })
        )
    }) {
        s.changes.clear();
    }
    s
}

/// EEE off (eee_enabled 0), when the NIC supports EEE and has it enabled.
fn eee(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::NicEee,
        "NIC Energy Efficient Ethernet off",
        "with EEE the PHY sleeps between frames and needs microseconds to wake for the next one",
    );
    match readings(host, t, "eee") {
        Ok((nic, r)) if r["supported"].as_bool() == Some(false) => {
            s.note(format!("{nic}: no EEE support: nothing to change"))
        }
        Ok((nic, r)) => {
            let enabled = r["enabled"].as_bool().map(u64::from);
            change(&mut s, &nic, NicField::Eee, enabled, 0);
        }
        Err(note) => s.note(note.to_string()),
    }
    s
}

#[cfg(test)]
mod tests;
