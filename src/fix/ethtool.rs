//! NIC settings changed through the SIOCETHTOOL ioctl (interrupt coalescing, EEE). Each change is one field of
//! one ethtool structure: the whole structure is read (ETHTOOL_G*), that field changed, and the structure written
//! back (ETHTOOL_S*), as `ethtool -C` / `--set-eee` do. The ioctl itself is sys::ethtool's; the steps that
//! plan these changes are tunables (crate::tunable::ethtool).

use std::io;

use serde::{Deserialize, Serialize};

use crate::sys::ethtool::{self as et, Coalesce, Eee};

/// One field of struct ethtool_coalesce or struct ethtool_eee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NicField {
    RxUsecs,
    RxFrames,
    AdaptiveRx,
    Eee,
}

impl NicField {
    /// ethtool's own name for the field.
    pub(crate) fn name(self) -> &'static str {
        match self {
            NicField::RxUsecs => "rx-usecs",
            NicField::RxFrames => "rx-frames",
            NicField::AdaptiveRx => "adaptive-rx",
            NicField::Eee => "eee",
        }
    }
}

/// The target as reports and the journal name it, e.g. "eth0: ethtool rx-usecs".
pub(crate) fn target(nic: &str, field: NicField) -> String {
    format!("{nic}: ethtool {}", field.name())
}

/// The field's present value on the live NIC.
pub fn read(nic: &str, field: NicField) -> io::Result<u32> {
    Ok(match field {
        NicField::RxUsecs => et::get::<Coalesce>(nic)?.rx_coalesce_usecs,
        NicField::RxFrames => et::get::<Coalesce>(nic)?.rx_max_coalesced_frames,
        NicField::AdaptiveRx => et::get::<Coalesce>(nic)?.use_adaptive_rx_coalesce,
        NicField::Eee => et::get::<Eee>(nic)?.eee_enabled,
    })
}

/// Reads the whole structure, changes only `field`, writes it back (on the running machine only).
pub(crate) fn write(
    _: crate::host::Kernel,
    nic: &str,
    field: NicField,
    value: u32,
) -> io::Result<()> {
    if field == NicField::Eee {
        let mut e = et::get::<Eee>(nic)?;
        e.eee_enabled = value;
        return et::set(nic, &e);
    }
    let mut c = et::get::<Coalesce>(nic)?;
    match field {
        NicField::RxUsecs => c.rx_coalesce_usecs = value,
        NicField::RxFrames => c.rx_max_coalesced_frames = value,
        _ => c.use_adaptive_rx_coalesce = value,
    }
    et::set(nic, &c)
}

/// EOPNOTSUPP: the driver has no such setting (veth, many virtual NICs). Reported for the step, not fatal.
pub(crate) fn unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP)
}
