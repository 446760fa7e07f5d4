//! Interrupt facts: the IRQ table (/proc/interrupts), where each IRQ is routed, which IRQs are a NIC's, and the
//! files the interrupt checks read and the interrupt steps write.

use super::net::NET;
use crate::host::{Host, HostError};
use crate::parse::{cpulist, interrupts, irqname};

pub(crate) const INTERRUPTS: &str = "/proc/interrupts";
pub(crate) const SOFTIRQS: &str = "/proc/softirqs";
pub(crate) const PROC_IRQ: &str = "/proc/irq";
pub(crate) const DEFAULT_SMP_AFFINITY: &str = "/proc/irq/default_smp_affinity";

/// Why the IRQ table could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IrqTableError {
    #[error("cannot read {INTERRUPTS}: {}", .0.reason())]
    Read(HostError),
    #[error("could not map CPU column")]
    NoHeader,
    #[error(transparent)]
    Parse(interrupts::InterruptsError),
}

/// /proc/interrupts, parsed.
pub(crate) fn read_interrupts(host: &Host) -> Result<interrupts::Interrupts, IrqTableError> {
    let text = host.read(INTERRUPTS).map_err(IrqTableError::Read)?;
    interrupts::parse(&text).map_err(|e| match e {
        interrupts::InterruptsError::NoHeader => IrqTableError::NoHeader,
        e => IrqTableError::Parse(e),
    })
}

/// Where IRQ `n` is routed now: its effective affinity when the kernel reports one, else its affinity list.
pub(crate) fn irq_affinity(host: &Host, n: u32) -> Option<Vec<usize>> {
    ["effective_affinity_list", "smp_affinity_list"]
        .iter()
        .find_map(|f| {
            let raw = host.read_trimmed(&format!("{PROC_IRQ}/{n}/{f}")).ok()?;
            cpulist::parse(&raw).ok().filter(|v| !v.is_empty())
        })
}

/// The virtio device behind a virtio NIC ("virtio2"): its queue vectors carry that name, not the interface's.
pub(crate) fn virtio_device(host: &Host, nic: &str) -> Option<String> {
    host.readlink(&format!("{NET}/{nic}/device"))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .filter(|d| d.starts_with("virtio") && d[6..].bytes().all(|b| b.is_ascii_digit()))
}

/// The IRQ numbers of a NIC: its PCI MSI/MSI-X vectors (device/msi_irqs), plus /proc/interrupts rows whose action
/// the drivers' naming gives to it (parse::irqname: "enp2s0", "enp2s0-TxRx-0", "eth0:rx-0", "i40e-eth0-TxRx-0",
/// the virtio device's "virtioN-input.0"). The original matched any row containing the name as a substring, so
/// eth1 claimed eth10's.
pub(crate) fn nic_irqs(host: &Host, nic: &str, ints: &interrupts::Interrupts) -> Vec<u32> {
    let mut out: Vec<u32> = host
        .list(&format!("{NET}/{nic}/device/msi_irqs"))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    let virtio = virtio_device(host, nic);
    for row in &ints.rows {
        let Some(n) = row.irq() else { continue };
        let hit = row
            .actions()
            .iter()
            .any(|a| irqname::owned_part(a, nic, virtio.as_deref()).is_some());
        if hit {
            out.push(n);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
