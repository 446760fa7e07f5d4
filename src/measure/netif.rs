//! Network interface facts and state that NIC mode and `reflect` touch: name validation, index, MAC, flags, and the
//! guard that puts the interface flags back as they were.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::{Error, Result};

/// An interface name as the kernel accepts it: 1–15 bytes, no '/', ':', whitespace or NUL.
pub fn validate_ifname(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace());
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "'{}' is not an interface name (1-15 bytes, no '/', ':' or spaces)",
            name.escape_debug()
        )))
    }
}

/// The interface index of `name` (validated first); a missing interface is a usage error.
pub fn ifindex(name: &str) -> Result<i32> {
    validate_ifname(name)?;
    let c = CString::new(name).map_err(|_| Error::usage("interface name contains NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(Error::usage(format!("interface {name} not found")));
    }
    Ok(idx as i32)
}

fn ifreq_for(name: &str) -> libc::ifreq {
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

/// A datagram socket used only as a handle for interface ioctls.
fn ctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ioctl_ifreq(fd: RawFd, req: libc::c_ulong, r: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: `r` is a valid ifreq for these interface requests (flags, hwaddr), which read/write only inside it.
    let rc = unsafe { libc::ioctl(fd, req as _, r as *mut libc::ifreq) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The interface's flags (IFF_UP, IFF_PROMISC, …).
pub fn flags(name: &str) -> io::Result<u32> {
    let s = ctl_socket()?;
    let mut r = ifreq_for(name);
    ioctl_ifreq(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut r)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    Ok(u32::from(unsafe { r.ifr_ifru.ifru_flags } as u16))
}

fn set_flags(name: &str, flags: u32) -> io::Result<()> {
    let s = ctl_socket()?;
    let mut r = ifreq_for(name);
    r.ifr_ifru.ifru_flags = flags as u16 as libc::c_short;
    ioctl_ifreq(s.as_raw_fd(), libc::SIOCSIFFLAGS, &mut r)
}

/// The interface's hardware (MAC) address.
pub fn mac(name: &str) -> io::Result<[u8; 6]> {
    let s = ctl_socket()?;
    let mut r = ifreq_for(name);
    ioctl_ifreq(s.as_raw_fd(), libc::SIOCGIFHWADDR, &mut r)?;
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member of the union.
    let d = unsafe { r.ifr_ifru.ifru_hwaddr.sa_data };
    Ok(std::array::from_fn(|i| d[i] as u8))
}

pub fn is_up(name: &str) -> bool {
    flags(name).is_ok_and(|f| f & libc::IFF_UP as u32 != 0)
}

/// Remembers the interface's flags when created and, when dropped (every return path, Ctrl+C included, and an
/// unwinding panic), puts back the promiscuous and all-multicast flags if they differ. Create it before the
/// sockets, so that it is dropped after them: a socket's promiscuous membership ends when the socket closes, and
/// only a flag still changed after that is someone's leftover that must go.
pub struct FlagsGuard {
    name: String,
    before: u32,
}

const KEPT: u32 = (libc::IFF_PROMISC | libc::IFF_ALLMULTI) as u32;

impl FlagsGuard {
    pub fn new(name: &str) -> Result<FlagsGuard> {
        let before =
            flags(name).map_err(|e| Error::sys(format!("reading the flags of {name}"), e))?;
        Ok(FlagsGuard {
            name: name.to_string(),
            before,
        })
    }

    pub fn before(&self) -> u32 {
        self.before
    }
}

impl Drop for FlagsGuard {
    fn drop(&mut self) {
        if let Ok(now) = flags(&self.name)
            && (now ^ self.before) & KEPT != 0
        {
            let _ = set_flags(&self.name, (now & !KEPT) | (self.before & KEPT));
        }
    }
}

/// Puts the interface in promiscuous mode for as long as socket `fd` is open. The kernel counts this per socket
/// and drops it when the socket closes — on any exit, a crash or SIGKILL included — so nothing is left behind.
pub fn join_promiscuous(fd: RawFd, ifindex: i32) -> io::Result<()> {
    let mr = libc::packet_mreq {
        mr_ifindex: ifindex,
        mr_type: libc::PACKET_MR_PROMISC as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    set_sockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mr)
}

/// setsockopt with a plain-data value (an int, a timeval, a packet_mreq).
pub fn set_sockopt<T: Copy>(fd: RawFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: setsockopt reads exactly size_of::<T>() bytes from a live reference to plain data.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked_before_use() {
        for good in ["eth0", "enp2s0", "eth0.100", "a", "nc-veth-123456"] {
            assert!(validate_ifname(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a/b",
            "eth0:1",
            "eth 0",
            "a\tb",
            "sixteen-bytes-xx",
            ".",
            "..",
            "x\0y",
        ] {
            assert!(
                matches!(validate_ifname(bad), Err(Error::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn missing_interface_is_a_usage_error() {
        let e = ifindex("ncnosuch0").unwrap_err();
        assert_eq!(e.to_string(), "interface ncnosuch0 not found");
    }

    #[test]
    fn loopback_has_flags_and_a_zero_mac() {
        let f = flags("lo").unwrap();
        assert!(f & libc::IFF_LOOPBACK as u32 != 0);
        assert_eq!(mac("lo").unwrap(), [0; 6]);
    }
}
