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

/// Where the IRQ an owner held is now (`now_held`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeldNow {
    /// Still this number (or this number has no device now and the owner none elsewhere: the number it is).
    Same,
    /// The owner's IRQ has another number in this boot: its file, and the number.
    Renumbered(String, u32),
    /// The number is another device's and the owner's is not to be found (or not only one): why, for the user.
    Elsewhere(String),
}

/// Whether `path` (/proc/irq/N/…) still belongs to `owner` (its devices, as `IrqRow::actions` names them, joined
/// by ", "). IRQ numbers are given out as drivers probe, in the order the boot loads them: after a reboot the
/// number fix wrote may be another device's and the device's IRQ another number. A table that cannot be read
/// leaves the number as it is.
pub(crate) fn now_held(host: &Host, path: &str, owner: &str) -> HeldNow {
    match read_interrupts(host) {
        Ok(ints) => held_in(&ints, path, owner),
        Err(_) => HeldNow::Same,
    }
}

fn held_in(ints: &interrupts::Interrupts, path: &str, owner: &str) -> HeldNow {
    let Some((n, file)) = path
        .strip_prefix(PROC_IRQ)
        .and_then(|r| r.strip_prefix('/')?.split_once('/'))
        .and_then(|(n, f)| Some((n.parse::<u32>().ok()?, f)))
    else {
        return HeldNow::Same;
    };
    let now = ints
        .rows
        .iter()
        .find(|r| r.irq() == Some(n))
        .map(|r| r.actions().join(", "));
    if now.as_deref() == Some(owner) {
        return HeldNow::Same;
    }
    let theirs: Vec<u32> = ints
        .rows
        .iter()
        .filter(|r| r.actions().join(", ") == owner)
        .filter_map(|r| r.irq())
        .collect();
    match (theirs.as_slice(), now) {
        ([m], _) => HeldNow::Renumbered(format!("{PROC_IRQ}/{m}/{file}"), *m),
        ([], None) => HeldNow::Same,
        ([], Some(other)) => HeldNow::Elsewhere(format!(
            "IRQ {n} is {other}'s now and {owner} has none: left as it is"
        )),
        (many, _) => HeldNow::Elsewhere(format!(
            "IRQ {n} is not {owner}'s now, and {owner} has IRQs {}: left as it is",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/interrupts of the PREEMPT_RT guest of the VM suite with qemu's igb (12-igb-nic, boot 1): the disk's
    /// virtio1 on 24-26, the 9p share's virtio0 on 27-28, then igb's vectors on 29-33.
    const IGB: &str =
        include_str!("../../tests/fixtures/samples/interrupts-debian12-rt-qemu-igb.txt");

    /// The same table as another boot of that guest gave it out when igb probed before virtio0 (CI saw rx-0 on
    /// IRQ 28): each row of the capture moved to its number in that order, nothing else changed.
    fn igb_first() -> String {
        let order = [29, 30, 31, 32, 33, 27, 28];
        let to = |n: u32| {
            order
                .iter()
                .position(|&o| o == n)
                .map_or(n, |i| 27 + i as u32)
        };
        let mut rows: Vec<(u32, String)> = Vec::new();
        let mut out = String::new();
        for line in IGB.lines() {
            let head = line.trim_start().split(':').next().unwrap_or("");
            match head.parse::<u32>() {
                Ok(n) => rows.push((
                    to(n),
                    line.replacen(&format!("{n:>3}:"), &format!("{:>3}:", to(n)), 1),
                )),
                Err(_) if rows.is_empty() => out.push_str(&format!("{line}\n")),
                Err(_) => {
                    rows.sort_by_key(|r| r.0);
                    for (_, l) in rows.drain(..) {
                        out.push_str(&format!("{l}\n"));
                    }
                    out.push_str(&format!("{line}\n"));
                }
            }
        }
        out
    }

    fn held(table: &str, irq: u32, owner: &str) -> HeldNow {
        let ints = interrupts::parse(table).unwrap();
        held_in(&ints, &format!("/proc/irq/{irq}/smp_affinity_list"), owner)
    }

    #[test]
    fn an_irq_is_found_by_its_device_when_the_boot_gave_out_the_numbers_in_another_order() {
        assert_eq!(held(IGB, 30, "ens3-rx-0"), HeldNow::Same);
        assert_eq!(held(IGB, 28, "virtio0-requests"), HeldNow::Same);
        let other = igb_first();
        assert!(
            other.contains(" 28:") && other.contains("ens3-rx-0"),
            "{other}"
        );
        assert_eq!(
            held(&other, 30, "ens3-rx-0"),
            HeldNow::Renumbered("/proc/irq/28/smp_affinity_list".into(), 28)
        );
        assert_eq!(
            held(&other, 28, "virtio0-requests"),
            HeldNow::Renumbered("/proc/irq/33/smp_affinity_list".into(), 33)
        );
        // The device is gone and its number is another's: not that other device's to change.
        match held(&other, 30, "ens4-rx-0") {
            HeldNow::Elsewhere(why) => assert!(
                why.contains("ens3-tx-0") && why.contains("ens4-rx-0"),
                "{why}"
            ),
            h => panic!("{h:?}"),
        }
        // No device on the number now, and the owner nowhere (a NIC closed: its queue IRQs freed): the number.
        assert_eq!(held(IGB, 40, "ens4-rx-0"), HeldNow::Same);
        // i8042 has two IRQs (1 and 12): which one was fix's cannot be told once its number is another's.
        assert!(matches!(held(&other, 30, "i8042"), HeldNow::Elsewhere(_)));
        assert_eq!(held(IGB, 12, "i8042"), HeldNow::Same);
    }
}
