//! One rtnetlink request about one interface (RTM_GETLINK, RTM_SETLINK) and its attributes: what `xdp` needs to see
//! and detach an interface's XDP program by index; and the kernel's link notifications (RTMGRP_LINK), which
//! `apply-saved --follow` waits on. Not on any RT path: it allocates freely.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// struct nlmsghdr (16 bytes) + struct ifinfomsg (16 bytes).
const NLMSG_HDR: usize = 16;
const IFINFO: usize = 16;
const NLMSG_ERROR: u16 = 2;
/// linux/if_link.h: the interface's name, as a NUL-terminated string.
const IFLA_IFNAME: u16 = 3;

/// Sends message `kind` for interface `ifindex` with the attributes `attrs` (already laid out) and returns the
/// reply's attributes (after its ifinfomsg); for a request with NLM_F_ACK, the empty acknowledgement. A negative
/// acknowledgement is its errno.
pub(crate) fn request(kind: u16, flags: u16, ifindex: u32, attrs: &[u8]) -> io::Result<Vec<u8>> {
    let fd = socket()?;
    let len = NLMSG_HDR + IFINFO + attrs.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(&(libc::NLM_F_REQUEST as u16 | flags).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel
    msg.push(libc::AF_UNSPEC as u8);
    msg.push(0);
    msg.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    msg.extend_from_slice(&(ifindex as i32).to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes()); // ifi_flags
    msg.extend_from_slice(&0u32.to_ne_bytes()); // ifi_change
    msg.extend_from_slice(attrs);
    // SAFETY: sends `msg.len()` bytes from a live Vec on a socket this function owns.
    let sent = unsafe { libc::send(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 * 1024];
    // SAFETY: receives at most `buf.len()` bytes into a live Vec on a socket this function owns.
    let got = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    parse_reply(&buf[..got as usize])
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned right away.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What one link notification says: the interface (index, name when the message carries it), its flags, removed or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkEvent {
    pub(crate) ifindex: i32,
    pub(crate) name: Option<String>,
    /// IFF_* as the kernel reports them (IFF_UP: administratively up; IFF_RUNNING: the carrier too).
    pub(crate) flags: u32,
    pub(crate) removed: bool,
}

impl LinkEvent {
    pub(crate) fn is_up(&self) -> bool {
        !self.removed && self.flags & libc::IFF_UP as u32 != 0
    }
}

/// A socket subscribed to the kernel's link notifications (every RTM_NEWLINK/RTM_DELLINK of this namespace).
pub(crate) struct LinkEvents {
    fd: OwnedFd,
    buf: Vec<u8>,
}

impl LinkEvents {
    pub(crate) fn subscribe() -> io::Result<LinkEvents> {
        let fd = socket()?;
        // SAFETY: sockaddr_nl is plain data; all-zero is a valid value, filled in below.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        sa.nl_groups = libc::RTMGRP_LINK as u32;
        // SAFETY: binds a socket this function owns to a live sockaddr_nl of the size given.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        super::check(rc)?;
        Ok(LinkEvents {
            fd,
            buf: vec![0u8; 64 * 1024],
        })
    }

    /// Blocks until the kernel sends the next notifications. ENOBUFS (the kernel dropped some because we were slow)
    /// is returned as such: the caller then reads the state afresh.
    pub(crate) fn next(&mut self) -> io::Result<Vec<LinkEvent>> {
        loop {
            // SAFETY: receives at most `buf.len()` bytes into a live Vec on a socket this value owns.
            let got = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            if got < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            return Ok(link_events(&self.buf[..got as usize]));
        }
    }
}

/// The link notifications in one datagram (several netlink messages may share it); other messages are skipped.
pub(crate) fn link_events(b: &[u8]) -> Vec<LinkEvent> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(h) = b.get(at..at + NLMSG_HDR) {
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let kind = u16::from_ne_bytes([h[4], h[5]]);
        let Some(msg) = b.get(at..at.saturating_add(len)) else {
            break;
        };
        if len < NLMSG_HDR {
            break;
        }
        if (kind == libc::RTM_NEWLINK || kind == libc::RTM_DELLINK)
            && let Some(i) = msg.get(NLMSG_HDR..NLMSG_HDR + IFINFO)
        {
            let name = link_attr(&msg[NLMSG_HDR + IFINFO..], IFLA_IFNAME).map(|d| {
                String::from_utf8_lossy(d.split(|&c| c == 0).next().unwrap_or(d)).into_owned()
            });
            out.push(LinkEvent {
                ifindex: i32::from_ne_bytes([i[4], i[5], i[6], i[7]]),
                name,
                flags: u32::from_ne_bytes([i[8], i[9], i[10], i[11]]),
                removed: kind == libc::RTM_DELLINK,
            });
        }
        at += (len + 3) & !3;
    }
    out
}

/// The reply's attributes, or the errno of an NLMSG_ERROR with a non-zero code (an ack is an error of 0).
fn parse_reply(b: &[u8]) -> io::Result<Vec<u8>> {
    if b.len() < NLMSG_HDR {
        return Err(io::Error::other("short rtnetlink reply"));
    }
    let len = (u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize).min(b.len());
    let kind = u16::from_ne_bytes([b[4], b[5]]);
    if kind == NLMSG_ERROR {
        let code = b
            .get(NLMSG_HDR..NLMSG_HDR + 4)
            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .unwrap_or(-libc::EIO);
        return if code == 0 {
            Ok(Vec::new())
        } else {
            Err(io::Error::from_raw_os_error(-code))
        };
    }
    Ok(b.get(NLMSG_HDR + IFINFO..len).unwrap_or_default().to_vec())
}

/// Appends one attribute (struct nlattr + data, padded to 4 bytes).
pub(crate) fn put_attr(out: &mut Vec<u8>, kind: u16, data: &[u8]) {
    out.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(data);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// The attributes in `b`: (type without the nested/byte-order flags, data). Stops at the first malformed one.
pub(crate) fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let h = b.get(at..at + 4)?;
        let len = u16::from_ne_bytes([h[0], h[1]]) as usize;
        let kind = u16::from_ne_bytes([h[2], h[3]]) & 0x3fff;
        let data = b.get(at + 4..at.checked_add(len)?)?;
        if len < 4 {
            return None;
        }
        at += (len + 3) & !3;
        Some((kind, data))
    })
}

/// The data of the first attribute of type `kind` in a link reply's attributes.
pub(crate) fn link_attr(b: &[u8], kind: u16) -> Option<&[u8]> {
    attrs(b).find(|(k, _)| *k == kind).map(|(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_and_malformed_ones_stop_the_walk() {
        let mut b = Vec::new();
        put_attr(&mut b, 3, &[1, 2, 3]);
        put_attr(&mut b, 43 | (1 << 15), &[9, 9, 9, 9]);
        let got: Vec<_> = attrs(&b).collect();
        assert_eq!(got, vec![(3, &[1u8, 2, 3][..]), (43, &[9u8, 9, 9, 9][..])]);
        assert_eq!(link_attr(&b, 43), Some(&[9u8, 9, 9, 9][..]));
        // A length past the end, or below the header: nothing more.
        assert_eq!(attrs(&[200, 0, 1, 0, 5]).count(), 0);
        assert_eq!(attrs(&[2, 0, 1, 0]).count(), 0);
    }

    #[test]
    fn an_error_reply_is_its_errno_and_an_ack_is_empty() {
        let mut b = vec![0u8; 36];
        b[0] = 36;
        b[4] = NLMSG_ERROR as u8;
        b[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert_eq!(
            parse_reply(&b).unwrap_err().raw_os_error(),
            Some(libc::EPERM)
        );
        b[16..20].copy_from_slice(&0i32.to_ne_bytes());
        assert!(parse_reply(&b).unwrap().is_empty());
    }

    fn datagrams(text: &str) -> Vec<Vec<u8>> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                (0..l.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&l[i..i + 2], 16).unwrap())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_kernels_link_notifications_name_the_interface_its_flags_and_its_removal() {
        let d = datagrams(include_str!(
            "../../tests/fixtures/samples/rtnetlink-veth-up-down-linux6.18.hex"
        ));
        let up = link_events(&d[0]);
        assert_eq!(up.len(), 1);
        assert_eq!(up[0].name.as_deref(), Some("capx0"));
        assert!(up[0].is_up() && !up[0].removed);
        // Up, but no carrier yet: the peer is down.
        assert_eq!(up[0].flags & libc::IFF_RUNNING as u32, 0);
        let gone = link_events(&d[1]);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].ifindex, up[0].ifindex);
        assert!(gone[0].removed && !gone[0].is_up());
        // Two messages in one datagram are both read; a truncated one ends the walk without a panic.
        let both = [d[0].clone(), d[1].clone()].concat();
        assert_eq!(link_events(&both).len(), 2);
        for cut in [0, 3, 17, 40, d[0].len() - 1] {
            assert!(link_events(&d[0][..cut]).is_empty(), "{cut}");
        }
    }

    #[test]
    fn loopback_has_no_xdp_program() {
        // Any user may ask (RTM_GETLINK needs no capability); lo is index 1 everywhere.
        assert_eq!(super::super::xdp::attached(1).unwrap(), None);
    }
}
