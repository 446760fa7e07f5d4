//! Packet timestamps: which kind a run uses, and the NIC's hardware timestamping, switched on for the run and
//! restored afterwards. The system calls (SIOC[GS]HWTSTAMP, SO_TIMESTAMPING, the control messages) are in `sys`.

use std::io;

pub use crate::sys::packet::Stamps;
use crate::sys::{hwtstamp, ifname};

/// Which clock stamps the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TsKind {
    /// The NIC's PTP clock, at the wire.
    Hardware,
    /// The kernel's CLOCK_REALTIME, in the driver (TX) and at packet receive (RX).
    Software,
}

/// The NIC's hardware timestamping, switched on for TX and all RX frames; the previous setting is put back on drop
/// (another program, a PTP daemon say, may rely on it).
pub struct HwTstamp {
    name: String,
    previous: hwtstamp::Config,
}

impl HwTstamp {
    /// `Err` when the NIC (or its driver) has no hardware timestamps — veth answers EOPNOTSUPP.
    pub fn enable(name: &str) -> io::Result<HwTstamp> {
        ifname::validate(name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        // Older drivers have SET but not GET: then "off" is the best guess of what was there.
        let previous = hwtstamp::get(name).unwrap_or(hwtstamp::Config::OFF);
        let got = hwtstamp::set(name, hwtstamp::Config::ALL)?;
        // A driver may narrow the filter (PTP frames only): then EtherCAT replies get no hardware stamp, and
        // software stamps at both ends are the honest measure.
        if got.rx_filter != hwtstamp::Config::ALL.rx_filter {
            let _ = hwtstamp::set(name, previous);
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        Ok(HwTstamp {
            name: name.to_string(),
            previous,
        })
    }
}

impl Drop for HwTstamp {
    fn drop(&mut self) {
        let _ = hwtstamp::set(&self.name, self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_and_loopback_have_no_hardware_timestamps() {
        // Loopback, like veth, has no PTP clock: enabling must fail cleanly and change nothing.
        let e = HwTstamp::enable("lo")
            .err()
            .expect("lo has no hardware timestamps");
        assert!(e.raw_os_error().is_some(), "{e}");
        assert!(HwTstamp::enable("bad/name").is_err());
    }
}
