//! IPv4 and UDP helpers for the UDP probe and its echo: header lookup and RFC 791/768 checksums.

use super::frame::ETHERTYPE_IPV4;
use crate::ethercat::codec::{self, ETH_HLEN};

const IP_OFF: usize = ETH_HLEN;

/// The IPv4 header and the UDP header of an IPv4/UDP frame.
pub(crate) fn udp_parts(frame: &[u8]) -> Option<(&[u8], &[u8])> {
    if codec::ethertype(frame) != Some(ETHERTYPE_IPV4) {
        return None;
    }
    let v = *frame.get(IP_OFF)?;
    let ihl = usize::from(v & 0x0f) * 4;
    if v >> 4 != 4 || ihl < 20 || frame.get(IP_OFF + 9) != Some(&17) {
        return None;
    }
    let ip = frame.get(IP_OFF..IP_OFF + ihl)?;
    let udp = frame.get(IP_OFF + ihl..IP_OFF + ihl + 8)?;
    Some((ip, udp))
}

fn ones_sum(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut ch = bytes.chunks_exact(2);
    for w in &mut ch {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = ch.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// RFC 791 header checksum; over a header that includes its checksum field, 0 means valid.
pub(crate) fn ip_checksum(header: &[u8]) -> u16 {
    fold(ones_sum(0, header))
}

/// RFC 768 checksum of the UDP datagram that follows the IPv4 header at the start of `ip_packet`
/// (pseudo-header included; 0 is sent as 0xffff).
pub(crate) fn udp_checksum(ip_packet: &[u8]) -> u16 {
    let ihl = usize::from(ip_packet[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip_packet[2], ip_packet[3]])).min(ip_packet.len());
    let udp = &ip_packet[ihl..total];
    let mut sum = ones_sum(0, &ip_packet[12..20]);
    sum += 17 + udp.len() as u32;
    match fold(ones_sum(sum, udp)) {
        0 => 0xffff,
        c => c,
    }
}

pub(crate) const ETHERTYPE_ARP: u16 = 0x0806;
const ARP_LEN: usize = 28;
const ARP_HEAD: [u8; 6] = [0x00, 0x01, 0x08, 0x00, 6, 4];

/// The fields of an Ethernet/IPv4 ARP packet: (operation, sender MAC, sender IP, target IP).
type ArpFields = (u16, [u8; 6], [u8; 4], [u8; 4]);

fn arp_fields(frame: &[u8]) -> Option<ArpFields> {
    if codec::ethertype(frame) != Some(ETHERTYPE_ARP) {
        return None;
    }
    let a = frame.get(ETH_HLEN..ETH_HLEN + ARP_LEN)?;
    if a[0..6] != ARP_HEAD {
        return None;
    }
    let op = u16::from_be_bytes([a[6], a[7]]);
    Some((
        op,
        a[8..14].try_into().ok()?,
        a[14..18].try_into().ok()?,
        a[24..28].try_into().ok()?,
    ))
}

/// Writes an ARP request "who has `target`, tell `ip` at `mac`" (broadcast) into `buf`; returns its length, padded
/// to the 60-byte Ethernet minimum.
pub(crate) fn arp_request(buf: &mut [u8], mac: [u8; 6], ip: [u8; 4], target: [u8; 4]) -> usize {
    let f = &mut buf[..60];
    f.fill(0);
    f[0..6].fill(0xff);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
    let a = &mut f[ETH_HLEN..ETH_HLEN + ARP_LEN];
    a[0..6].copy_from_slice(&ARP_HEAD);
    a[7] = 1;
    a[8..14].copy_from_slice(&mac);
    a[14..18].copy_from_slice(&ip);
    a[24..28].copy_from_slice(&target);
    60
}

/// Turns an ARP request for `ip` into the reply from `mac`, in place; false (frame untouched) for anything else.
pub(crate) fn arp_reply_in_place(frame: &mut [u8], mac: [u8; 6], ip: [u8; 4]) -> bool {
    match arp_fields(frame) {
        Some((1, sha, spa, tpa)) if tpa == ip => {
            frame[0..6].copy_from_slice(&sha);
            frame[6..12].copy_from_slice(&mac);
            let a = &mut frame[ETH_HLEN..ETH_HLEN + ARP_LEN];
            a[7] = 2;
            a[8..14].copy_from_slice(&mac);
            a[14..18].copy_from_slice(&ip);
            a[18..24].copy_from_slice(&sha);
            a[24..28].copy_from_slice(&spa);
            true
        }
        _ => false,
    }
}

/// The MAC address in an ARP reply from `from` (the answer to our request), if `frame` is one.
pub(crate) fn arp_reply_from(frame: &[u8], from: [u8; 4]) -> Option<[u8; 6]> {
    match arp_fields(frame)? {
        (2, sha, spa, _) if spa == from => Some(sha),
        _ => None,
    }
}

#[cfg(test)]
mod arp_tests {
    use super::*;

    // Captured with tshark on a veth (2026-12-03, this machine, Linux 6.18): the kernel asking for 192.168.88.2
    // from 192.168.88.1 before a UDP send, and the peer namespace's answer.
    const LINUX_ARP_REQUEST: &str = "ffffffffffff 8a9b965a9e91 0806 0001 0800 0604 0001 8a9b965a9e91 c0a85801 000000000000 c0a85802";
    const LINUX_ARP_REPLY: &str = "8a9b965a9e91 1ad7f68aecfb 0806 0001 0800 0604 0002 1ad7f68aecfb c0a85802 8a9b965a9e91 c0a85801";

    #[test]
    fn answers_linuxs_request_and_reads_the_reply() {
        let mut f = crate::ethercat::codec::tests::hex(LINUX_ARP_REQUEST);
        let me = [0x02, 0, 0, 0, 0, 0x42];
        assert!(
            !arp_reply_in_place(&mut f.clone(), me, [192, 168, 88, 3]),
            "not our address"
        );
        assert!(arp_reply_in_place(&mut f, me, [192, 168, 88, 2]));
        assert_eq!(&f[0..6], &[0x8a, 0x9b, 0x96, 0x5a, 0x9e, 0x91]);
        // Ours has the layout of the kernel's own reply.
        let linux = crate::ethercat::codec::tests::hex(LINUX_ARP_REPLY);
        assert_eq!(f[12..22], linux[12..22]);
        assert_eq!(f[32..42], linux[32..42]);
        assert_eq!(
            arp_reply_from(&linux, [192, 168, 88, 2]),
            Some([0x1a, 0xd7, 0xf6, 0x8a, 0xec, 0xfb])
        );
        assert_eq!(arp_reply_from(&f, [192, 168, 88, 2]), Some(me));
        assert_eq!(arp_reply_from(&f, [192, 168, 88, 9]), None);
        assert!(
            !arp_reply_in_place(&mut f, me, [192, 168, 88, 2]),
            "a reply is not answered"
        );
        let mut buf = [0u8; 64];
        let n = arp_request(&mut buf, me, [10, 0, 0, 1], [10, 0, 0, 2]);
        assert_eq!(
            arp_fields(&buf[..n]),
            Some((1, me, [10, 0, 0, 1], [10, 0, 0, 2]))
        );
    }
}
