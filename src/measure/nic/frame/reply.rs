//! The replies to our probes: each checked against the mode's layout and its mark, and matched by sequence number.

use super::{
    DC_RECV_TIME_P0, DC_RECV_TIME_PU, ECAT_BRD_LEN, ETHERTYPE_RAW, IP_OFF, KIND_REQUEST, MAGIC,
    MARK_LEN, UDP_ECHO_PORT, UDP_SRC_PORT,
};
use super::{ip_checksum, mark_off};
use crate::ethercat::codec::{self, ETH_HLEN, cmd};
use crate::measure::nic::ipv4::udp_parts;
use crate::measure::spec::Mode;

/// The sequence number of one of our own probes: the copy of a sent frame that comes back with its TX stamp.
pub(crate) fn probe_seq(mode: Mode, frame: &[u8], tag: u32) -> Option<u32> {
    match read_mark(frame, mark_off(mode)) {
        Ok(m) if m.kind == KIND_REQUEST && m.tag == tag => Some(m.seq),
        _ => None,
    }
}

/// A reply to one of our probes. `wkc` is the working counter of the BRD (ecat; 0: no SubDevice processed it),
/// `esc` the two bytes it read at 0x0000 (ESC type and revision, ORed over the SubDevices); zeros for raw/udp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) seq: u32,
    /// The tag of the run that sent the request (see `run_tag`).
    pub(crate) tag: u32,
    pub(crate) wkc: u16,
    pub(crate) esc: [u8; 2],
    /// The arrival datagrams' answer, when the probe had them.
    pub(crate) dc: Option<DcRead>,
}

/// What the arrival datagrams came back with: the first SubDevice's latch before this frame (0x0918) and the WKCs
/// of that read and of the latching write (0: no SubDevice with DC answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DcRead {
    pub(crate) latch: u64,
    pub(crate) read_wkc: u16,
    pub(crate) latch_wkc: u16,
}

/// Why a received frame is not a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Not meant for us (other EtherType, other UDP traffic): ignored.
    Foreign,
    /// Addressed to us but wrong (command, index, mark, checksum): counted as unmatched.
    Invalid(&'static str),
}

/// The mark of a probe or its reply: request or reply, whose run, which frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    pub(crate) kind: u8,
    pub(crate) tag: u32,
    pub(crate) seq: u32,
}

pub(crate) fn read_mark(frame: &[u8], off: usize) -> Result<Mark, Reject> {
    let m = frame
        .get(off..off + MARK_LEN)
        .ok_or(Reject::Invalid("too short for the mark"))?;
    if m[0..4] != MAGIC {
        return Err(Reject::Invalid("no RMPE mark"));
    }
    Ok(Mark {
        kind: m[4],
        tag: u32::from_be_bytes([0, m[5], m[6], m[7]]),
        seq: u32::from_be_bytes([m[8], m[9], m[10], m[11]]),
    })
}

/// Checks that `frame` answers one of our probes of `mode` and returns its sequence number (and the WKC).
pub(crate) fn parse_reply(mode: Mode, frame: &[u8]) -> Result<Reply, Reject> {
    match mode {
        Mode::Ecat => parse_ecat_reply(frame),
        Mode::Raw => {
            if codec::ethertype(frame) != Some(ETHERTYPE_RAW) {
                return Err(Reject::Foreign);
            }
            // Another user of the experimental EtherType is not ours to count.
            let m = read_mark(frame, ETH_HLEN).map_err(|_| Reject::Foreign)?;
            Ok(Reply {
                seq: m.seq,
                tag: m.tag,
                wkc: 0,
                esc: [0, 0],
                dc: None,
            })
        }
        Mode::Udp => {
            let (ip, udp) = udp_parts(frame).ok_or(Reject::Foreign)?;
            if udp[0..2] != UDP_ECHO_PORT.to_be_bytes() || udp[2..4] != UDP_SRC_PORT.to_be_bytes() {
                return Err(Reject::Foreign);
            }
            if ip_checksum(ip) != 0 {
                return Err(Reject::Invalid("bad IPv4 header checksum"));
            }
            let ihl = ip.len();
            let m = read_mark(frame, IP_OFF + ihl + 8)?;
            Ok(Reply {
                seq: m.seq,
                tag: m.tag,
                wkc: 0,
                esc: [0, 0],
                dc: None,
            })
        }
    }
}

fn parse_ecat_reply(frame: &[u8]) -> Result<Reply, Reject> {
    let mut it = codec::datagrams(frame).map_err(|e| match e {
        codec::EcatError::NotEcat => Reject::Foreign,
        _ => Reject::Invalid("malformed EtherCAT frame"),
    })?;
    let bad = Reject::Invalid("malformed EtherCAT datagram");
    let brd = it.next().ok_or(bad)?.map_err(|_| bad)?;
    let nop = it
        .next()
        .ok_or(Reject::Invalid("not our probe (one datagram)"))?
        .map_err(|_| bad)?;
    if brd.cmd != cmd::BRD || brd.ado != 0 || brd.data.len() != ECAT_BRD_LEN || nop.cmd != cmd::NOP
    {
        return Err(Reject::Invalid("not our probe (commands)"));
    }
    let Mark { seq, tag, .. } = read_mark(nop.data, 0)?;
    if brd.idx != seq as u8 || nop.idx != seq as u8 {
        return Err(Reject::Invalid(
            "datagram index does not match the sequence",
        ));
    }
    Ok(Reply {
        seq,
        tag,
        wkc: brd.wkc,
        esc: [brd.data[0], brd.data[1]],
        dc: dc_read(it, seq)?,
    })
}

/// The arrival datagrams after the mark, if the probe had them: APRD of 0x0918, then BWR to 0x0900.
fn dc_read<'a>(
    mut it: impl Iterator<Item = Result<codec::Datagram<'a>, codec::EcatError>>,
    seq: u32,
) -> Result<Option<DcRead>, Reject> {
    let bad = Reject::Invalid("malformed arrival datagrams");
    let Some(read) = it.next() else {
        return Ok(None);
    };
    let read = read.map_err(|_| bad)?;
    let latch = it.next().ok_or(bad)?.map_err(|_| bad)?;
    if read.cmd != cmd::APRD
        || read.ado != DC_RECV_TIME_PU
        || read.data.len() != 8
        || latch.cmd != cmd::BWR
        || latch.ado != DC_RECV_TIME_P0
    {
        return Err(Reject::Invalid("not our probe (arrival datagrams)"));
    }
    if read.idx != seq as u8 || latch.idx != seq as u8 {
        return Err(Reject::Invalid(
            "datagram index does not match the sequence",
        ));
    }
    let mut v = [0u8; 8];
    v.copy_from_slice(read.data);
    Ok(Some(DcRead {
        latch: u64::from_le_bytes(v),
        read_wkc: read.wkc,
        latch_wkc: latch.wkc,
    }))
}
