//! Packet timestamps: the NIC's hardware timestamping (SIOCSHWTSTAMP, restored afterwards), SO_TIMESTAMPING on a
//! socket, and the control messages that carry the stamps, parsed from a caller's buffer without allocating.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use super::netif;

/// Which clock stamps the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TsKind {
    /// The NIC's PTP clock, at the wire.
    Hardware,
    /// The kernel's CLOCK_REALTIME, in the driver (TX) and at packet receive (RX).
    Software,
}

impl TsKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TsKind::Hardware => "hardware",
            TsKind::Software => "software",
        }
    }
}

/// Stamps found in one message's control data; 0 = absent. `tx` says it came back on the error queue as the
/// transmit stamp of a sent frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamps {
    pub sw_ns: u64,
    pub hw_ns: u64,
    pub tx: bool,
}

fn ts_ns(t: libc::timespec) -> u64 {
    if t.tv_sec <= 0 && t.tv_nsec <= 0 {
        return 0;
    }
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}

/// Reads SCM_TIMESTAMPING (software stamp in slot 0, raw hardware stamp in slot 2) and the transmit-timestamp
/// marker out of a msghdr that recvmsg filled.
pub fn parse_cmsgs(msg: &libc::msghdr) -> Stamps {
    let mut s = Stamps::default();
    // SAFETY: `msg` was filled by recvmsg: msg_control/msg_controllen describe our own buffer and the kernel's
    // cmsg chain in it; CMSG_* walk inside those bounds, and the payloads are read unaligned by value.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            let data = libc::CMSG_DATA(c);
            let len = h.cmsg_len as usize - (data as usize - c as usize);
            let tsing = h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPING;
            let txerr = (h.cmsg_level == libc::SOL_PACKET
                && h.cmsg_type == libc::PACKET_TX_TIMESTAMP)
                || (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR);
            if tsing && len >= 3 * std::mem::size_of::<libc::timespec>() {
                let t = data as *const libc::timespec;
                s.sw_ns = ts_ns(t.read_unaligned());
                s.hw_ns = ts_ns(t.add(2).read_unaligned());
            } else if txerr && len >= std::mem::size_of::<libc::sock_extended_err>() {
                let e = (data as *const libc::sock_extended_err).read_unaligned();
                s.tx = e.ee_errno == libc::ENOMSG as u32
                    && e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING;
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    s
}

fn hwtstamp_ioctl(
    name: &str,
    req: libc::c_ulong,
    cfg: &mut libc::hwtstamp_config,
) -> io::Result<()> {
    // SAFETY: a datagram socket only serves as the ioctl handle; checked before use, closed by OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is fresh and owned here.
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data, all-zero valid.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    r.ifr_ifru.ifru_data = cfg as *mut libc::hwtstamp_config as *mut libc::c_char;
    // SAFETY: SIOC[GS]HWTSTAMP read/write one hwtstamp_config through ifru_data, which points at `cfg`.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), req as _, &mut r as *mut libc::ifreq) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The NIC's hardware timestamping, switched on for TX and all RX frames; the previous setting is put back on drop
/// (another program, a PTP daemon say, may rely on it).
pub struct HwTstamp {
    name: String,
    previous: libc::hwtstamp_config,
}

impl HwTstamp {
    /// `Err` when the NIC (or its driver) has no hardware timestamps — veth answers EOPNOTSUPP.
    pub fn enable(name: &str) -> io::Result<HwTstamp> {
        netif::validate_ifname(name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let mut previous = libc::hwtstamp_config {
            flags: 0,
            tx_type: libc::HWTSTAMP_TX_OFF as i32,
            rx_filter: libc::HWTSTAMP_FILTER_NONE as i32,
        };
        // Older drivers have SET but not GET: then "off" is the best guess of what was there.
        let _ = hwtstamp_ioctl(name, libc::SIOCGHWTSTAMP, &mut previous);
        let mut cfg = libc::hwtstamp_config {
            flags: 0,
            tx_type: libc::HWTSTAMP_TX_ON as i32,
            rx_filter: libc::HWTSTAMP_FILTER_ALL as i32,
        };
        hwtstamp_ioctl(name, libc::SIOCSHWTSTAMP, &mut cfg)?;
        // A driver may narrow the filter (PTP frames only): then EtherCAT replies get no hardware stamp, and
        // software stamps at both ends are the honest measure.
        if cfg.rx_filter != libc::HWTSTAMP_FILTER_ALL as i32 {
            let mut p = previous;
            let _ = hwtstamp_ioctl(name, libc::SIOCSHWTSTAMP, &mut p);
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        Ok(HwTstamp {
            name: name.to_string(),
            previous,
        })
    }
}

impl Drop for HwTstamp {
    fn drop(&mut self) {
        let mut p = self.previous;
        let _ = hwtstamp_ioctl(&self.name, libc::SIOCSHWTSTAMP, &mut p);
    }
}

/// Asks for TX (error queue) and RX timestamps on `fd`: hardware ones when `hw`, software ones always (RX software
/// stamps are the fallback when a hardware stamp is missing).
pub fn enable_on_socket(fd: RawFd, hw: bool) -> io::Result<()> {
    let mut flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
    flags |= if hw {
        libc::SOF_TIMESTAMPING_TX_HARDWARE
            | libc::SOF_TIMESTAMPING_RX_HARDWARE
            | libc::SOF_TIMESTAMPING_RAW_HARDWARE
    } else {
        libc::SOF_TIMESTAMPING_TX_SOFTWARE
    };
    let v = flags as libc::c_int;
    netif::set_sockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_and_loopback_have_no_hardware_timestamps() {
        // Loopback, like veth, has no PTP clock: enabling must fail cleanly and change nothing.
        let e = HwTstamp::enable("lo")
            .err()
            .expect("lo has no hardware timestamps");
        assert!(e.raw_os_error().is_some(), "{e}");
        assert!(HwTstamp::enable("bad/name").is_err());
    }

    #[test]
    fn timespec_conversion() {
        assert_eq!(
            ts_ns(libc::timespec {
                tv_sec: 0,
                tv_nsec: 0
            }),
            0
        );
        assert_eq!(
            ts_ns(libc::timespec {
                tv_sec: 2,
                tv_nsec: 5
            }),
            2_000_000_005
        );
    }
}
