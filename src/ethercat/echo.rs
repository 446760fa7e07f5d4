//! What `reflect` does to a frame before sending it back: EtherCAT processed by its chain of software SubDevices
//! (esc), raw requests turned into replies, UDP datagrams to port 7 of its IPv4 address echoed, and ARP
//! requests for that address answered (so a sender can learn its MAC, as with any host).

use super::codec::{ETH_HLEN, ETHERTYPE_ECAT};
use super::esc::{Chain, Processed};
use crate::measure::nic::frame::{
    ETHERTYPE_IPV4, ETHERTYPE_RAW, KIND_REPLY, KIND_REQUEST, UDP_ECHO_PORT, read_mark,
};
use crate::measure::nic::ipv4::{self, ETHERTYPE_ARP, udp_parts};

const IP_OFF: usize = ETH_HLEN;

/// What `Echoer::echo_in_place` did: the frame is now the answer to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Echo {
    Ecat,
    Raw,
    Udp,
    Arp,
}

/// Why nothing is sent back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Not for the reflector (other traffic, malformed, another address).
    NotForUs,
    /// Already an answer (an ESC's, another reflector's, an echo): answering it would start a storm.
    Answer,
}

/// The reflector's state: its SubDevices and its addresses.
pub(crate) struct Echoer {
    pub(crate) chain: Chain,
    mac: [u8; 6],
    ip: [u8; 4],
}

impl Echoer {
    pub(crate) fn new(chain: Chain, mac: [u8; 6], ip: [u8; 4]) -> Echoer {
        Echoer { chain, mac, ip }
    }

    /// The reflector's job on one received frame, in place. UDP is echoed with addresses and ports swapped (the
    /// checksums stay valid: a one's complement sum does not depend on the order of its words).
    /// `rx_ns`: the frame's receive stamp, the time base of the SubDevices' distributed clocks.
    pub(crate) fn echo_in_place(&mut self, frame: &mut [u8], rx_ns: u64) -> Result<Echo, Skip> {
        let et = super::codec::ethertype(frame).ok_or(Skip::NotForUs)?;
        match et {
            ETHERTYPE_ECAT => match self.chain.process_at(frame, rx_ns) {
                Ok(Processed::Answer) => Ok(Echo::Ecat),
                Ok(Processed::AlreadyAnswered) => Err(Skip::Answer),
                Err(_) => Err(Skip::NotForUs),
            },
            ETHERTYPE_RAW => match read_mark(frame, ETH_HLEN) {
                Ok(m) if m.kind == KIND_REQUEST => {
                    frame[ETH_HLEN + 4] = KIND_REPLY;
                    swap_macs(frame, self.mac);
                    Ok(Echo::Raw)
                }
                Ok(m) if m.kind == KIND_REPLY => Err(Skip::Answer),
                _ => Err(Skip::NotForUs),
            },
            ETHERTYPE_IPV4 => {
                let (ip, udp) = udp_parts(frame).ok_or(Skip::NotForUs)?;
                if udp[0..2] == UDP_ECHO_PORT.to_be_bytes() {
                    return Err(Skip::Answer);
                }
                if udp[2..4] != UDP_ECHO_PORT.to_be_bytes() || ip[16..20] != self.ip {
                    return Err(Skip::NotForUs);
                }
                let ihl = ip.len();
                swap_macs(frame, self.mac);
                let ip = &mut frame[IP_OFF..IP_OFF + ihl];
                for i in 0..4 {
                    ip.swap(12 + i, 16 + i);
                }
                let u = IP_OFF + ihl;
                for i in 0..2 {
                    frame.swap(u + i, u + 2 + i);
                }
                Ok(Echo::Udp)
            }
            ETHERTYPE_ARP => {
                if ipv4::arp_reply_in_place(frame, self.mac, self.ip) {
                    Ok(Echo::Arp)
                } else {
                    Err(Skip::NotForUs)
                }
            }
            _ => Err(Skip::NotForUs),
        }
    }
}

fn swap_macs(frame: &mut [u8], own_mac: [u8; 6]) {
    let (dst, src) = frame.split_at_mut(6);
    dst.copy_from_slice(&src[..6]);
    src[..6].copy_from_slice(&own_mac);
}
