//! The guard that puts an interface's flags back as they were (NIC mode and `reflect`). The interface facts
//! themselves (index, MAC, flags, MTU) are read through `sys::netdev`.

use crate::error::{Error, Result};
use crate::sys::netdev;

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
        let before = netdev::flags(name)
            .map_err(|e| Error::sys(format!("reading the flags of {name}"), e))?;
        Ok(FlagsGuard {
            name: name.to_string(),
            before,
        })
    }
}

impl Drop for FlagsGuard {
    fn drop(&mut self) {
        if let Ok(now) = netdev::flags(&self.name)
            && (now ^ self.before) & KEPT != 0
        {
            let _ = netdev::set_flags(&self.name, (now & !KEPT) | (self.before & KEPT));
        }
    }
}
