//! An AF_PACKET raw socket bound to one interface and one EtherType, with timestamps. Sending and receiving use
//! caller-owned buffers: nothing here allocates after `open`. The system calls are `sys::packet`'s; a socket that
//! receives stamped frames reads them from its receive ring (`sys::rxring`).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use super::tstamp::{HwTstamp, TsKind};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::sys::rxring::RxRing;
use crate::sys::{netdev, packet, sockopt};

/// Every EtherType (ETH_P_ALL), for the reflector.
pub(crate) const ETH_P_ALL: u16 = 0x0003;

pub(crate) struct RawSocket {
    fd: OwnedFd,
    ifindex: i32,
    name: String,
    hw: Option<HwTstamp>,
    /// Received frames and their stamps, once receive stamps are on.
    ring: Option<RxRing>,
    /// How long a blocking receive from the ring waits (-1: forever), as SO_RCVTIMEO does for recvmsg.
    wait_ms: AtomicI32,
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
            ring: None,
            wait_ms: AtomicI32::new(-1),
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
        let ms = d.as_millis().clamp(1, i32::MAX as u128) as i32;
        self.wait_ms.store(ms, Ordering::Relaxed);
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

    /// Transmit stamps on the error queue: hardware ones where the NIC has them (see `HwTstamp`), else software
    /// ones; says which.
    pub(crate) fn enable_timestamps(&mut self, host: &Host) -> Result<(TsKind, Option<String>)> {
        self.timestamps(host, |s, hw| sockopt::tx_timestamping(s.fd(), hw))
    }

    /// `enable_timestamps` for received frames: they are read from a receive ring, which stamps each one.
    pub(crate) fn enable_rx_timestamps(&mut self, host: &Host) -> Result<(TsKind, Option<String>)> {
        self.timestamps(host, RawSocket::map_ring)
    }

    fn timestamps(
        &mut self,
        host: &Host,
        set: fn(&mut RawSocket, bool) -> io::Result<()>,
    ) -> Result<(TsKind, Option<String>)> {
        let why = match HwTstamp::enable(host, &self.name) {
            Ok(hw) => match set(self, true) {
                Ok(()) => {
                    self.hw = Some(hw);
                    return Ok((TsKind::Hardware, None));
                }
                Err(e) => format!("hardware timestamps on {}: {e}", self.name),
            },
            Err(e) => super::tstamp::why_software(&self.name, &e),
        };
        set(self, false).map_err(|e| Error::sys(format!("timestamps on {}", self.name), e))?;
        Ok((TsKind::Software, Some(why)))
    }

    /// Received frames with the same kind of stamps as another socket on this interface got from
    /// `enable_timestamps` (the NIC is already set up by that one).
    pub(crate) fn stamp_received(&mut self, kind: TsKind) -> Result<()> {
        self.map_ring(kind == TsKind::Hardware)
            .map_err(|e| Error::sys(format!("the receive ring on {}", self.name), e))
    }

    fn map_ring(&mut self, hw: bool) -> io::Result<()> {
        if self.ring.is_none() {
            self.ring = Some(RxRing::new(self.fd(), hw)?);
        }
        Ok(())
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
    /// timestamp (the sent frame comes back with it) instead. `nonblock`: WouldBlock instead of waiting; a wait
    /// for the ring lasts up to `set_recv_timeout`'s bound, then gives WouldBlock as recvmsg does.
    pub(crate) fn recv(
        &self,
        buf: &mut [u8],
        errqueue: bool,
        nonblock: bool,
    ) -> io::Result<Received> {
        match &self.ring {
            Some(ring) if !errqueue => self.recv_ring(ring, buf, nonblock),
            _ => packet::recv(self.fd(), buf, errqueue, nonblock),
        }
    }

    /// A frame from the ring; a wait is one poll. When poll wakes with the ring still empty, the socket's error
    /// (ENETDOWN, an interface gone) comes from a non-blocking recvmsg, as it would from a blocking one.
    fn recv_ring(&self, ring: &RxRing, buf: &mut [u8], nonblock: bool) -> io::Result<Received> {
        if let Some(m) = ring.take(buf) {
            return Ok(m);
        }
        if nonblock {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let (readable, err) = packet::poll(self.fd(), self.wait_ms.load(Ordering::Relaxed))?;
        if let Some(m) = ring.take(buf) {
            return Ok(m);
        }
        if readable || err {
            return packet::recv(self.fd(), buf, false, true);
        }
        Err(io::ErrorKind::WouldBlock.into())
    }
}
