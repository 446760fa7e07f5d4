//! The system-call layer: every system call (libc and nix) the program makes goes through here, each `unsafe`
//! block next to its `// SAFETY:` reason, behind a safe, typed function. Nothing here knows about checks, fixes or
//! runs; everything above may use it.
//!
//! - `ifname`: the one interface-name validator.
//! - `netdev`: the control socket, the `ifreq` builder, interface index, flags and MAC, address counts.
//! - `ethtool`: SIOCETHTOOL with typed `#[repr(C)]` structures (coalescing, EEE).
//! - `ethtool_query`: the driver's name, its statistics (`ethtool -S`), receive flow rules (`ethtool -N`).
//! - `hwtstamp`: the NIC's hardware-timestamp configuration (SIOCGHWTSTAMP/SIOCSHWTSTAMP).
//! - `sockopt`: setsockopt for plain data, promiscuous membership, receive timeout, transmit SO_TIMESTAMPING.
//! - `packet`: AF_PACKET sockets: open, send, poll, recvmsg with the timestamp control messages.
//! - `rxring`: an AF_PACKET socket's receive ring (TPACKET_V2, mmap): frames with their stamps, no system call.
//! - `clock`: the clock reads and the absolute sleep of the RT loops.
//! - `term`: the terminal's window size, stdin in raw mode (a guard restoring it), read-only prctl queries.
//! - `freeze`: syncfs and a guarded freeze/thaw cycle (a boot loader reads what was written).
//! - `fs`: Host's opens (openat2 in a root), fstat, directory entries; flock; the tracefs mount.
//! - `process`: mlockall, SCHED_FIFO, CPU affinity, the signal mask, PR_SET_PDEATHSIG,
//!   kill/killpg, euid.
//! - `uname`: the running kernel's release, for when /proc cannot be read.
//! - `netlink`: one rtnetlink request about one interface, and its attributes.
//! - `xdp`: the XDP program of `run --path af_xdp` (aya), and an interface's XDP program seen and detached by index.
//! - `xsk`: AF_XDP sockets (own code on libc): the UMEM area, the socket on one queue, its rings split for the two
//!   threads.

pub(crate) mod clock;
pub(crate) mod ethtool;
pub(crate) mod ethtool_query;
pub(crate) mod freeze;
pub(crate) mod fs;
pub(crate) mod hwtstamp;
pub(crate) mod ifname;
pub(crate) mod netdev;
pub(crate) mod netlink;
pub(crate) mod packet;
pub(crate) mod process;
pub(crate) mod rxring;
pub(crate) mod sockopt;
pub(crate) mod term;
pub(crate) mod uname;
pub(crate) mod xdp;
pub(crate) mod xsk;

/// `rc < 0` → the errno as an io::Error (the libc convention of most calls here).
pub(crate) fn check(rc: libc::c_int) -> std::io::Result<libc::c_int> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}
