//! The hardware behind the EtherCAT NIC: its driver and the negotiated link speed.

use super::nic::present;
use super::{Assessment, Check, CheckId, Ctx, Eval, Section, unknown};
use crate::host::Host;
use crate::machine::net::NET;
use crate::parse::kint::{self, Range};

/// Drivers of wired Intel NICs used with EtherCAT masters (SOEM, IgH native drivers, RMP): good latency,
/// per-queue MSI-X, hardware timestamps on igb/igc.
const GOOD: &[&str] = &["igc", "igb", "e1000e", "e1000", "ixgbe", "i40e", "ice"];
/// Drivers behind USB or radio: frames wait for USB polling or the air, never real time.
const BAD_USB: &[&str] = &[
    "r8152",
    "ax88179_178a",
    "asix",
    "cdc_ether",
    "cdc_ncm",
    "smsc95xx",
    "lan78xx",
    "aqc111",
];
const BAD_WIRELESS: &[&str] = &[
    "iwlwifi",
    "brcmfmac",
    "ath9k",
    "ath10k_pci",
    "ath11k_pci",
    "mt7921e",
    "rtw88_pci",
    "rtw89_pci",
];
/// Virtual NICs: fine for trying the tool, not for a real EtherCAT segment.
const VIRTUAL: &[&str] = &["virtio_net", "vmxnet3", "hv_netvsc", "xen-netfront", "veth"];

pub(crate) use crate::machine::net::driver;

pub(crate) const NIC_DRIVER: Check = Check {
    id: CheckId::NicDriver,
    section: Section::Nic,
    title: "NIC driver suited to EtherCAT",
    doc: "Intel wired drivers (igc, igb, e1000e, …) are the ones EtherCAT masters are known to run well on; \
          USB and wireless adapters add milliseconds. Passes for the known-good list, fails for USB and wireless \
          drivers, informational otherwise (virtual NICs included: fine for trying the tool).",
    remedy: None,
    by_hand: Some(
        "use a wired Intel NIC (igb, igc, e1000e) for EtherCAT; USB and wireless adapters cannot be tuned to real time",
    ),
    evaluate: nic_driver,
};

fn nic_driver(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let Some(d) = driver(host, nic) else {
        // A device without a driver link or a DRIVER= line: a capture that left them out, not a virtual NIC.
        if host.exists(&format!("{NET}/{nic}/device")) {
            return Err(unknown(format!(
                "{NET}/{nic}/device has neither a driver link nor DRIVER= in its uevent (not captured)"
            )));
        }
        return Ok(Assessment::info("no device driver (virtual interface)"));
    };
    let d = d.as_str();
    Ok(if GOOD.contains(&d) {
        Assessment::pass(d.to_string())
    } else if BAD_USB.contains(&d) {
        Assessment::fail(format!("{d}: USB adapter"))
    } else if BAD_WIRELESS.contains(&d) {
        Assessment::fail(format!("{d}: wireless"))
    } else if VIRTUAL.contains(&d) {
        Assessment::info(format!("{d}: virtual NIC"))
    } else {
        Assessment::info(format!("{d}: not in the known list"))
    })
}

pub(crate) const NIC_SPEED: Check = Check {
    id: CheckId::NicSpeed,
    section: Section::Nic,
    title: "Link at 100 Mb/s full duplex",
    doc: "EtherCAT runs at 100 Mb/s full duplex; any other negotiated speed means the port is not talking to an \
          EtherCAT SubDevice (a switch, a PC). Passes for speed 100 and duplex full; unknown without link or when \
          the driver reports no speed (virtual NICs).",
    remedy: None,
    by_hand: Some(
        "connect the NIC straight to an EtherCAT SubDevice (EtherCAT links at 100 Mb/s full duplex), not to a switch or another PC",
    ),
    evaluate: nic_speed,
};

fn nic_speed(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    // Reading speed of a link that is down gives EINVAL; some drivers report -1.
    let speed = host
        .read_trimmed(&format!("{NET}/{nic}/speed"))
        .ok()
        // "%d" Mb/s, -1 (SPEED_UNKNOWN) without link.
        .and_then(|s| kint::int(&s, &Range::new(i32::MIN as i64..=i32::MAX as i64)).ok())
        .filter(|&s| s > 0 && s < 10_000_000);
    let duplex = host.read_trimmed(&format!("{NET}/{nic}/duplex")).ok();
    match (speed, duplex.as_deref()) {
        (None, _) => Err(unknown("no speed reported (link down or virtual)")),
        (Some(100), Some("full")) => Ok(Assessment::pass("100 Mb/s full duplex")),
        (Some(s), d) => Ok(Assessment::fail(format!(
            "{s} Mb/s {} duplex",
            d.unwrap_or("?")
        ))),
    }
}
