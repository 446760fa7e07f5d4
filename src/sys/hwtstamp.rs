//! The NIC's hardware-timestamp configuration (SIOCGHWTSTAMP / SIOCSHWTSTAMP).

use std::io;

use super::netdev;

/// struct hwtstamp_config: which frames the NIC stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HwtstampConfig {
    pub(crate) flags: i32,
    pub(crate) tx_type: i32,
    pub(crate) rx_filter: i32,
}

impl HwtstampConfig {
    pub(crate) const OFF: HwtstampConfig = HwtstampConfig {
        flags: 0,
        tx_type: libc::HWTSTAMP_TX_OFF as i32,
        rx_filter: libc::HWTSTAMP_FILTER_NONE as i32,
    };
    /// TX stamps on, every received frame stamped: what a round trip of non-PTP frames needs.
    pub(crate) const ALL: HwtstampConfig = HwtstampConfig {
        flags: 0,
        tx_type: libc::HWTSTAMP_TX_ON as i32,
        rx_filter: libc::HWTSTAMP_FILTER_ALL as i32,
    };

    /// Stamps what a round trip of EtherCAT frames needs: TX stamps on and every received frame.
    pub(crate) fn stamps_all(&self) -> bool {
        self.tx_type == libc::HWTSTAMP_TX_ON as i32
            && self.rx_filter == libc::HWTSTAMP_FILTER_ALL as i32
    }
}

fn ioctl(name: &str, req: libc::c_ulong, cfg: HwtstampConfig) -> io::Result<HwtstampConfig> {
    let mut c = libc::hwtstamp_config {
        flags: cfg.flags,
        tx_type: cfg.tx_type,
        rx_filter: cfg.rx_filter,
    };
    // SAFETY: SIOC[GS]HWTSTAMP read and write one struct hwtstamp_config through ifru_data.
    unsafe { netdev::ioctl_data(name, req, &mut c) }?;
    Ok(HwtstampConfig {
        flags: c.flags,
        tx_type: c.tx_type,
        rx_filter: c.rx_filter,
    })
}

/// The present configuration. Older drivers have SET but not GET (EOPNOTSUPP/EINVAL).
pub(crate) fn get(name: &str) -> io::Result<HwtstampConfig> {
    ioctl(name, libc::SIOCGHWTSTAMP, HwtstampConfig::OFF)
}

/// Asks for `cfg`; returns what the driver actually set (it may narrow the RX filter).
pub(crate) fn set(name: &str, cfg: HwtstampConfig) -> io::Result<HwtstampConfig> {
    ioctl(name, libc::SIOCSHWTSTAMP, cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_no_hardware_timestamps() {
        assert!(
            set("lo", HwtstampConfig::ALL)
                .unwrap_err()
                .raw_os_error()
                .is_some()
        );
        assert!(get("bad/name").is_err());
        assert!(HwtstampConfig::ALL.stamps_all() && !HwtstampConfig::OFF.stamps_all());
    }
}
