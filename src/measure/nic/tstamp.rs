//! Packet timestamps: which kind a run uses, and the NIC's hardware timestamping. The present configuration is
//! read first: one that already stamps every frame is used as it is; one that someone else set (a PTP daemon, say)
//! is left alone and the run uses software stamps; only an unused one is switched on — after the old one is
//! recorded under /run/rmp-eval/hwtstamp/KEY (`machine::net::nic_key`: the namespace and index, as the NIC lock
//! is keyed), so that the next run on that NIC restores it after a crash (kill -9) — and put back on every exit. The system calls (SIOC[GS]HWTSTAMP, SO_TIMESTAMPING for transmit stamps and their control messages, the receive
//! ring that stamps received frames) are in `sys`.

use std::io;

use crate::host::Host;
pub(crate) use crate::sys::packet::Stamps;
use crate::sys::{hwtstamp, ifname};

/// Where a changed configuration is recorded until it is restored (tmpfs: a reboot resets the NIC too).
pub const RECORD_DIR: &str = "/run/rmp-eval/hwtstamp";

/// Which clock stamps the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TsKind {
    /// The NIC's PTP clock, at the wire.
    Hardware,
    /// The kernel's CLOCK_REALTIME, in the driver (TX) and at packet receive (RX).
    Software,
}

/// What to do with the NIC's present configuration (`None`: unreadable, as with drivers that have no GET).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HwDecision {
    /// It already stamps TX and every received frame: use it, change nothing.
    Use,
    /// Someone else's configuration (a PTP daemon's filter): leave it, use software stamps.
    LeaveAlone,
    /// Off (or unknown): record it, switch on, restore afterwards.
    Change(hwtstamp::HwtstampConfig),
}

pub(crate) fn plan(current: Option<hwtstamp::HwtstampConfig>) -> HwDecision {
    match current {
        Some(c) if c.stamps_all() => HwDecision::Use,
        Some(c)
            if c.tx_type != hwtstamp::HwtstampConfig::OFF.tx_type
                || c.rx_filter != hwtstamp::HwtstampConfig::OFF.rx_filter =>
        {
            HwDecision::LeaveAlone
        }
        Some(c) => HwDecision::Change(c),
        None => HwDecision::Change(hwtstamp::HwtstampConfig::OFF),
    }
}

fn record_path(key: &str) -> String {
    format!("{RECORD_DIR}/{key}")
}

fn encode(c: hwtstamp::HwtstampConfig) -> String {
    format!("{} {} {}\n", c.flags, c.tx_type, c.rx_filter)
}

/// The record's text: "flags tx_type rx_filter".
pub(crate) fn decode(s: &str) -> Option<hwtstamp::HwtstampConfig> {
    let v: Vec<i32> = s
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match v[..] {
        [flags, tx_type, rx_filter] => Some(hwtstamp::HwtstampConfig {
            flags,
            tx_type,
            rx_filter,
        }),
        _ => None,
    }
}

/// Why a run on `nic` measures with software stamps, from the error `HwTstamp::enable` gave (shown with -v and
/// in the result's `stamps.why_software`).
pub(crate) fn why_software(nic: &str, e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP | libc::EINVAL) => {
            format!("{nic}'s driver has no hardware timestamps")
        }
        Some(libc::EBUSY) => format!(
            "another program configured {nic}'s hardware timestamps (a PTP daemon?): left as it is"
        ),
        // igb on an 82576 (qemu's igb too) answers ERANGE: it can stamp PTP frames, not every frame.
        Some(libc::ERANGE) => format!(
            "{nic}'s driver cannot stamp every received frame (HWTSTAMP_FILTER_ALL refused: {e}), only PTP ones"
        ),
        Some(NARROWED) => format!(
            "{nic}'s driver narrowed \"every received frame\" to PTP frames only: EtherCAT replies would get no stamp"
        ),
        _ => format!("hardware timestamps on {nic} could not be set up: {e}"),
    }
}

/// `enable`'s error when the driver accepted HWTSTAMP_FILTER_ALL but narrowed it (an errno no ioctl gives here).
const NARROWED: i32 = libc::EPROTONOSUPPORT;

/// The NIC's hardware timestamping for one run; what was changed is put back on drop.
pub(crate) struct HwTstamp {
    host: Host,
    name: String,
    /// The record's name (`machine::net::nic_key`).
    key: String,
    /// The configuration to restore, when this run changed it.
    previous: Option<hwtstamp::HwtstampConfig>,
}

impl HwTstamp {
    /// `Err` when the NIC (or its driver) has no hardware timestamps — veth answers EOPNOTSUPP — or when its
    /// configuration belongs to someone else.
    pub(crate) fn enable(host: &Host, name: &str) -> io::Result<HwTstamp> {
        ifname::validate(name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let previous = match plan(hwtstamp::get(name).ok()) {
            HwDecision::Use => None,
            HwDecision::LeaveAlone => return Err(io::Error::from_raw_os_error(libc::EBUSY)),
            HwDecision::Change(p) => Some(p),
        };
        let Some(p) = previous else {
            return Ok(HwTstamp {
                host: host.clone(),
                name: name.to_string(),
                key: String::new(),
                previous: None,
            });
        };
        let key = crate::machine::net::nic_key(host, name).map_err(io::Error::other)?;
        // Recorded before it is changed: a crash between the two leaves a record of an unchanged NIC, harmless.
        host.create_dir_all(RECORD_DIR).map_err(io::Error::other)?;
        host.write_atomic(&record_path(&key), encode(p).as_bytes(), None)
            .map_err(io::Error::other)?;
        let g = HwTstamp {
            host: host.clone(),
            name: name.to_string(),
            key,
            previous: Some(p),
        };
        let got = hwtstamp::set(name, hwtstamp::HwtstampConfig::ALL)?;
        // A driver may narrow the filter (PTP frames only): then EtherCAT replies get no hardware stamp, and
        // software stamps at both ends are the honest measure (`g` restores on the way out).
        if got.rx_filter != hwtstamp::HwtstampConfig::ALL.rx_filter {
            return Err(io::Error::from_raw_os_error(NARROWED));
        }
        Ok(g)
    }
}

impl Drop for HwTstamp {
    fn drop(&mut self) {
        // The record stays when the restore failed on a NIC that still has hardware timestamps: the next run
        // tries again.
        if let Some(p) = self.previous
            && (hwtstamp::set(&self.name, p).is_ok() || hwtstamp::get(&self.name).is_err())
        {
            let _ = self.host.remove_file(&record_path(&self.key));
        }
    }
}

/// Puts back what a run that did not end (kill -9, power loss of the process) left switched on `nic`, whose record
/// is `key` and whose NIC lock this run holds (so no live run owns the record); one line for the user, or none
/// without a record. Other NICs' records are their runs' to put back: one may be live, in another namespace too.
pub(crate) fn restore_leftover(host: &Host, nic: &str, key: &str) -> Option<String> {
    let path = record_path(key);
    let text = host.read(&path).ok()?;
    let msg = match (ifname::validate(nic), decode(&text)) {
        (Ok(()), Some(c)) => match hwtstamp::set(nic, c) {
            Ok(_) => {
                format!(
                    "restored the hardware timestamping of {nic} that an earlier run left changed"
                )
            }
            Err(e) => format!(
                "could not restore the hardware timestamping of {nic} ({e}); record dropped"
            ),
        },
        _ => format!("dropped an unreadable hardware-timestamp record {path}"),
    };
    let _ = host.remove_file(&path);
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwtstamp::HwtstampConfig;

    /// A tree whose process is in network namespace 1 (the link `nic_key` reads).
    fn host_in_netns_1() -> (tempfile::TempDir, Host) {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        std::fs::create_dir_all(host.path("/proc/self/ns")).unwrap();
        std::os::unix::fs::symlink("net:[1]", host.path("/proc/self/ns/net")).unwrap();
        (dir, host)
    }

    #[test]
    fn only_this_nics_record_is_put_back() {
        let (_dir, host) = host_in_netns_1();
        host.create_dir_all(RECORD_DIR).unwrap();
        // Another NIC's, or a namesake's in another namespace: perhaps a live run's.
        for other in ["net1-if9", "net2-if1", "lo"] {
            host.write_atomic(&record_path(other), b"0 0 0\n", None)
                .unwrap();
        }
        assert_eq!(restore_leftover(&host, "lo", "net1-if1"), None);
        assert_eq!(host.list(RECORD_DIR).unwrap().len(), 3);
    }

    #[test]
    fn veth_and_loopback_have_no_hardware_timestamps() {
        // Loopback, like veth, has no PTP clock: enabling must fail cleanly and leave no record.
        let (_dir, host) = host_in_netns_1();
        let e = HwTstamp::enable(&host, "lo")
            .err()
            .expect("lo has no hardware timestamps");
        assert!(e.raw_os_error().is_some(), "{e}");
        assert!(HwTstamp::enable(&host, "bad/name").is_err());
        assert_eq!(
            host.list(RECORD_DIR).unwrap_or_default(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn configuration_is_read_first() {
        assert_eq!(plan(Some(HwtstampConfig::ALL)), HwDecision::Use);
        // ptp4l's usual setting: TX on, PTPv2 event frames only (HWTSTAMP_FILTER_PTP_V2_EVENT = 12).
        let ptp4l = HwtstampConfig {
            flags: 0,
            tx_type: 1,
            rx_filter: 12,
        };
        assert_eq!(plan(Some(ptp4l)), HwDecision::LeaveAlone);
        assert_eq!(
            plan(Some(HwtstampConfig::OFF)),
            HwDecision::Change(HwtstampConfig::OFF)
        );
        assert_eq!(plan(None), HwDecision::Change(HwtstampConfig::OFF));
    }

    #[test]
    fn records_round_trip_and_leftovers_are_consumed() {
        let c = HwtstampConfig {
            flags: 0,
            tx_type: 1,
            rx_filter: 12,
        };
        assert_eq!(decode(&encode(c)), Some(c));
        assert_eq!(decode("1 2"), None);
        assert_eq!(decode("a b c"), None);
        let dir = tempfile::tempdir().unwrap();
        let host = Host::with_root(dir.path());
        host.create_dir_all(RECORD_DIR).unwrap();
        host.write_atomic(
            &record_path("net1-if1"),
            encode(HwtstampConfig::OFF).as_bytes(),
            None,
        )
        .unwrap();
        host.write_atomic(&record_path("net1-if2"), b"x", None)
            .unwrap();
        let said = restore_leftover(&host, "lo", "net1-if1").unwrap();
        assert!(
            said.contains("could not restore the hardware timestamping of lo"),
            "{said}"
        );
        let said = restore_leftover(&host, "lo", "net1-if2").unwrap();
        assert!(said.contains("unreadable"), "{said}");
        assert!(host.list(RECORD_DIR).unwrap().is_empty());
    }
}
