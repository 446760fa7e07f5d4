//! What `reflect` does to a frame before sending it back: EtherCAT processed as one SubDevice would, raw
//! requests turned into replies, UDP datagrams to port 7 echoed.

use super::ecat::{self, ETH_HLEN, ETHERTYPE_ECAT};
use super::frame::{
    ETHERTYPE_IPV4, ETHERTYPE_RAW, KIND_REPLY, KIND_REQUEST, UDP_ECHO_PORT, read_mark,
};
use super::ipv4::udp_parts;

const IP_OFF: usize = ETH_HLEN;

/// What `echo_in_place` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    Ecat,
    Raw,
    Udp,
}

/// The reflector's job on one received frame, in place: EtherCAT processed as a SubDevice; raw requests turned
/// into replies; UDP to port 7 echoed with addresses and ports swapped (the checksums stay valid: a one's
/// complement sum does not depend on the order of its words). `None`: not for the reflector, send nothing.
pub fn echo_in_place(frame: &mut [u8], own_mac: [u8; 6]) -> Option<Echo> {
    match ecat::ethertype(frame)? {
        ETHERTYPE_ECAT => ecat::reflect_in_place(frame).ok().map(|_| Echo::Ecat),
        ETHERTYPE_RAW => {
            // Only requests: an echo of an echo would ping-pong between two reflectors.
            match read_mark(frame, ETH_HLEN) {
                Ok((KIND_REQUEST, _)) => {}
                _ => return None,
            }
            frame[ETH_HLEN + 4] = KIND_REPLY;
            swap_macs(frame, own_mac);
            Some(Echo::Raw)
        }
        ETHERTYPE_IPV4 => {
            let (ip, udp) = udp_parts(frame)?;
            let ihl = ip.len();
            if udp[2..4] != UDP_ECHO_PORT.to_be_bytes() || udp[0..2] == UDP_ECHO_PORT.to_be_bytes()
            {
                return None;
            }
            swap_macs(frame, own_mac);
            let ip = &mut frame[IP_OFF..IP_OFF + ihl];
            for i in 0..4 {
                ip.swap(12 + i, 16 + i);
            }
            let u = IP_OFF + ihl;
            for i in 0..2 {
                frame.swap(u + i, u + 2 + i);
            }
            Some(Echo::Udp)
        }
        _ => None,
    }
}

fn swap_macs(frame: &mut [u8], own_mac: [u8; 6]) {
    let (dst, src) = frame.split_at_mut(6);
    dst.copy_from_slice(&src[..6]);
    src[..6].copy_from_slice(&own_mac);
}
