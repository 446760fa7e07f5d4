//! SIOCETHTOOL requests whose structures end in a variable-length tail (include/uapi/linux/ethtool.h): the
//! driver's name (ETHTOOL_GDRVINFO), its statistics by name (`ethtool -S`: ETHTOOL_GSTRINGS + ETHTOOL_GSTATS),
//! and receive flow rules (`ethtool -N`: ETHTOOL_[GS]RXCLSRL*). Each is built in a buffer of `u64`s at the byte
//! offsets of the kernel's structures (checked against linux/ethtool.h with offsetof).

use std::io;

use super::netdev;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GRXCLSRLCNT: u32 = 0x2e;
const ETHTOOL_GRXCLSRLALL: u32 = 0x30;
const ETHTOOL_SRXCLSRLDEL: u32 = 0x31;
const ETHTOOL_SRXCLSRLINS: u32 = 0x32;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;
const ETHER_FLOW: u32 = 0x12;
const UDP_V4_FLOW: u32 = 0x02;
const RX_CLS_LOC_SPECIAL: u64 = 0x8000_0000;
const RX_CLS_LOC_ANY: u32 = 0xffff_ffff;
/// sizeof(struct ethtool_rxnfc), and its fields' offsets.
const RXNFC_LEN: usize = 192;
const FS_FLOW_TYPE: usize = 16;
const FS_H_U: usize = 20;
const FS_M_U: usize = 92;
const FS_RING_COOKIE: usize = 168;
const FS_LOCATION: usize = 176;
const RULE_CNT: usize = 184;
const RULE_LOCS: usize = 188;
/// More rules than any NIC's table holds: the bound of a GRXCLSRLALL buffer.
const MAX_RULES: u32 = 4096;

/// A zeroed buffer of at least `bytes` bytes, 8-byte aligned, with `cmd` in its first word.
fn buffer(bytes: usize, cmd: u32) -> Vec<u64> {
    let mut b = vec![0u64; bytes.div_ceil(8)];
    put_u32(&mut b, 0, cmd);
    b
}

fn bytes_of(b: &[u64]) -> Vec<u8> {
    b.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

fn put_bytes(b: &mut [u64], at: usize, v: &[u8]) {
    let mut all = bytes_of(b);
    all[at..at + v.len()].copy_from_slice(v);
    for (w, c) in b.iter_mut().zip(all.chunks_exact(8)) {
        *w = u64::from_ne_bytes(c.try_into().unwrap_or_default());
    }
}

fn put_u32(b: &mut [u64], at: usize, v: u32) {
    put_bytes(b, at, &v.to_ne_bytes());
}

fn get_u32(b: &[u64], at: usize) -> u32 {
    let all = bytes_of(b);
    u32::from_ne_bytes(all[at..at + 4].try_into().unwrap_or_default())
}

/// Issues `buf` (its length bounds what the kernel may write: the callers size it from the header's counts).
fn issue(nic: &str, buf: &mut [u64]) -> io::Result<()> {
    // SAFETY: every caller sizes `buf` for the request in its first word: fixed structures at their kernel
    // size, variable ones for the count their header gives (see `stats` for the one race the kernel leaves).
    unsafe { netdev::ioctl_buf(nic, SIOCETHTOOL, buf) }
}

/// The driver's name ("igb", "virtio_net", "veth") and its statistics count.
pub(crate) fn driver(nic: &str) -> io::Result<(String, u32)> {
    let mut b = buffer(196, ETHTOOL_GDRVINFO);
    issue(nic, &mut b)?;
    let all = bytes_of(&b);
    let name: Vec<u8> = all[4..36].iter().copied().take_while(|&c| c != 0).collect();
    Ok((
        String::from_utf8_lossy(&name).into_owned(),
        get_u32(&b, 180),
    ))
}

/// The driver's statistics, by name (`ethtool -S`). EOPNOTSUPP or an empty list: the driver has none.
pub(crate) fn stats(nic: &str) -> io::Result<Vec<(String, u64)>> {
    let (_, n) = driver(nic)?;
    // The kernel copies as many strings as it counts at the time of the call, not as many as the header asks:
    // room for twice the count covers a queue count changed in between (`ethtool -L`), as ethtool(8) assumes too.
    let room = (n as usize) * 2 + 64;
    let mut names = buffer(12 + room * ETH_GSTRING_LEN, ETHTOOL_GSTRINGS);
    put_u32(&mut names, 4, ETH_SS_STATS);
    put_u32(&mut names, 8, n);
    issue(nic, &mut names)?;
    let mut vals = buffer(8 + room * 8, ETHTOOL_GSTATS);
    put_u32(&mut vals, 4, n);
    issue(nic, &mut vals)?;
    let got = (get_u32(&names, 8).min(get_u32(&vals, 4)) as usize).min(room);
    let text = bytes_of(&names);
    Ok((0..got)
        .map(|i| {
            let s = &text[12 + i * ETH_GSTRING_LEN..12 + (i + 1) * ETH_GSTRING_LEN];
            let s: Vec<u8> = s.iter().copied().take_while(|&c| c != 0).collect();
            (String::from_utf8_lossy(&s).into_owned(), vals[1 + i])
        })
        .collect())
}

/// What a receive flow rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Frames of this EtherType.
    Ether(u16),
    /// IPv4 UDP datagrams from this source port.
    UdpFrom(u16),
}

/// Steers `flow` to receive queue `queue` (`ethtool -N IF flow-type … action QUEUE`); returns the rule's
/// location, for `delete_rule`. EOPNOTSUPP: the driver has no flow rules.
pub(crate) fn insert_rule(nic: &str, flow: Flow, queue: u32) -> io::Result<u32> {
    let mut cnt = buffer(RXNFC_LEN, ETHTOOL_GRXCLSRLCNT);
    issue(nic, &mut cnt)?;
    let table = cnt[1];
    let location = if table & RX_CLS_LOC_SPECIAL != 0 {
        RX_CLS_LOC_ANY
    } else {
        free_location(nic, get_u32(&cnt, RULE_CNT), table as u32)?
    };
    let mut b = buffer(RXNFC_LEN, ETHTOOL_SRXCLSRLINS);
    // Both flows match one big-endian 16-bit field of their header spec: (flow type, offset, value).
    let (kind, at, value) = match flow {
        Flow::Ether(t) => (ETHER_FLOW, 12, t),
        Flow::UdpFrom(p) => (UDP_V4_FLOW, 8, p),
    };
    put_u32(&mut b, 4, kind);
    put_u32(&mut b, FS_FLOW_TYPE, kind);
    put_bytes(&mut b, FS_H_U + at, &value.to_be_bytes());
    put_bytes(&mut b, FS_M_U + at, &[0xff, 0xff]);
    put_bytes(&mut b, FS_RING_COOKIE, &u64::from(queue).to_ne_bytes());
    put_u32(&mut b, FS_LOCATION, location);
    issue(nic, &mut b)?;
    Ok(get_u32(&b, FS_LOCATION))
}

/// The lowest location below `table` that none of the driver's `count` rules uses.
fn free_location(nic: &str, count: u32, table: u32) -> io::Result<u32> {
    let count = count.min(MAX_RULES);
    let mut all = buffer(RULE_LOCS + 4 * count as usize, ETHTOOL_GRXCLSRLALL);
    put_u32(&mut all, RULE_CNT, count);
    if count > 0 {
        issue(nic, &mut all)?;
    }
    let used: Vec<u32> = (0..get_u32(&all, RULE_CNT).min(count))
        .map(|i| get_u32(&all, RULE_LOCS + 4 * i as usize))
        .collect();
    (0..table.min(MAX_RULES))
        .find(|l| !used.contains(l))
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOSPC))
}

/// Removes the rule at `location` (`ethtool -N IF delete LOC`).
pub(crate) fn delete_rule(nic: &str, location: u32) -> io::Result<()> {
    let mut b = buffer(RXNFC_LEN, ETHTOOL_SRXCLSRLDEL);
    put_u32(&mut b, FS_LOCATION, location);
    issue(nic, &mut b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_land_at_the_kernels_offsets() {
        let mut b = buffer(RXNFC_LEN, ETHTOOL_SRXCLSRLINS);
        assert_eq!(b.len() * 8, RXNFC_LEN);
        put_u32(&mut b, FS_LOCATION, 0x0102_0304);
        put_bytes(&mut b, FS_H_U + 12, &0x88a4u16.to_be_bytes());
        let raw = bytes_of(&b);
        assert_eq!(&raw[32..34], &[0x88, 0xa4]);
        assert_eq!(get_u32(&b, FS_LOCATION), 0x0102_0304);
        assert_eq!(get_u32(&b, 0), ETHTOOL_SRXCLSRLINS);
    }

    #[test]
    fn loopback_has_no_flow_rules_and_bad_names_are_refused() {
        let e = insert_rule("lo", Flow::Ether(0x88a4), 1).unwrap_err();
        assert!(e.raw_os_error().is_some(), "{e}");
        assert_eq!(
            stats("bad/name").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
