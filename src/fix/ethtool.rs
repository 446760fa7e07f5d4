//! NIC settings changed through the SIOCETHTOOL ioctl (interrupt coalescing, EEE). Each change is one field of
//! one ethtool structure: the whole structure is read (ETHTOOL_G*), that field changed, and the structure written
//! back (ETHTOOL_S*), as `ethtool -C` / `--set-eee` do. The ioctl itself is sys::ethtool's.

use std::io;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::kind::nic::EthtoolChange;
use super::runtime::{Target, step};
use super::{Change, Step, StepId};
use crate::host::Host;
use crate::machine::facts::{FactError, ethtool_readings};
use crate::sys::ethtool::{self as et, Coalesce, Eee};

/// One field of struct ethtool_coalesce or struct ethtool_eee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    RxUsecs,
    RxFrames,
    AdaptiveRx,
    Eee,
}

impl Field {
    /// ethtool's own name for the field.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Field::RxUsecs => "rx-usecs",
            Field::RxFrames => "rx-frames",
            Field::AdaptiveRx => "adaptive-rx",
            Field::Eee => "eee",
        }
    }
}

/// The target as reports and the journal name it, e.g. "eth0: ethtool rx-usecs".
pub(crate) fn target(nic: &str, field: Field) -> String {
    format!("{nic}: ethtool {}", field.name())
}

/// The field's present value on the live NIC.
pub fn read(nic: &str, field: Field) -> io::Result<u32> {
    Ok(match field {
        Field::RxUsecs => et::get::<Coalesce>(nic)?.rx_coalesce_usecs,
        Field::RxFrames => et::get::<Coalesce>(nic)?.rx_max_coalesced_frames,
        Field::AdaptiveRx => et::get::<Coalesce>(nic)?.use_adaptive_rx_coalesce,
        Field::Eee => et::get::<Eee>(nic)?.eee_enabled,
    })
}

/// Reads the whole structure, changes only `field`, writes it back (on the running machine only).
pub(crate) fn write(_: crate::host::Kernel, nic: &str, field: Field, value: u32) -> io::Result<()> {
    if field == Field::Eee {
        let mut e = et::get::<Eee>(nic)?;
        e.eee_enabled = value;
        return et::set(nic, &e);
    }
    let mut c = et::get::<Coalesce>(nic)?;
    match field {
        Field::RxUsecs => c.rx_coalesce_usecs = value,
        Field::RxFrames => c.rx_max_coalesced_frames = value,
        _ => c.use_adaptive_rx_coalesce = value,
    }
    et::set(nic, &c)
}

/// EOPNOTSUPP: the driver has no such setting (veth, many virtual NICs). Reported for the step, not fatal.
pub(crate) fn unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP)
}

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

fn change(s: &mut Step, nic: &str, field: Field, before: Option<u64>, after: u32) {
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
pub(crate) fn coalesce(host: &Host, t: &Target) -> Step {
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
        change(&mut s, &nic, Field::RxFrames, frames, 1);
    }
    let adaptive = r["adaptive_rx"].as_bool().map(u64::from);
    change(&mut s, &nic, Field::AdaptiveRx, adaptive, 0);
    change(&mut s, &nic, Field::RxUsecs, r["rx_usecs"].as_u64(), 0);
    // Nothing to do for coalescing itself: leave rx-frames as it is.
    if !s.changes.iter().any(|c| {
        matches!(
            c,
            Change::Ethtool(EthtoolChange {
                field: Field::RxUsecs | Field::AdaptiveRx,
                ..
            })
        )
    }) {
        s.changes.clear();
    }
    s
}

/// EEE off (eee_enabled 0), when the NIC supports EEE and has it enabled.
pub(crate) fn eee(host: &Host, t: &Target) -> Step {
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
            change(&mut s, &nic, Field::Eee, enabled, 0);
        }
        Err(note) => s.note(note.to_string()),
    }
    s
}

#[cfg(test)]
mod tests;
