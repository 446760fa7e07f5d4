//! Socket options: setsockopt for plain data, promiscuous membership, receive timeout, SO_TIMESTAMPING.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::check;

/// Plain data a socket option takes by value: integers, timeval, packet_mreq (no pointers the kernel follows).
///
/// # Safety
/// The type must be plain old data with a C layout.
pub(crate) unsafe trait OptValue: Copy {}
// SAFETY: a C int.
unsafe impl OptValue for libc::c_int {}
// SAFETY: struct timeval, two integers.
unsafe impl OptValue for libc::timeval {}
// SAFETY: struct packet_mreq, integers and a byte array.
unsafe impl OptValue for libc::packet_mreq {}

/// setsockopt with a plain-data value.
pub(crate) fn set<T: OptValue>(fd: RawFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: setsockopt reads exactly size_of::<T>() bytes from a live reference to plain data.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Puts the interface in promiscuous mode for as long as socket `fd` is open. The kernel counts this per socket
/// and drops it when the socket closes — on any exit, a crash or SIGKILL included — so nothing is left behind.
pub(crate) fn join_promiscuous(fd: RawFd, ifindex: i32) -> io::Result<()> {
    let mr = libc::packet_mreq {
        mr_ifindex: ifindex,
        mr_type: libc::PACKET_MR_PROMISC as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    set(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mr)
}

/// An upper bound for a blocking receive.
pub(crate) fn recv_timeout(fd: RawFd, d: Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    };
    set(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)
}

/// Asks for TX (error queue) and RX timestamps on `fd`: hardware ones when `hw`, software ones always (RX software
/// stamps are the fallback when a hardware stamp is missing).
pub(crate) fn timestamping(fd: RawFd, hw: bool) -> io::Result<()> {
    let tx = if hw {
        libc::SOF_TIMESTAMPING_TX_HARDWARE
    } else {
        libc::SOF_TIMESTAMPING_TX_SOFTWARE
    };
    set_timestamping(fd, hw, tx)
}

/// RX timestamps only (hardware ones when `hw`): for a socket that sends without reading its error queue, which
/// TX stamps would fill until received frames are dropped.
pub(crate) fn rx_timestamping(fd: RawFd, hw: bool) -> io::Result<()> {
    set_timestamping(fd, hw, 0)
}

fn set_timestamping(fd: RawFd, hw: bool, tx: u32) -> io::Result<()> {
    let mut flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE | tx;
    if hw {
        flags |= libc::SOF_TIMESTAMPING_RX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
    }
    set(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        &(flags as libc::c_int),
    )
}
