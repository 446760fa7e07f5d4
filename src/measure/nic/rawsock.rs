//! An AF_PACKET raw socket bound to one interface and one EtherType, with timestamps. Sending and receiving use
//! caller-owned buffers: nothing here allocates after `open`. The system calls are `sys::packet`'s.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::tstamp::{HwTstamp, TsKind};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::sys::{netdev, packet, sockopt};

/// Every EtherType (ETH_P_ALL), for the reflector.
pub(crate) const ETH_P_ALL: u16 = 0x0003;

pub(crate) struct RawSocket {
    fd: OwnedFd,
    ifindex: i32,
    name: String,
    hw: Option<HwTstamp>,
}

/// One received frame: length, stamps, sll_pkttype.
pub(crate) use crate::sys::packet::Message as Received;

/// What poll found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ready {
    pub(crate) readable: bool,
    /// The error queue has messages: transmit timestamps.
    pub(crate) errqueue: bool,
}

impl RawSocket {
    /// A raw socket on interface `name` (validated, must exist) for frames of EtherType `proto`; with `proto` 0 it
    /// receives nothing and only sends (its error queue still returns the transmit stamps).
    pub(crate) fn open(name: &str, proto: u16) -> Result<RawSocket> {
        let ifindex = netdev::ifindex(name)?;
        let fd = packet::socket(proto).map_err(|e| {
            if e.raw_os_error() == Some(libc::EPERM) {
                Error::failed(format!("a raw socket on {name} needs root (CAP_NET_RAW)"))
            } else {
                Error::sys(format!("raw socket on {name}"), e)
            }
        })?;
        packet::bind(&fd, ifindex, proto)
            .map_err(|e| Error::sys(format!("binding a raw socket to {name}"), e))?;
        Ok(RawSocket {
            fd,
            ifindex,
            name: name.to_string(),
            hw: None,
        })
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// An upper bound for a blocking recv.
    pub(crate) fn set_recv_timeout(&self, d: Duration) -> Result<()> {
        sockopt::recv_timeout(self.fd(), d).map_err(|e| Error::sys("SO_RCVTIMEO", e))
    }

    /// Stops delivery of the frames this host sends (for an ETH_P_ALL socket). `false` on kernels before 4.20,
    /// where the caller must skip PACKET_OUTGOING frames itself.
    pub(crate) fn ignore_outgoing(&self) -> bool {
        sockopt::set(
            self.fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &1,
        )
        .is_ok()
    }

    /// Hands frames straight to the driver (PACKET_QDISC_BYPASS): the transmit queue is then the one XPS maps the
    /// sending CPU to, not a qdisc's choice.
    pub(crate) fn bypass_qdisc(&self) -> Result<()> {
        sockopt::set(self.fd(), libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1)
            .map_err(|e| Error::sys(format!("PACKET_QDISC_BYPASS on {}", self.name), e))
    }

    /// Promiscuous mode for the life of this socket (see `sockopt::join_promiscuous`).
    pub(crate) fn join_promiscuous(&self) -> Result<()> {
        sockopt::join_promiscuous(self.fd(), self.ifindex)
            .map_err(|e| Error::sys(format!("promiscuous mode on {}", self.name), e))
    }

    /// Hardware timestamps where the NIC has them (see `HwTstamp`), else software ones; says which.
    pub(crate) fn enable_timestamps(&mut self, host: &Host) -> Result<(TsKind, Option<String>)> {
        self.timestamps(host, sockopt::timestamping)
    }

    /// `enable_timestamps` for received frames only (a socket whose error queue nobody reads).
    pub(crate) fn enable_rx_timestamps(&mut self, host: &Host) -> Result<(TsKind, Option<String>)> {
        self.timestamps(host, sockopt::rx_timestamping)
    }

    fn timestamps(
        &mut self,
        host: &Host,
        set: fn(RawFd, bool) -> io::Result<()>,
    ) -> Result<(TsKind, Option<String>)> {
        let why = match HwTstamp::enable(host, &self.name) {
            Ok(hw) => match set(self.fd(), true) {
                Ok(()) => {
                    self.hw = Some(hw);
                    return Ok((TsKind::Hardware, None));
                }
                Err(e) => format!("SO_TIMESTAMPING with hardware stamps on {}: {e}", self.name),
            },
            Err(e) => super::tstamp::why_software(&self.name, &e),
        };
        set(self.fd(), false)
            .map_err(|e| Error::sys(format!("SO_TIMESTAMPING on {}", self.name), e))?;
        Ok((TsKind::Software, Some(why)))
    }

    /// The same kind of timestamps as another socket on this interface got from `enable_timestamps` (the NIC is
    /// already set up by that one).
    pub(crate) fn set_timestamping(&self, kind: TsKind) -> Result<()> {
        sockopt::timestamping(self.fd(), kind == TsKind::Hardware)
            .map_err(|e| Error::sys(format!("SO_TIMESTAMPING on {}", self.name), e))
    }

    pub(crate) fn send(&self, frame: &[u8]) -> io::Result<()> {
        packet::send(self.fd(), frame)
    }

    /// Waits up to `timeout_ms` (-1: forever) for a frame or a transmit timestamp.
    pub(crate) fn wait(&self, timeout_ms: i32) -> io::Result<Ready> {
        let (readable, errqueue) = packet::poll(self.fd(), timeout_ms)?;
        Ok(Ready { readable, errqueue })
    }

    /// Receives one frame into `buf` (truncated to its length) with its stamps. `errqueue`: read a transmit
    /// timestamp (the sent frame comes back with it) instead. `nonblock`: WouldBlock instead of waiting.
    pub(crate) fn recv(
        &self,
        buf: &mut [u8],
        errqueue: bool,
        nonblock: bool,
    ) -> io::Result<Received> {
        packet::recv(self.fd(), buf, errqueue, nonblock)
    }
}
