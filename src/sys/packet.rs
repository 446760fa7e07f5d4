//! AF_PACKET sockets: open and bind, send, poll, and recvmsg with the timestamp control messages, parsed from a
//! caller's buffer without allocating.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::check;

/// A raw socket for EtherType `proto` (0: receives nothing, only sends), not yet bound.
pub(crate) fn socket(proto: u16) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            i32::from(proto.to_be()),
        )
    })?;
    // SAFETY: fd is a fresh descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Binds a raw socket to interface `ifindex` and EtherType `proto`.
pub(crate) fn bind(fd: &OwnedFd, ifindex: i32, proto: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; all-zero is valid before the fields are set.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto.to_be();
    sll.sll_ifindex = ifindex;
    // SAFETY: bind reads size_of::<sockaddr_ll>() bytes from a live local.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Sends one frame on a bound socket.
pub(crate) fn send(fd: RawFd, frame: &[u8]) -> io::Result<()> {
    // SAFETY: send reads frame.len() bytes from a live slice; the socket is bound, so no address is needed.
    let n = unsafe { libc::send(fd, frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// What poll found: `readable`, and `errqueue` (transmit timestamps waiting).
pub(crate) fn poll(fd: RawFd, timeout_ms: i32) -> io::Result<(bool, bool)> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes one pollfd that lives on this stack frame.
    let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok((false, false))
        } else {
            Err(e)
        };
    }
    Ok((
        p.revents & libc::POLLIN != 0,
        p.revents & libc::POLLERR != 0,
    ))
}

/// Stamps found in one message's control data; 0 = absent. `tx` says it came back on the error queue as the
/// transmit stamp of a sent frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stamps {
    pub(crate) sw_ns: u64,
    pub(crate) hw_ns: u64,
    pub(crate) tx: bool,
}

/// One received message: its length (truncated to the buffer), stamps, and sll_pkttype (PACKET_HOST,
/// PACKET_BROADCAST, PACKET_OUTGOING for our own frame seen by an ETH_P_ALL socket, …).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Message {
    pub(crate) len: usize,
    pub(crate) stamps: Stamps,
    pub(crate) pkttype: u8,
}

/// Receives one frame into `buf` with its stamps. `errqueue`: read a transmit timestamp instead;
/// `nonblock`: WouldBlock instead of waiting.
pub(crate) fn recv(
    fd: RawFd,
    buf: &mut [u8],
    errqueue: bool,
    nonblock: bool,
) -> io::Result<Message> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // 8-byte aligned, room for SCM_TIMESTAMPING (3 timespecs) and an extended error with its address.
    let mut control = [0u64; 32];
    // SAFETY: sockaddr_ll and msghdr are plain data; all-zero is valid before the fields are set.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut from as *mut libc::sockaddr_ll as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    let mut flags = if errqueue { libc::MSG_ERRQUEUE } else { 0 };
    if nonblock {
        flags |= libc::MSG_DONTWAIT;
    }
    // SAFETY: every pointer in `msg` refers to a live local or to `buf`, with the lengths given.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Message {
        len: (n as usize).min(buf.len()),
        // SAFETY: recvmsg just succeeded on `msg`: its control fields describe `control` and the kernel's
        // cmsg chain in it.
        stamps: unsafe { parse_cmsgs(&msg) },
        pkttype: from.sll_pkttype,
    })
}

fn ts_ns(t: libc::timespec) -> u64 {
    if t.tv_sec <= 0 && t.tv_nsec <= 0 {
        return 0;
    }
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}

/// Reads SCM_TIMESTAMPING (software stamp in slot 0, raw hardware stamp in slot 2) and the transmit-timestamp
/// marker.
///
/// # Safety
/// `msg` must have been filled by a successful recvmsg: msg_control/msg_controllen describe a live buffer that
/// holds the kernel's cmsg chain.
unsafe fn parse_cmsgs(msg: &libc::msghdr) -> Stamps {
    let mut s = Stamps::default();
    // SAFETY: by the caller's contract the chain is the kernel's, inside msg_control's bounds; CMSG_* walk inside
    // those bounds, and the payloads are read unaligned by value after their length is checked.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            let data = libc::CMSG_DATA(c);
            let len = (h.cmsg_len as usize).saturating_sub(data as usize - c as usize);
            let tsing = h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPING;
            let txerr = (h.cmsg_level == libc::SOL_PACKET
                && h.cmsg_type == libc::PACKET_TX_TIMESTAMP)
                || (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR);
            if tsing && len >= 3 * std::mem::size_of::<libc::timespec>() {
                let t = data as *const libc::timespec;
                s.sw_ns = ts_ns(t.read_unaligned());
                s.hw_ns = ts_ns(t.add(2).read_unaligned());
            } else if txerr && len >= std::mem::size_of::<libc::sock_extended_err>() {
                let e = (data as *const libc::sock_extended_err).read_unaligned();
                s.tx = e.ee_errno == libc::ENOMSG as u32
                    && e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING;
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespec_conversion() {
        let t = |s, n| libc::timespec {
            tv_sec: s,
            tv_nsec: n,
        };
        assert_eq!(ts_ns(t(0, 0)), 0);
        assert_eq!(ts_ns(t(2, 5)), 2_000_000_005);
    }
}
