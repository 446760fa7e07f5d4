//! Network interface facts: where the kernel lists its interfaces, and their queues.

use crate::host::Host;

/// One directory per interface (operstate, carrier, speed, device/, queues/ …).
pub(crate) const NET: &str = "/sys/class/net";

/// The interface's transmit and receive queues, counted from /sys/class/net/IF/queues (tx-N, rx-N); None when
/// that directory cannot be read.
pub(crate) fn queue_counts(host: &Host, nic: &str) -> Option<(usize, usize)> {
    let names = host.list(&format!("{NET}/{nic}/queues")).ok()?;
    let count = |p: &str| names.iter().filter(|n| n.starts_with(p)).count();
    Some((count("tx-"), count("rx-")))
}

/// One transmit queue's XPS mask file.
pub(crate) fn xps_path(nic: &str, queue: usize) -> String {
    format!("{NET}/{nic}/queues/tx-{queue}/xps_cpus")
}
