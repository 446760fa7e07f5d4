//! SIOCETHTOOL with the kernel's own structures (include/uapi/linux/ethtool.h), typed: a command can only be
//! issued with the structure it reads and writes, so the kernel never writes past a buffer.

use std::io;

use super::netdev;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GCOALESCE: u32 = 0x0e;
const ETHTOOL_SCOALESCE: u32 = 0x0f;
const ETHTOOL_GEEE: u32 = 0x44;
const ETHTOOL_SEEE: u32 = 0x45;

/// struct ethtool_coalesce.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Coalesce {
    pub(crate) cmd: u32,
    pub(crate) rx_coalesce_usecs: u32,
    pub(crate) rx_max_coalesced_frames: u32,
    pub(crate) rx_coalesce_usecs_irq: u32,
    pub(crate) rx_max_coalesced_frames_irq: u32,
    pub(crate) tx_coalesce_usecs: u32,
    pub(crate) tx_max_coalesced_frames: u32,
    pub(crate) tx_coalesce_usecs_irq: u32,
    pub(crate) tx_max_coalesced_frames_irq: u32,
    pub(crate) stats_block_coalesce_usecs: u32,
    pub(crate) use_adaptive_rx_coalesce: u32,
    pub(crate) use_adaptive_tx_coalesce: u32,
    pub(crate) pkt_rate_low: u32,
    pub(crate) rx_coalesce_usecs_low: u32,
    pub(crate) rx_max_coalesced_frames_low: u32,
    pub(crate) tx_coalesce_usecs_low: u32,
    pub(crate) tx_max_coalesced_frames_low: u32,
    pub(crate) pkt_rate_high: u32,
    pub(crate) rx_coalesce_usecs_high: u32,
    pub(crate) rx_max_coalesced_frames_high: u32,
    pub(crate) tx_coalesce_usecs_high: u32,
    pub(crate) tx_max_coalesced_frames_high: u32,
    pub(crate) rate_sample_interval: u32,
}

/// struct ethtool_eee.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Eee {
    pub(crate) cmd: u32,
    pub(crate) supported: u32,
    pub(crate) advertised: u32,
    pub(crate) lp_advertised: u32,
    pub(crate) eee_active: u32,
    pub(crate) eee_enabled: u32,
    pub(crate) tx_lpi_enabled: u32,
    pub(crate) tx_lpi_timer: u32,
    pub(crate) reserved: [u32; 2],
}

mod sealed {
    pub(crate) trait Sealed {}
    impl Sealed for super::Coalesce {}
    impl Sealed for super::Eee {}
}

/// A structure with its get and set commands.
///
/// # Safety
/// `GET` and `SET` must be the ethtool commands that read and write exactly `Self`, and `Self` must be
/// `#[repr(C)]` with `cmd: u32` first (sealed: only the structures above).
pub(crate) unsafe trait Command: sealed::Sealed + Default + Copy {
    const GET: u32;
    const SET: u32;
    fn set_cmd(&mut self, cmd: u32);
}

// SAFETY: ETHTOOL_[GS]COALESCE read and write one struct ethtool_coalesce, which `Coalesce` mirrors.
unsafe impl Command for Coalesce {
    const GET: u32 = ETHTOOL_GCOALESCE;
    const SET: u32 = ETHTOOL_SCOALESCE;
    fn set_cmd(&mut self, cmd: u32) {
        self.cmd = cmd;
    }
}

// SAFETY: ETHTOOL_[GS]EEE read and write one struct ethtool_eee, which `Eee` mirrors.
unsafe impl Command for Eee {
    const GET: u32 = ETHTOOL_GEEE;
    const SET: u32 = ETHTOOL_SEEE;
    fn set_cmd(&mut self, cmd: u32) {
        self.cmd = cmd;
    }
}

/// The NIC's present structure (ETHTOOL_G*). EOPNOTSUPP: the driver has no such settings.
pub(crate) fn get<T: Command>(nic: &str) -> io::Result<T> {
    let mut v = T::default();
    v.set_cmd(T::GET);
    // SAFETY: `Command` guarantees that `T` is the structure T::GET fills.
    unsafe { netdev::ioctl_data(nic, SIOCETHTOOL, &mut v) }?;
    Ok(v)
}

/// Hands the whole structure to the driver (ETHTOOL_S*): read it with `get` first and change only your fields.
pub(crate) fn set<T: Command>(nic: &str, value: &T) -> io::Result<()> {
    let mut v = *value;
    v.set_cmd(T::SET);
    // SAFETY: `Command` guarantees that `T` is the structure T::SET reads.
    unsafe { netdev::ioctl_data(nic, SIOCETHTOOL, &mut v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<Coalesce>(), 23 * 4);
        assert_eq!(std::mem::size_of::<Eee>(), 10 * 4);
        assert_eq!(
            std::mem::offset_of!(Coalesce, use_adaptive_rx_coalesce),
            10 * 4
        );
        assert_eq!(std::mem::offset_of!(Eee, eee_enabled), 5 * 4);
    }

    #[test]
    fn loopback_has_no_coalescing_and_bad_names_are_refused() {
        // lo has no ethtool coalescing: the ioctl fails with an errno, it does not panic or write past anything.
        let e = get::<Coalesce>("lo").unwrap_err();
        assert!(e.raw_os_error().is_some(), "{e}");
        let e = get::<Eee>("bad/name").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
