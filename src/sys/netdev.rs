//! Interface ioctls: the control socket, the `ifreq` builder, and the index, flags and MAC of an interface.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::{check, ifname};
use crate::error::{Error, Result};

/// A datagram socket that serves only as the handle for interface ioctls; closed when dropped.
pub(crate) fn ctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// An `ifreq` naming `name` (truncated to IFNAMSIZ-1 bytes, NUL-terminated), everything else zero.
pub(crate) fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain old data (arrays, integers, a union of them); all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    r
}

/// An interface request that reads or writes only inside the `ifreq` itself (flags, hwaddr, MTU).
fn ioctl_inline(req: libc::c_ulong, r: &mut libc::ifreq) -> io::Result<()> {
    let s = ctl_socket()?;
    // SAFETY: `r` is a live ifreq; the requests this is called with (SIOC[GS]IFFLAGS, SIOCGIFHWADDR, SIOCGIFMTU)
    // read/write only inside it.
    check(unsafe { libc::ioctl(s.as_raw_fd(), req as _, r as *mut libc::ifreq) })?;
    Ok(())
}

/// An interface request whose `ifru_data` points at a `T` the kernel reads and writes (SIOCETHTOOL,
/// SIOC[GS]HWTSTAMP).
///
/// # Safety
/// `T` must be exactly the structure (or larger) that request `req` reads and writes through `ifru_data`.
pub(super) unsafe fn ioctl_data<T>(name: &str, req: libc::c_ulong, data: &mut T) -> io::Result<()> {
    // SAFETY: the caller's contract: `data` is the structure the request reads and writes.
    unsafe { ioctl_ptr(name, req, data as *mut T as *mut libc::c_char) }
}

/// An interface request whose `ifru_data` points at the start of `buf`: a structure with a variable-length tail
/// (ethtool's string sets, statistics, flow rules).
///
/// # Safety
/// The request must read and write nothing beyond `buf`'s bytes: the lengths in the header the caller wrote
/// must fit it.
pub(super) unsafe fn ioctl_buf(name: &str, req: libc::c_ulong, buf: &mut [u64]) -> io::Result<()> {
    // SAFETY: the caller's contract: the request stays inside `buf`.
    unsafe { ioctl_ptr(name, req, buf.as_mut_ptr() as *mut libc::c_char) }
}

/// # Safety
/// `data` must point at memory the request may read and write, live across the call.
unsafe fn ioctl_ptr(name: &str, req: libc::c_ulong, data: *mut libc::c_char) -> io::Result<()> {
    ifname::validate(name)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let s = ctl_socket()?;
    let mut r = ifreq(name);
    r.ifr_ifru.ifru_data = data;
    // SAFETY: `r` names a valid interface and points at `data`, which lives across the call and is, by the
    // caller's contract, the structure the request reads and writes.
    check(unsafe { libc::ioctl(s.as_raw_fd(), req as _, &mut r as *mut libc::ifreq) })?;
    Ok(())
}

/// The interface index of `name` (validated first); a missing interface is a usage error.
pub(crate) fn ifindex(name: &str) -> Result<i32> {
    ifname::validate(name)?;
    let c = CString::new(name).map_err(|_| Error::usage("interface name contains NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(Error::usage(format!("interface {name} not found")));
    }
    Ok(idx as i32)
}

/// The name of the interface whose index is `idx` in this network namespace, if there is one.
pub(crate) fn name_of(idx: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` holds IF_NAMESIZE bytes, what if_indextoname(3) may write (the name and its NUL).
    let p = unsafe { libc::if_indextoname(idx, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8(bytes).ok()
}

/// The interface's flags (IFF_UP, IFF_PROMISC, …).
pub(crate) fn flags(name: &str) -> io::Result<u32> {
    let mut r = ifreq(name);
    ioctl_inline(libc::SIOCGIFFLAGS, &mut r)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    Ok(u32::from(unsafe { r.ifr_ifru.ifru_flags } as u16))
}

pub(crate) fn set_flags(name: &str, flags: u32) -> io::Result<()> {
    let mut r = ifreq(name);
    r.ifr_ifru.ifru_flags = flags as u16 as libc::c_short;
    ioctl_inline(libc::SIOCSIFFLAGS, &mut r)
}

/// The interface's hardware (MAC) address.
pub(crate) fn mac(name: &str) -> io::Result<[u8; 6]> {
    let mut r = ifreq(name);
    ioctl_inline(libc::SIOCGIFHWADDR, &mut r)?;
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member of the union.
    let d = unsafe { r.ifr_ifru.ifru_hwaddr.sa_data };
    Ok(std::array::from_fn(|i| d[i] as u8))
}

/// The interface's MTU (the largest payload after the 14-byte Ethernet header).
pub(crate) fn mtu(name: &str) -> io::Result<u32> {
    let mut r = ifreq(name);
    ioctl_inline(libc::SIOCGIFMTU, &mut r)?;
    // SAFETY: SIOCGIFMTU filled the mtu member of the union.
    Ok(unsafe { r.ifr_ifru.ifru_mtu } as u32)
}

pub(crate) fn is_up(name: &str) -> bool {
    flags(name).is_ok_and(|f| f & libc::IFF_UP as u32 != 0)
}

/// The IPv4 and IPv6 addresses `nic` has (getifaddrs).
pub(crate) fn address_counts(nic: &str) -> io::Result<(usize, usize)> {
    use nix::sys::socket::{AddressFamily, SockaddrLike};
    let (mut v4, mut v6) = (0, 0);
    for a in nix::ifaddrs::getifaddrs()?.filter(|a| a.interface_name == nic) {
        match a.address.as_ref().and_then(SockaddrLike::family) {
            Some(AddressFamily::Inet) => v4 += 1,
            Some(AddressFamily::Inet6) => v6 += 1,
            _ => {}
        }
    }
    Ok((v4, v6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_interface_is_a_usage_error() {
        let e = ifindex("ncnosuch0").unwrap_err();
        assert_eq!(e.to_string(), "interface ncnosuch0 not found");
        assert!(matches!(ifindex("a/b"), Err(Error::Usage(_))));
    }

    #[test]
    fn loopback_has_flags_a_zero_mac_and_an_mtu() {
        let f = flags("lo").unwrap();
        assert!(f & libc::IFF_LOOPBACK as u32 != 0);
        assert_eq!(mac("lo").unwrap(), [0; 6]);
        assert!(mtu("lo").unwrap() >= 1500);
    }

    #[test]
    fn ifreq_name_is_truncated_and_terminated() {
        let r = ifreq("a-name-longer-than-sixteen");
        assert_eq!(r.ifr_name[libc::IFNAMSIZ - 1], 0);
        assert_eq!(r.ifr_name[0] as u8, b'a');
    }
}
