//! NIC interrupt coalescing and Energy Efficient Ethernet, read with the SIOCETHTOOL ioctl on the live machine
//! (no ethtool subprocess). A snapshot records the same readings in rmp-eval-snapshot.json, which `--root` uses.

use std::io;

use serde_json::{Value, json};

use super::nic::present;
use super::system::SNAPSHOT_FACTS;
use super::{Check, Ctx, Section, Verdict, settle};
use crate::host::Host;
use crate::remedy;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
pub(crate) const ETHTOOL_GCOALESCE: u32 = 0x0e;
pub(crate) const ETHTOOL_SCOALESCE: u32 = 0x0f;
pub(crate) const ETHTOOL_GEEE: u32 = 0x44;
pub(crate) const ETHTOOL_SEEE: u32 = 0x45;

/// struct ethtool_coalesce: cmd and 22 u32 fields (include/uapi/linux/ethtool.h).
pub(crate) const COALESCE_WORDS: usize = 23;
pub(crate) const RX_USECS: usize = 1;
pub(crate) const RX_FRAMES: usize = 2;
pub(crate) const ADAPTIVE_RX: usize = 10;
/// struct ethtool_eee: cmd, supported, advertised, lp_advertised, eee_active, eee_enabled, tx_lpi_enabled,
/// tx_lpi_timer, reserved[2].
pub(crate) const EEE_WORDS: usize = 10;
const EEE_SUPPORTED: usize = 1;
const EEE_ACTIVE: usize = 4;
pub(crate) const EEE_ENABLED: usize = 5;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// One ETHTOOL_* command: `words[0]` is the command; a G* command has the kernel fill the rest, an S* command
/// hands the whole structure to the driver (fix reads it first and changes only its own fields).
pub(crate) fn ethtool_ioctl(nic: &str, words: &mut [u32]) -> io::Result<()> {
    if nic.is_empty() || nic.len() >= libc::IFNAMSIZ {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: words.as_mut_ptr().cast(),
        _pad: [0; 16],
    };
    for (d, s) in req.name.iter_mut().zip(nic.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: a plain datagram socket for the ioctl, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: req lives across the call, names a NUL-terminated interface and points at `words`, a buffer as
    // large as the structure the command fills.
    let r = unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut req as *mut IfReq) };
    let err = io::Error::last_os_error();
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    if r < 0 { Err(err) } else { Ok(()) }
}

fn reading(r: io::Result<Value>) -> Value {
    r.unwrap_or_else(|e| match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => json!("unsupported"),
        _ => json!(format!("error: {e}")),
    })
}

/// The NIC's coalescing and EEE settings as recorded in a snapshot (and as the checks use them).
pub fn live_readings(nic: &str) -> Value {
    let co = (|| {
        let mut w = [0u32; COALESCE_WORDS];
        w[0] = ETHTOOL_GCOALESCE;
        ethtool_ioctl(nic, &mut w)?;
        Ok(
            json!({"rx_usecs": w[RX_USECS], "rx_frames": w[RX_FRAMES], "adaptive_rx": w[ADAPTIVE_RX] != 0}),
        )
    })();
    let eee = (|| {
        let mut w = [0u32; EEE_WORDS];
        w[0] = ETHTOOL_GEEE;
        ethtool_ioctl(nic, &mut w)?;
        Ok(
            json!({"supported": w[EEE_SUPPORTED] != 0, "enabled": w[EEE_ENABLED] != 0, "active": w[EEE_ACTIVE] != 0}),
        )
    })();
    json!({"coalesce": reading(co), "eee": reading(eee)})
}

/// Live: the ioctl. Under --root: the snapshot's recorded readings, if any.
pub(crate) fn readings(host: &Host, nic: &str, what: &str) -> Result<Value, Verdict> {
    if host.is_live() {
        return Ok(live_readings(nic)[what].clone());
    }
    let text = host
        .read(SNAPSHOT_FACTS)
        .map_err(|_| Verdict::unknown("needs the live machine or a snapshot"))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|_| Verdict::unknown("snapshot facts unreadable"))?;
    let r = v["ethtool"][nic][what].clone();
    if r.is_null() {
        return Err(Verdict::unknown("not in the snapshot"));
    }
    Ok(r)
}

pub const NIC_COALESCE: Check = Check {
    id: "nic_coalesce",
    section: Section::Nic,
    title: "NIC interrupt coalescing off",
    doc: "Interrupt coalescing holds a received frame until a timer or a frame count fires, adding up to \
          rx-usecs to every EtherCAT reply (SOEM advises rx-usecs 0). Passes when rx-usecs is 0 and adaptive rx \
          coalescing is off; informational when the driver has no coalescing.",
    remedy: Some(remedy::NIC_COALESCE),
    evaluate: nic_coalesce,
};

fn nic_coalesce(host: &Host, ctx: &Ctx) -> Verdict {
    settle((|| {
        let nic = present(host, ctx)?;
        let r = readings(host, nic, "coalesce")?;
        if let Some(s) = r.as_str() {
            return Ok(if s == "unsupported" {
                Verdict::info("driver has no interrupt coalescing")
            } else {
                Verdict::unknown(s.to_string())
            });
        }
        let usecs = r["rx_usecs"].as_u64().unwrap_or(u64::MAX);
        let adaptive = r["adaptive_rx"].as_bool().unwrap_or(true);
        let d = format!(
            "rx-usecs={usecs}, adaptive-rx={}",
            if adaptive { "on" } else { "off" }
        );
        Ok(if usecs == 0 && !adaptive {
            Verdict::pass(d)
        } else {
            Verdict::fail(d)
        })
    })())
}

pub const NIC_EEE: Check = Check {
    id: "nic_eee",
    section: Section::Nic,
    title: "NIC Energy Efficient Ethernet off",
    doc: "With EEE the PHY sleeps between frames (low-power idle) and needs microseconds to wake for the next \
          one. Passes when EEE is not supported, not enabled, or not active on the link.",
    remedy: Some(remedy::NIC_EEE),
    evaluate: nic_eee,
};

fn nic_eee(host: &Host, ctx: &Ctx) -> Verdict {
    settle((|| {
        let nic = present(host, ctx)?;
        let r = readings(host, nic, "eee")?;
        if let Some(s) = r.as_str() {
            return Ok(if s == "unsupported" {
                Verdict::pass("no EEE support")
            } else {
                Verdict::unknown(s.to_string())
            });
        }
        let (enabled, active) = (r["enabled"].as_bool(), r["active"].as_bool());
        Ok(match (enabled, active) {
            (Some(true), Some(true)) => Verdict::fail("EEE enabled and active"),
            (Some(true), Some(false)) => Verdict::pass("EEE enabled, not active on this link"),
            (Some(false), _) => Verdict::pass("EEE disabled"),
            _ => Verdict::unknown("unexpected EEE reading"),
        })
    })())
}
