//! An AF_PACKET raw socket bound to one interface and one EtherType, with timestamps. Sending and receiving use
//! caller-owned buffers: nothing here allocates after `open`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::netif;
use super::tstamp::{self, HwTstamp, Stamps, TsKind};
use crate::error::{Error, Result};

/// Every EtherType (ETH_P_ALL), for the reflector.
pub const ETH_P_ALL: u16 = 0x0003;

pub struct RawSocket {
    fd: OwnedFd,
    ifindex: i32,
    name: String,
    hw: Option<HwTstamp>,
}

/// One received frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct Received {
    pub len: usize,
    pub stamps: Stamps,
    /// sll_pkttype: PACKET_HOST, PACKET_BROADCAST, PACKET_OUTGOING (our own frame, seen by ETH_P_ALL sockets), …
    pub pkttype: u8,
}

/// What poll found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub readable: bool,
    /// The error queue has messages: transmit timestamps.
    pub errqueue: bool,
}

impl RawSocket {
    /// A raw socket on interface `name` (validated, must exist) for frames of EtherType `proto`; with `proto` 0 it
    /// receives nothing and only sends (its error queue still returns the transmit stamps).
    pub fn open(name: &str, proto: u16) -> Result<RawSocket> {
        let ifindex = netif::ifindex(name)?;
        // SAFETY: plain socket(2); the result is checked before use.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                i32::from(proto.to_be()),
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EPERM) {
                return Err(Error::failed(format!(
                    "a raw socket on {name} needs root (CAP_NET_RAW)"
                )));
            }
            return Err(Error::sys(format!("raw socket on {name}"), e));
        }
        // SAFETY: fd is a fresh descriptor owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain data; all-zero is valid before the fields are set.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto.to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: bind reads size_of::<sockaddr_ll>() bytes from a live local.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(Error::sys(
                format!("binding a raw socket to {name}"),
                io::Error::last_os_error(),
            ));
        }
        Ok(RawSocket {
            fd,
            ifindex,
            name: name.to_string(),
            hw: None,
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn setsockopt_int(&self, level: i32, opt: i32, v: i32, what: &str) -> Result<()> {
        netif::set_sockopt(self.fd(), level, opt, &v)
            .map_err(|e| Error::sys(format!("{what} on {}", self.name), e))
    }

    /// An upper bound for a blocking recv.
    pub fn set_recv_timeout(&self, d: Duration) -> Result<()> {
        let tv = libc::timeval {
            tv_sec: d.as_secs() as libc::time_t,
            tv_usec: d.subsec_micros() as libc::suseconds_t,
        };
        netif::set_sockopt(self.fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)
            .map_err(|e| Error::sys("SO_RCVTIMEO", e))
    }

    /// Stops delivery of the frames this host sends (for an ETH_P_ALL socket). `false` on kernels before 4.20,
    /// where the caller must skip PACKET_OUTGOING frames itself.
    pub fn ignore_outgoing(&self) -> bool {
        self.setsockopt_int(
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            1,
            "PACKET_IGNORE_OUTGOING",
        )
        .is_ok()
    }

    /// Promiscuous mode for the life of this socket (see `netif::join_promiscuous`).
    pub fn join_promiscuous(&self) -> Result<()> {
        netif::join_promiscuous(self.fd(), self.ifindex)
            .map_err(|e| Error::sys(format!("promiscuous mode on {}", self.name), e))
    }

    /// Hardware timestamps where the NIC has them, else software ones; says which.
    pub fn enable_timestamps(&mut self) -> Result<TsKind> {
        if let Ok(hw) = HwTstamp::enable(&self.name) {
            if tstamp::enable_on_socket(self.fd(), true).is_ok() {
                self.hw = Some(hw);
                return Ok(TsKind::Hardware);
            }
            drop(hw);
        }
        tstamp::enable_on_socket(self.fd(), false)
            .map_err(|e| Error::sys(format!("SO_TIMESTAMPING on {}", self.name), e))?;
        Ok(TsKind::Software)
    }

    /// The same kind of timestamps as another socket on this interface got from `enable_timestamps` (the NIC is
    /// already set up by that one).
    pub fn set_timestamping(&self, kind: TsKind) -> Result<()> {
        tstamp::enable_on_socket(self.fd(), kind == TsKind::Hardware)
            .map_err(|e| Error::sys(format!("SO_TIMESTAMPING on {}", self.name), e))
    }

    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: send reads frame.len() bytes from a live slice; the socket is bound, so no address is needed.
        let n = unsafe {
            libc::send(
                self.fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Waits up to `timeout_ms` (-1: forever) for a frame or a transmit timestamp.
    pub fn wait(&self, timeout_ms: i32) -> io::Result<Ready> {
        let mut p = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes one pollfd that lives on this stack frame.
        let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(Ready::default())
            } else {
                Err(e)
            };
        }
        Ok(Ready {
            readable: p.revents & libc::POLLIN != 0,
            errqueue: p.revents & libc::POLLERR != 0,
        })
    }

    /// Receives one frame into `buf` (truncated to its length) with its stamps. `errqueue`: read a transmit
    /// timestamp (the sent frame comes back with it) instead. `nonblock`: WouldBlock instead of waiting.
    pub fn recv(&self, buf: &mut [u8], errqueue: bool, nonblock: bool) -> io::Result<Received> {
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
        let n = unsafe { libc::recvmsg(self.fd(), &mut msg, flags) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Received {
            len: (n as usize).min(buf.len()),
            stamps: tstamp::parse_cmsgs(&msg),
            pkttype: from.sll_pkttype,
        })
    }
}
