//! The checks of NIC interrupt coalescing and Energy Efficient Ethernet, read with the SIOCETHTOOL ioctl on the
//! live machine (`sys::ethtool`, no ethtool subprocess). A snapshot records the same readings in
//! rmp-eval-snapshot.json, which `--root` uses.

use serde_json::Value;

use crate::checks::nic::present;
use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, unknown};
use crate::host::Host;
use crate::remedy::StepId;

/// The NIC's `what` readings, live or from the snapshot: what cannot be had is the check's unknown.
fn readings(host: &Host, nic: &str, what: &str) -> Result<Value, Unknown> {
    crate::machine::facts::ethtool_readings(host, nic, what).map_err(|e| unknown(e.to_string()))
}

pub(crate) const NIC_COALESCE: Check = Check {
    id: CheckId::NicCoalesce,
    section: Section::Nic,
    title: "NIC interrupt coalescing off",
    doc: "Interrupt coalescing holds a received frame until a timer or a frame count fires, adding up to \
          rx-usecs to every EtherCAT reply (SOEM advises rx-usecs 0). Passes when rx-usecs is 0 and adaptive rx \
          coalescing is off; informational when the driver has no coalescing.",
    remedy: Some(StepId::NicCoalesce),
    by_hand: None,
    evaluate: nic_coalesce,
};

fn nic_coalesce(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let r = readings(host, nic, "coalesce")?;
    if let Some(s) = r.as_str() {
        return if s == "unsupported" {
            Ok(Assessment::info("driver has no interrupt coalescing"))
        } else {
            Err(unknown(s))
        };
    }
    let usecs = r["rx_usecs"].as_u64().unwrap_or(u64::MAX);
    let adaptive = r["adaptive_rx"].as_bool().unwrap_or(true);
    let d = format!(
        "rx-usecs={usecs}, adaptive-rx={}",
        if adaptive { "on" } else { "off" }
    );
    Ok(if usecs == 0 && !adaptive {
        Assessment::pass(d)
    } else {
        Assessment::fail(d)
    })
}

pub(crate) const NIC_EEE: Check = Check {
    id: CheckId::NicEee,
    section: Section::Nic,
    title: "NIC Energy Efficient Ethernet off",
    doc: "With EEE the PHY sleeps between frames (low-power idle) and needs microseconds to wake for the next \
          one. Passes when EEE is not supported, not enabled, or not active on the link.",
    remedy: Some(StepId::NicEee),
    by_hand: None,
    evaluate: nic_eee,
};

fn nic_eee(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let r = readings(host, nic, "eee")?;
    if let Some(s) = r.as_str() {
        return if s == "unsupported" {
            Ok(Assessment::pass("no EEE support"))
        } else {
            Err(unknown(s))
        };
    }
    let (enabled, active) = (r["enabled"].as_bool(), r["active"].as_bool());
    match (enabled, active) {
        (Some(true), Some(true)) => Ok(Assessment::fail("EEE enabled and active")),
        (Some(true), Some(false)) => Ok(Assessment::pass("EEE enabled, not active on this link")),
        (Some(false), _) => Ok(Assessment::pass("EEE disabled")),
        _ => Err(unknown("unexpected EEE reading")),
    }
}
