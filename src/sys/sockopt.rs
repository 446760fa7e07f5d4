//! Socket options: setsockopt for plain data, promiscuous membership, receive timeout, transmit SO_TIMESTAMPING.

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
// SAFETY: struct tpacket_req, four unsigned integers.
unsafe impl OptValue for libc::tpacket_req {}

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

/// Asks for transmit stamps on `fd`'s error queue: the NIC's when `hw`, the kernel's otherwise. Never
/// SOF_TIMESTAMPING_RX_SOFTWARE: its first user and its last switch the kernel's netstamp static key, which sends
/// every CPU IPIs; received frames take their stamps from the receive ring (`rxring`).
pub(crate) fn tx_timestamping(fd: RawFd, hw: bool) -> io::Result<()> {
    let flags = if hw {
        libc::SOF_TIMESTAMPING_TX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE
    } else {
        libc::SOF_TIMESTAMPING_TX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE
    };
    set(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        &(flags as libc::c_int),
    )
}
