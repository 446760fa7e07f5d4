//! The probe frames of NIC mode (EtherCAT, raw Ethernet, UDP) and their replies (reply.rs); `reflect`'s echo of raw
//! and UDP frames is crate::ethercat::echo. A probe is built once and patched in place per cycle (`set_seq`): nothing allocates.
//!
//! Every probe carries a 12-byte mark — "RMPE", a kind byte (1 request, 2 reply), the run's 24-bit tag, the 32-bit
//! sequence number (both big endian) — so that each reply is matched to its request of this run (another run's
//! replies, with another tag, are never taken for ours):
//! - ecat: datagram 1 is BRD of 2 bytes at register 0x0000 (the ESC type: a harmless read that every SubDevice
//!   answers, as SOEM's detection does; WKC = the number of SubDevices), datagram 2 a NOP whose data carries the
//!   mark (an ESC passes NOP data through untouched). With the arrival datagrams (`Probe::with_arrival`, 36 bytes
//!   more), datagram 3 is APRD of 8 bytes at 0x0918 of the first SubDevice (its processing unit's receive time:
//!   the previous frame's latch, as it comes before the write) and datagram 4 BWR of 4 bytes to 0x0900, which
//!   latches this frame's receive time in every SubDevice with DC (docs/how-it-measures.md). Every datagram has
//!   index = sequence mod 256.
//! - raw: EtherType 0x88B5 (IEEE local experimental), the mark, zero padding.
//! - udp: IPv4 + UDP built here (no IP stack), to the echo port 7 of the peer (addresses from the options, the
//!   peer's MAC from ARP).
//!
//! Every probe is at least 60 bytes on the wire (zero padding after the content, as a NIC pads).

mod reply;

use crate::ethercat::codec::{self, DG_HLEN, ECAT_HLEN, ETH_HLEN, ETHERTYPE_ECAT, WKC_LEN, cmd};
use crate::measure::spec::Mode;

pub(crate) use crate::measure::nic::ipv4::{ip_checksum, udp_checksum};
pub(crate) use reply::{DcRead, Reject, Reply, parse_reply, probe_seq, read_mark};

pub(crate) const ETHERTYPE_RAW: u16 = 0x88B5;
pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(crate) const MAX_FRAME: usize = 1514;
pub(crate) const MAGIC: [u8; 4] = *b"RMPE";
pub(crate) const KIND_REQUEST: u8 = 1;
pub(crate) const KIND_REPLY: u8 = 2;
pub(crate) const MARK_LEN: usize = 12;
pub(crate) const UDP_ECHO_PORT: u16 = 7;
pub(crate) const UDP_SRC_PORT: u16 = 0x88B5;
/// Default UDP addresses, link-local: never routed. `reflect` answers ARP for DST_IP; a stock echo service is
/// reached with the addresses it has (`--local-ip`, `--peer-ip`).
pub(crate) const SRC_IP: [u8; 4] = [169, 254, 88, 1];
pub(crate) const DST_IP: [u8; 4] = [169, 254, 88, 2];
/// The Ethernet minimum without FCS: shorter frames are padded with zeros (as a NIC does), and no probe is shorter.
pub(crate) const MIN_FRAME: usize = 60;

const ECAT_BRD_LEN: usize = 2;
/// The arrival datagrams: the read of the previous latch, the write that latches.
const DC_READ_LEN: usize = 8;
const DC_LATCH_LEN: usize = 4;
pub(crate) const DC_RECV_TIME_PU: u16 = 0x0918;
pub(crate) const DC_RECV_TIME_P0: u16 = 0x0900;
/// What the arrival datagrams add to a frame.
pub(crate) const ARRIVAL_BYTES: usize = 2 * (DG_HLEN + WKC_LEN) + DC_READ_LEN + DC_LATCH_LEN;
const ECAT_MARK_OFF: usize = ETH_HLEN + ECAT_HLEN + DG_HLEN + ECAT_BRD_LEN + WKC_LEN + DG_HLEN;
const IP_OFF: usize = ETH_HLEN;
const UDP_OFF: usize = IP_OFF + 20;
const UDP_MARK_OFF: usize = UDP_OFF + 8;

/// The socket protocol (EtherType) a mode sends and listens on.
pub(crate) fn ethertype(mode: Mode) -> u16 {
    match mode {
        Mode::Ecat => ETHERTYPE_ECAT,
        Mode::Raw => ETHERTYPE_RAW,
        Mode::Udp => ETHERTYPE_IPV4,
    }
}

fn mark_off(mode: Mode) -> usize {
    match mode {
        Mode::Ecat => ECAT_MARK_OFF,
        Mode::Raw => ETH_HLEN,
        Mode::Udp => UDP_MARK_OFF,
    }
}

/// Shortest probe of a mode, in bytes with the Ethernet header and without FCS (EtherCAT: without the arrival
/// datagrams).
pub(crate) fn min_len(mode: Mode) -> usize {
    mark_off(mode) + MARK_LEN + if mode == Mode::Ecat { WKC_LEN } else { 0 }
}

/// The one --pktlen rule, for every mode: the length on the wire without FCS, from the Ethernet minimum (60, the
/// default) to the interface's MTU + 14 (and at most MAX_FRAME). Checked before anything is sent.
pub(crate) fn wire_len(mode: Mode, pktlen: Option<u16>, mtu: u32) -> Result<usize, PktlenError> {
    let max = (mtu as usize + ETH_HLEN).min(MAX_FRAME);
    match pktlen.map(usize::from) {
        None => Ok(MIN_FRAME),
        Some(n) if (MIN_FRAME..=max).contains(&n) => Ok(n),
        Some(n) => Err(PktlenError {
            pktlen: n,
            mode: mode.name(),
            max,
            mtu,
        }),
    }
}

/// A --pktlen the interface cannot carry (a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--pktlen {pktlen}: {mode} frames are {MIN_FRAME} to {max} bytes here (the interface MTU {mtu} + 14)"
)]
pub(crate) struct PktlenError {
    pktlen: usize,
    mode: &'static str,
    max: usize,
    mtu: u32,
}

impl From<PktlenError> for crate::error::Error {
    fn from(e: PktlenError) -> Self {
        crate::error::Error::usage(e.to_string())
    }
}

/// Where a probe goes: the interface's MAC and, for UDP, the peer's MAC (from ARP) and both IPv4 addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Addrs {
    pub(crate) mac: [u8; 6],
    pub(crate) peer_mac: [u8; 6],
    pub(crate) ip: [u8; 4],
    pub(crate) peer_ip: [u8; 4],
}

impl Addrs {
    /// Broadcast to the default link-local addresses (ecat and raw; tests).
    pub(crate) fn broadcast(mac: [u8; 6]) -> Addrs {
        Addrs {
            mac,
            peer_mac: [0xff; 6],
            ip: SRC_IP,
            peer_ip: DST_IP,
        }
    }
}

/// The bits of the run's tag in the mark.
pub(crate) const TAG_MASK: u32 = 0x00FF_FFFF;

/// A tag for this run's probes: from the pid and the clock, so that two runs (here or on another MainDevice of the
/// segment) differ; never 0, which older versions sent.
pub(crate) fn run_tag() -> u32 {
    let t = crate::sys::clock::realtime_ns();
    let mixed = (t ^ (t >> 24) ^ (u64::from(std::process::id()) << 5)) as u32 & TAG_MASK;
    mixed.max(1)
}

pub(crate) struct Probe {
    mode: Mode,
    buf: [u8; MAX_FRAME],
    len: usize,
    /// Where the arrival datagrams start (EtherCAT `with_arrival`).
    arrival: Option<usize>,
}

impl Probe {
    /// `new` with the arrival datagrams after the mark (EtherCAT; other modes have none): the frame is
    /// `ARRIVAL_BYTES` longer than without, or `wire` bytes if that is longer.
    pub(crate) fn with_arrival(mode: Mode, a: &Addrs, wire: usize, tag: u32) -> Probe {
        if mode != Mode::Ecat {
            return Probe::new(mode, a, wire, tag);
        }
        let content = if wire == MIN_FRAME {
            min_len(mode)
        } else {
            wire.saturating_sub(ARRIVAL_BYTES).max(min_len(mode))
        };
        let len = (content + ARRIVAL_BYTES).clamp(wire, MAX_FRAME);
        let mut p = Probe::new(mode, a, content.max(MIN_FRAME), tag);
        p.len = len;
        let b = &mut p.buf;
        b[content..len].fill(0);
        codec::put_ecat_header(b, content + ARRIVAL_BYTES - ETH_HLEN - ECAT_HLEN);
        // The NOP's length flags get "more follows".
        b[ECAT_MARK_OFF - DG_HLEN + 7] |= 0x80;
        let o = codec::put_datagram_header(
            b,
            content,
            cmd::APRD,
            0,
            0,
            DC_RECV_TIME_PU,
            DC_READ_LEN,
            true,
        );
        codec::put_datagram_header(
            b,
            o + DC_READ_LEN + WKC_LEN,
            cmd::BWR,
            0,
            0,
            DC_RECV_TIME_P0,
            DC_LATCH_LEN,
            false,
        );
        p.arrival = Some(content);
        p.set_seq(0);
        p
    }

    /// A probe of `wire` bytes (see `wire_len`). EtherCAT probes go to broadcast from the interface's MAC with bit
    /// 0x02 cleared: a SubDevice returns them with it set, which tells an answer from a request. Raw probes go to
    /// broadcast, UDP ones to the peer's MAC; both come from the interface's MAC, so replies reach us without
    /// promiscuous mode. `tag` (24 bits: `run_tag`) goes into every frame's mark.
    pub(crate) fn new(mode: Mode, a: &Addrs, wire: usize, tag: u32) -> Probe {
        let wire = wire.clamp(MIN_FRAME, MAX_FRAME);
        // The EtherCAT content: the shortest probe unless a length was asked for, then the NOP fills it.
        let content = if mode == Mode::Ecat && wire == MIN_FRAME {
            min_len(mode)
        } else {
            wire
        };
        let mut p = Probe {
            mode,
            buf: [0; MAX_FRAME],
            len: wire,
            arrival: None,
        };
        let b = &mut p.buf;
        b[0..6].copy_from_slice(if mode == Mode::Udp {
            &a.peer_mac
        } else {
            &[0xff; 6]
        });
        b[6..12].copy_from_slice(&a.mac);
        if mode == Mode::Ecat {
            b[6] &= !codec::ESC_SRC_MAC_BIT;
        }
        b[12..14].copy_from_slice(&ethertype(mode).to_be_bytes());
        match mode {
            Mode::Ecat => {
                let dg_bytes = content - ETH_HLEN - ECAT_HLEN;
                codec::put_ecat_header(b, dg_bytes);
                let o = codec::put_datagram_header(
                    b,
                    ETH_HLEN + ECAT_HLEN,
                    cmd::BRD,
                    0,
                    0,
                    0,
                    ECAT_BRD_LEN,
                    true,
                );
                let nop_data = content - ECAT_MARK_OFF - WKC_LEN;
                codec::put_datagram_header(
                    b,
                    o + ECAT_BRD_LEN + WKC_LEN,
                    cmd::NOP,
                    0,
                    0,
                    0,
                    nop_data,
                    false,
                );
            }
            Mode::Raw => {}
            Mode::Udp => {
                let ip = &mut b[IP_OFF..UDP_OFF];
                ip[0] = 0x45;
                ip[2..4].copy_from_slice(&((wire - IP_OFF) as u16).to_be_bytes());
                ip[6] = 0x40; // don't fragment
                ip[8] = 64;
                ip[9] = 17;
                ip[12..16].copy_from_slice(&a.ip);
                ip[16..20].copy_from_slice(&a.peer_ip);
                let udp = &mut b[UDP_OFF..UDP_MARK_OFF];
                udp[0..2].copy_from_slice(&UDP_SRC_PORT.to_be_bytes());
                udp[2..4].copy_from_slice(&UDP_ECHO_PORT.to_be_bytes());
                udp[4..6].copy_from_slice(&((wire - UDP_OFF) as u16).to_be_bytes());
            }
        }
        let m = mark_off(mode);
        b[m..m + 4].copy_from_slice(&MAGIC);
        b[m + 4] = KIND_REQUEST;
        b[m + 5..m + 8].copy_from_slice(&(tag & TAG_MASK).to_be_bytes()[1..]);
        p.set_seq(0);
        p
    }

    /// Stamps sequence number `seq` (and for ecat the datagram indexes; for udp the IP id and both checksums).
    pub(crate) fn set_seq(&mut self, seq: u32) {
        let m = mark_off(self.mode);
        let b = &mut self.buf[..self.len];
        b[m + 8..m + 12].copy_from_slice(&seq.to_be_bytes());
        match self.mode {
            Mode::Ecat => {
                b[ETH_HLEN + ECAT_HLEN + 1] = seq as u8;
                b[ECAT_MARK_OFF - DG_HLEN + 1] = seq as u8;
                if let Some(o) = self.arrival {
                    b[o + 1] = seq as u8;
                    b[o + DG_HLEN + DC_READ_LEN + WKC_LEN + 1] = seq as u8;
                }
            }
            Mode::Raw => {}
            Mode::Udp => {
                b[IP_OFF + 4..IP_OFF + 6].copy_from_slice(&(seq as u16).to_be_bytes());
                b[IP_OFF + 10..IP_OFF + 12].fill(0);
                let c = ip_checksum(&b[IP_OFF..UDP_OFF]);
                b[IP_OFF + 10..IP_OFF + 12].copy_from_slice(&c.to_be_bytes());
                b[UDP_OFF + 6..UDP_OFF + 8].fill(0);
                let c = udp_checksum(&b[IP_OFF..]);
                b[UDP_OFF + 6..UDP_OFF + 8].copy_from_slice(&c.to_be_bytes());
            }
        }
    }

    pub(crate) fn frame(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The frame carries the arrival datagrams.
    pub(crate) fn has_arrival(&self) -> bool {
        self.arrival.is_some()
    }
}

#[cfg(test)]
mod tests;
