//! The names NIC drivers give their IRQs in /proc/interrupts (the action, as passed to request_irq), read from
//! the drivers' sources (Linux 6.x, drivers/net/ethernet/… and drivers/net/virtio_net.c):
//!
//! | driver | per-queue vectors | other vectors |
//! |---|---|---|
//! | igb, igc, ixgbe | `IF-TxRx-N`, `IF-rx-N`, `IF-tx-N` ("%s-TxRx-%u") | `IF` (link, misc) |
//! | e1000e (82574) | `IF-rx-0`, `IF-tx-0` ("%.14s-rx-0"; only for names under 11 bytes) | `IF` |
//! | i40e, ice | `DRV-IF-TxRx-N`, `DRV-IF-rx-N`, `DRV-IF-tx-N` (basename "%s-%s": driver, interface) | `DRV-PCI:misc` |
//! | ena | `IF-Tx-Rx-N` ("%s-Tx-Rx-%d") | `ena-mgmnt@pci:…` |
//! | tg3 | `IF-txrx-N`, `IF-tx-N`, `IF-rx-N` | `IF-0` |
//! | vmxnet3 | `IF-rxtx-N`, `IF-tx-N`, `IF-rx-N` | `IF-event-N` |
//! | bnx2x, qede | `IF-fp-N` | `IF` |
//! | stmmac (multi-MSI) | `IF:rx-N`, `IF:tx-N` ("%s:%s-%d") | `IF:mac`, `IF:wol`, `IF:lpi`, `IF:safety_ce` |
//! | virtio_net | `virtioN-input.M`, `virtioN-output.M` (the virtio device's name) | `virtioN-config`, `virtioN-virtqueues` (one vector for all queues) |
//! | r8169, bcmgenet, e1000 | none: one or two vectors named `IF`, serving every queue | |
//!
//! Samples: tests below, one per row, written as the format strings above print them.

/// The queue kinds drivers name, each followed by the queue number.
const KINDS: &[&str] = &[
    "TxRx-", "Tx-Rx-", "txrx-", "rxtx-", "rx-", "tx-", "input.", "output.", "fp-",
];

/// Drivers whose vectors start with their own name before the interface's ("i40e-eth0-TxRx-0").
const DRIVER_FIRST: &[&str] = &["i40e", "ice", "iavf"];

/// The part of an IRQ action after the owner of the interface `nic`, when the action is one of its vectors:
/// "eth0-TxRx-1" → "TxRx-1", "eth0:rx-0" → "rx-0", "i40e-eth0-TxRx-0" → "TxRx-0", "virtio2-input.0" →
/// "input.0" (when `virtio` is "virtio2", the NIC's virtio device), "eth0" → "". None when the action is
/// another device's ("eth10-rx-0" is not eth1's).
pub(crate) fn owned_part<'a>(action: &'a str, nic: &str, virtio: Option<&str>) -> Option<&'a str> {
    if action == nic {
        return Some("");
    }
    let after = |owner: &str| {
        action
            .strip_prefix(owner)
            .and_then(|r| r.strip_prefix('-').or_else(|| r.strip_prefix(':')))
    };
    if let Some(r) = after(nic) {
        return Some(r);
    }
    if let Some(r) = DRIVER_FIRST.iter().find_map(|d| {
        action
            .strip_prefix(d)?
            .strip_prefix('-')?
            .strip_prefix(nic)?
            .strip_prefix('-')
    }) {
        return Some(r);
    }
    let v = virtio?;
    action.strip_prefix(v)?.strip_prefix('-')
}

/// The queue an action's owned part names ("TxRx-3", "rx-0", "input.0"), or None for the NIC's other vectors
/// ("", "config", "mac", "event-0", "0").
pub(crate) fn queue(part: &str) -> Option<&str> {
    KINDS.iter().find_map(|k| {
        let n = part.strip_prefix(k)?;
        (!n.is_empty() && n.len() <= 5 && n.bytes().all(|b| b.is_ascii_digit())).then_some(part)
    })
}

/// The queue label of an action for `nic` (see `owned_part` and `queue`).
pub(crate) fn queue_label(action: &str, nic: &str, virtio: Option<&str>) -> Option<String> {
    owned_part(action, nic, virtio)
        .and_then(queue)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(action: &str, nic: &str) -> Option<String> {
        queue_label(action, nic, None)
    }

    #[test]
    fn each_drivers_queue_vectors() {
        // igb/igc (seed-i3-13100te's igc enp2s0), ixgbe: "%s-TxRx-%u", and split vectors "%s-rx-%u".
        assert_eq!(label("enp2s0-TxRx-3", "enp2s0").as_deref(), Some("TxRx-3"));
        assert_eq!(label("eth1-rx-0", "eth1").as_deref(), Some("rx-0"));
        assert_eq!(label("eth1-tx-7", "eth1").as_deref(), Some("tx-7"));
        // e1000e on an 82574: "%.14s-rx-0", "%.14s-tx-0", and the link vector named as the interface.
        assert_eq!(label("eno1-rx-0", "eno1").as_deref(), Some("rx-0"));
        assert_eq!(label("eno1-tx-0", "eno1").as_deref(), Some("tx-0"));
        assert_eq!(label("eno1", "eno1"), None);
        // i40e and ice: "%s-%s-%d" of basename "i40e-<if>" and "TxRx"; their misc vector names the PCI device.
        assert_eq!(
            label("i40e-ens1f0-TxRx-0", "ens1f0").as_deref(),
            Some("TxRx-0")
        );
        assert_eq!(label("ice-ens5f1-rx-2", "ens5f1").as_deref(), Some("rx-2"));
        assert_eq!(label("i40e-0000:3b:00.0:misc", "ens1f0"), None);
        // ena (Amazon): "%s-Tx-Rx-%d", eight queues.
        for q in 0..8 {
            assert_eq!(
                label(&format!("eth0-Tx-Rx-{q}"), "eth0"),
                Some(format!("Tx-Rx-{q}"))
            );
        }
        assert_eq!(label("ena-mgmnt@pci:0000:00:05.0", "eth0"), None);
        // tg3 "%s-txrx-%d", vmxnet3 "%s-rxtx-%d" and its event vector, bnx2x "%s-fp-%d".
        assert_eq!(label("eth0-txrx-1", "eth0").as_deref(), Some("txrx-1"));
        assert_eq!(label("ens192-rxtx-0", "ens192").as_deref(), Some("rxtx-0"));
        assert_eq!(label("ens192-event-1", "ens192"), None);
        assert_eq!(label("eth2-fp-3", "eth2").as_deref(), Some("fp-3"));
        // stmmac with one MSI per queue: "%s:%s-%d", and its named causes.
        assert_eq!(label("eth0:rx-0", "eth0").as_deref(), Some("rx-0"));
        assert_eq!(label("eth0:tx-3", "eth0").as_deref(), Some("tx-3"));
        assert_eq!(label("eth0:mac", "eth0"), None);
        assert_eq!(label("eth0:safety_ce", "eth0"), None);
        // virtio_net (debian12-rt-qemu-untuned: virtio2 is enp0s2's device).
        let v = Some("virtio2");
        assert_eq!(
            queue_label("virtio2-input.0", "enp0s2", v).as_deref(),
            Some("input.0")
        );
        assert_eq!(
            queue_label("virtio2-output.0", "enp0s2", v).as_deref(),
            Some("output.0")
        );
        assert_eq!(queue_label("virtio2-config", "enp0s2", v), None);
        assert_eq!(queue_label("virtio2-virtqueues", "enp0s2", v), None);
        assert_eq!(
            queue_label("virtio1-input.0", "enp0s2", v),
            None,
            "another virtio device"
        );
        // r8169 and bcmgenet: vectors named as the interface, no queue.
        assert_eq!(label("enp3s0", "enp3s0"), None);
    }

    #[test]
    fn another_interfaces_vectors_are_not_claimed() {
        assert_eq!(owned_part("eth10-rx-0", "eth1", None), None);
        assert_eq!(owned_part("eth1", "eth10", None), None);
        assert_eq!(owned_part("i40e-eth10-TxRx-0", "eth1", None), None);
        assert_eq!(owned_part("xx-eth1-TxRx-0", "eth1", None), None);
        assert_eq!(owned_part("eth1", "eth1", None), Some(""));
        assert_eq!(label("eth1-TxRx-", "eth1"), None);
        assert_eq!(label("eth1-TxRx-1a", "eth1"), None);
    }
}
