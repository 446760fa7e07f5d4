//! The NIC queue a run uses (`--txq N`, `--rxq N`): checked against the interface's queue count before anything
//! starts, steered for the run (steer.rs: XPS for transmit, an ethtool flow rule for receive, both recorded and
//! put back), and verified afterwards from the driver's own per-queue counters — never assumed.

mod steer;

use serde::{Deserialize, Serialize};

pub(crate) use steer::{Steering, restore_leftovers};

use crate::error::{Error, Result};
use crate::host::Host;
use crate::machine::net::queue_counts;
use crate::measure::spec::{Mode, NicPath, NicSpec};

/// `--txq`/`--rxq` against the interface's queues (from /sys/class/net/IF/queues): a queue it does not have is a
/// usage error, before anything on the machine changes.
pub(crate) fn validate(host: &Host, spec: &NicSpec) -> Result<()> {
    xdp_path(spec)?;
    if spec.txq.is_none() && spec.rxq.is_none() {
        return Ok(());
    }
    let nic = spec.name.as_str();
    let Some((tx, rx)) = queue_counts(host, nic) else {
        return Err(Error::failed(format!(
            "cannot read the queues of {nic} (/sys/class/net/{nic}/queues)"
        )));
    };
    for (opt, want, have, kind) in [
        ("--txq", spec.txq, tx, "transmit"),
        ("--rxq", spec.rxq, rx, "receive"),
    ] {
        if let Some(q) = want
            && usize::from(q) >= have
        {
            return Err(Error::usage(format!(
                "{opt} {q}: {nic} has {have} {kind} queue(s) (0 to {})",
                have.saturating_sub(1)
            )));
        }
    }
    Ok(())
}

/// What the result says of the queues: the ones asked for, and what the driver's counters showed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct QueueReport {
    pub(crate) txq: Option<u16>,
    pub(crate) rxq: Option<u16>,
    /// Transmit: frames the chosen queue's counter gained during the run, and the other queues'.
    pub(crate) tx: Option<QueueCount>,
    pub(crate) rx: Option<QueueCount>,
    /// Why a direction could not be verified (the driver has no such counter), in words.
    pub(crate) notes: Vec<String>,
}

/// `--path af_xdp`: one queue both ways (an AF_XDP socket transmits on the queue it is bound to), and only the
/// frame kinds its XDP program tells apart by EtherType (a UDP echo would need the IP stack's ARP and routing).
fn xdp_path(spec: &NicSpec) -> Result<()> {
    if spec.path != NicPath::AfXdp {
        return Ok(());
    }
    if spec.mode == Mode::Udp {
        return Err(Error::usage(
            "--path af_xdp takes --mode ecat or raw (its XDP program passes the probe's EtherType only)",
        ));
    }
    let queue = spec.rxq.unwrap_or(0);
    match spec.txq {
        Some(t) if t != queue => Err(Error::usage(format!(
            "--path af_xdp sends and receives on one queue: --txq {t} differs from the bound queue {queue} (give \
             --rxq {t}, or leave --txq out)"
        ))),
        _ => Ok(()),
    }
}

/// One direction's counters over the run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct QueueCount {
    /// The driver's statistic read (`ethtool -S` name).
    pub(crate) counter: String,
    pub(crate) on_queue: u64,
    pub(crate) elsewhere: u64,
    /// At least as many frames on the chosen queue as the run moved in that direction.
    pub(crate) verified: bool,
}

/// The per-queue packet counter of direction `dir` ("tx"/"rx") and queue `q`, by the names drivers give it:
/// igb, ixgbe, virtio_net (older) `tx_queue_0_packets`; mlx5, virtio_net (6.11+) `tx0_packets`; i40e, ice
/// `tx-0.tx_packets` / `tx-0.packets`. veth has only XDP counters per queue, which count nothing of a plain
/// AF_PACKET run on this end.
pub(crate) fn counter_of(stats: &[(String, u64)], dir: &str, q: usize) -> Option<(String, u64)> {
    let names = [
        format!("{dir}_queue_{q}_packets"),
        format!("{dir}{q}_packets"),
        format!("{dir}-{q}.{dir}_packets"),
        format!("{dir}-{q}.packets"),
    ];
    names
        .iter()
        .find_map(|n| stats.iter().find(|(s, _)| s == n).cloned())
}

/// Every queue's counter of one direction: (queue, value).
fn counters(stats: &[(String, u64)], dir: &str, queues: usize) -> Vec<(usize, String, u64)> {
    (0..queues)
        .filter_map(|q| counter_of(stats, dir, q).map(|(n, v)| (q, n, v)))
        .collect()
}

/// One direction's delta between two readings of the statistics: None when the driver has no counter for the
/// chosen queue.
pub(crate) fn delta(
    before: &[(String, u64)],
    after: &[(String, u64)],
    dir: &str,
    queue: usize,
    queues: usize,
    moved: u64,
) -> Option<QueueCount> {
    let b = counters(before, dir, queues);
    let a = counters(after, dir, queues);
    let mut out = QueueCount::default();
    let mut found = false;
    for (q, name, v) in &a {
        let Some((_, _, old)) = b.iter().find(|(bq, _, _)| bq == q) else {
            continue;
        };
        let d = v.saturating_sub(*old);
        if *q == queue {
            found = true;
            out.counter = name.clone();
            out.on_queue = d;
        } else {
            out.elsewhere += d;
        }
    }
    out.verified = out.on_queue >= moved;
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[(&str, u64)]) -> Vec<(String, u64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    #[test]
    fn counters_are_found_by_each_drivers_name() {
        // Names from the drivers' ethtool string tables (igb_ethtool.c, mlx5 en_stats.c, i40e_ethtool.c) and veth's.
        let igb = s(&[("tx_queue_0_packets", 10), ("tx_queue_1_packets", 5)]);
        assert_eq!(counter_of(&igb, "tx", 1).unwrap().1, 5);
        let mlx = s(&[("rx0_packets", 7)]);
        assert_eq!(counter_of(&mlx, "rx", 0).unwrap().0, "rx0_packets");
        let i40e = s(&[("tx-2.tx_packets", 3)]);
        assert_eq!(counter_of(&i40e, "tx", 2).unwrap().1, 3);
        let veth = s(&[("rx_queue_0_xdp_packets", 9), ("peer_ifindex", 4)]);
        assert_eq!(counter_of(&veth, "tx", 0), None);
    }

    #[test]
    fn the_delta_says_where_the_frames_went() {
        let b = s(&[("tx_queue_0_packets", 100), ("tx_queue_1_packets", 50)]);
        let a = s(&[("tx_queue_0_packets", 103), ("tx_queue_1_packets", 1050)]);
        let d = delta(&b, &a, "tx", 1, 2, 1000).unwrap();
        assert_eq!((d.on_queue, d.elsewhere, d.verified), (1000, 3, true));
        let d = delta(&b, &a, "tx", 0, 2, 1000).unwrap();
        assert!(!d.verified, "{d:?}");
        assert_eq!(delta(&b, &a, "tx", 3, 4, 1), None);
    }
}
