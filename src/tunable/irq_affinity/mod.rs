//! IRQ affinity: the checks that no unrelated IRQ reaches the RT core, that new IRQs avoid it and that the NIC's
//! are pinned to it (`checks.rs`), and the step that moves them: others off the RT core, the NIC's onto it.
//! Affinities are kernel values, lost at reboot, and a NIC's IRQs are requested again when its driver probes or
//! the interface opens: apply-saved re-applies the step at boot, and each interface's share when it appears.

mod checks;

pub(crate) use checks::{DEFAULT_AFFINITY, NIC_IRQS_PINNED, UNRELATED_IRQS};

use super::{Persistence, Tunable};
use crate::fix::runtime::{Target, step, value};
use crate::fix::{Change, Step, StepId, ValueKind};
use crate::host::Host;
use crate::machine::irq::{PROC_IRQ, read_interrupts};
use crate::parse::interrupts::Interrupts;
use crate::parse::{cpulist, mask};

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::IrqAffinity,
    persistence: Persistence::Nic {
        each_nic: Some(nic_irq_affinity),
    },
    plan: |host, t, _| Ok(irq_affinity(host, t)),
    risks,
};

fn risks(_: &Step, t: &Target) -> Vec<String> {
    crate::fix::risk::alone(t, "every other device's interrupt")
        .into_iter()
        .collect()
}

/// The NIC's IRQs as the nic_irqs_pinned check sees them (msi_irqs, handlers named after the NIC or its virtio
/// device).
fn nic_irqs(host: &Host, nic: &str, ints: Option<&Interrupts>) -> Vec<u32> {
    ints.map(|i| crate::machine::irq::nic_irqs(host, nic, i))
        .unwrap_or_default()
}

/// Who an IRQ interrupts, as /proc/interrupts names them ("ahci[0000:00:1f.2]", "mmc1, mmc0"), so that the plan
/// says which device moves, not only its number, and rollback finds the device's IRQ after a reboot
/// (`irq::now_held`). None: no row, no handler, nothing uses it now.
fn devices(ints: Option<&Interrupts>, irq: u32) -> Option<String> {
    ints.and_then(|i| i.rows.iter().find(|r| r.irq() == Some(irq)))
        .map(|r| r.actions().join(", "))
        .filter(|a| !a.is_empty())
}

pub fn irq_affinity(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::IrqAffinity,
        "IRQ affinity: others off the RT core, the NIC's onto it",
        "an interrupt handled on the RT core delays the RT thread; the NIC's own interrupts belong there",
    );
    let hk = t.housekeeping();
    let earlier = crate::fix::earlier::Earlier::load(host);
    // The CPUs of `now` off the isolated ones, with those an earlier fix took out for its RT core given back.
    let off = |path: &str, owner: Option<&str>, now: Vec<usize>| -> Option<Vec<usize>> {
        let mut want = now.clone();
        let back = earlier.removed_from_value(path, owner);
        want.extend(back.into_iter().filter(|c| t.online.contains(c)));
        want.retain(|c| !t.isolated.contains(c));
        want.sort_unstable();
        want.dedup();
        if want.is_empty() {
            want = hk.clone();
        }
        (want != now).then_some(want)
    };
    // The default first: an IRQ a driver allocates while the values below are written starts on the new default,
    // and one allocated before it is in the list a second planning reads (apply-saved plans twice).
    let def = format!("{PROC_IRQ}/default_smp_affinity");
    if let Ok(now) = host.read(&def)
        && let Ok(cpus) = mask::parse(&now)
        && let Some(want) = off(&def, None, cpus)
    {
        value(
            &mut s,
            host,
            &def,
            &mask::format(&want, t.nbits()),
            ValueKind::HexMask,
            false,
        );
    }
    let ints = read_interrupts(host).ok();
    let nic = t
        .nic
        .as_deref()
        .map(|n| nic_irqs(host, n, ints.as_ref()))
        .unwrap_or_default();
    let mut irqs: Vec<u32> = host
        .list(PROC_IRQ)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    irqs.sort_unstable();
    for irq in irqs {
        let path = format!("{PROC_IRQ}/{irq}/smp_affinity_list");
        let Ok(now) = host.read(&path) else { continue };
        let Ok(cpus) = cpulist::parse(&now) else {
            continue;
        };
        let owner = devices(ints.as_ref(), irq);
        let want = if nic.contains(&irq) {
            vec![t.core]
        } else if let Some(want) = off(&path, owner.as_deref(), cpus) {
            want
        } else {
            continue;
        };
        value(
            &mut s,
            host,
            &path,
            &cpulist::format(&want),
            ValueKind::CpuList,
            true,
        );
        if let Some(Change::Value(v)) = s.changes.last_mut()
            && v.path == path
        {
            v.owner = owner;
            v.label = Some(v.owner.clone().unwrap_or_else(|| "no device".into()));
        }
    }
    if t.nic.is_some() && nic.is_empty() {
        s.note("no IRQ of the NIC found (msi_irqs or a handler named after it)");
    }
    s
}

/// One interface's part of `irq_affinity`: its own IRQs and nothing else — onto the RT core for the saved NIC,
/// off it for any other. What `apply-saved --nic IF` applies when the interface appears or comes up: drivers
/// request queue IRQs when an interface opens (igb, e1000e) or set their affinity at probe (virtio-net), after the
/// boot unit ran. Other IRQs are the boot unit's: re-applying them at a link's bring-up would undo, unasked,
/// whatever was moved by hand since.
pub(crate) fn nic_irq_affinity(host: &Host, t: &Target, nic: &str) -> Step {
    let mut s = irq_affinity(host, t);
    let ints = read_interrupts(host).ok();
    let mine: Vec<String> = nic_irqs(host, nic, ints.as_ref())
        .iter()
        .map(|irq| format!("{PROC_IRQ}/{irq}/smp_affinity_list"))
        .collect();
    s.changes
        .retain(|c| matches!(c, Change::Value(v) if mine.contains(&v.path)));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nics_part_of_irq_affinity_moves_its_irqs_only() {
        // The seed's i3-13100TE with an i210-class NIC (tests/fixtures/README.md): enp2s0 and its TxRx queues are
        // IRQs 130-134 (on CPU 3 there), the rest on CPUs 0-1. With the RT core 1, both kinds move.
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/seed-i3-13100te"
        );
        let host = Host::with_root(root);
        let t = Target::new(&host, 1, Some("enp2s0".into()), vec![0, 1, 2, 3]);
        let paths = |s: &Step| -> Vec<String> {
            s.changes
                .iter()
                .filter_map(|c| match c {
                    Change::Value(v) => Some(v.path.clone()),
                    _ => None,
                })
                .collect()
        };
        let all = paths(&irq_affinity(&host, &t));
        let nic = paths(&nic_irq_affinity(&host, &t, "enp2s0"));
        let want: Vec<String> = (130..=134)
            .map(|n| format!("/proc/irq/{n}/smp_affinity_list"))
            .collect();
        assert_eq!(nic, want);
        assert!(all.len() > nic.len(), "{all:?}");
        // The default is written before any IRQ's: a driver probing meanwhile gets the new default.
        assert_eq!(all[0], "/proc/irq/default_smp_affinity");
        // Another interface: only its own IRQs would move, and lo has none.
        assert_eq!(
            paths(&nic_irq_affinity(&host, &t, "lo")),
            Vec::<String>::new()
        );
    }
}
