//! IPv4 and UDP helpers for the UDP probe and its echo: header lookup and RFC 791/768 checksums.

use super::ecat::{self, ETH_HLEN};
use super::frame::ETHERTYPE_IPV4;

const IP_OFF: usize = ETH_HLEN;

/// The IPv4 header and the UDP header of an IPv4/UDP frame.
pub fn udp_parts(frame: &[u8]) -> Option<(&[u8], &[u8])> {
    if ecat::ethertype(frame) != Some(ETHERTYPE_IPV4) {
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
pub fn ip_checksum(header: &[u8]) -> u16 {
    fold(ones_sum(0, header))
}

/// RFC 768 checksum of the UDP datagram that follows the IPv4 header at the start of `ip_packet`
/// (pseudo-header included; 0 is sent as 0xffff).
pub fn udp_checksum(ip_packet: &[u8]) -> u16 {
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
