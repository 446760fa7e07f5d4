//! Planners of the interrupt steps: IRQ affinity (others off the RT core, the NIC's onto it), irqbalance, RPS.

use super::kind::command::CommandChange;
use super::runtime::{Target, file, step, value};
use super::{Change, Step, StepId, ValueKind};
use crate::host::Host;
use crate::machine::CPU_DIR;
use crate::machine::irq::{IRQBALANCE_DEFAULTS, PROC_IRQ, read_interrupts};
use crate::machine::net::NET;
use crate::parse::interrupts::Interrupts;
use crate::parse::{cpulist, mask};

/// The NIC's IRQs as the nic_irqs_pinned check sees them (msi_irqs, handlers named after the NIC or its virtio
/// device).
fn nic_irqs(host: &Host, nic: &str, ints: Option<&Interrupts>) -> Vec<u32> {
    ints.map(|i| crate::machine::irq::nic_irqs(host, nic, i))
        .unwrap_or_default()
}

/// Who an IRQ interrupts, as /proc/interrupts names them ("ahci[0000:00:1f.2]", "mmc1, mmc0"), so that the plan
/// says which device moves, not only its number. An IRQ with no row has no handler: nothing uses it now.
fn devices(ints: Option<&Interrupts>, irq: u32) -> String {
    ints.and_then(|i| i.rows.iter().find(|r| r.irq() == Some(irq)))
        .map(|r| r.actions().join(", "))
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| "no device".into())
}

pub fn irq_affinity(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::IrqAffinity,
        "IRQ affinity: others off the RT core, the NIC's onto it",
        "an interrupt handled on the RT core delays the RT thread; the NIC's own interrupts belong there",
    );
    let hk = t.housekeeping();
    let earlier = super::earlier::Earlier::load(host);
    // The CPUs of `now` off the isolated ones, with those an earlier fix took out for its RT core given back.
    let off = |path: &str, now: Vec<usize>| -> Option<Vec<usize>> {
        let mut want = now.clone();
        let back = earlier.removed_from_value(path);
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
        && let Some(want) = off(&def, cpus)
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
        let want = if nic.contains(&irq) {
            vec![t.core]
        } else if let Some(want) = off(&path, cpus) {
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
            v.label = Some(devices(ints.as_ref(), irq));
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

const BANNED: &str = "IRQBALANCE_BANNED_CPULIST=";

/// The value of a line that sets irqbalance's banned list.
fn banned_setting(line: &str) -> Option<String> {
    line.trim_start()
        .strip_prefix(BANNED)
        .map(|v| v.trim().trim_matches('"').to_string())
}

/// The CPUs the last setting of the banned list in `text` names (as the shell that sources it keeps the last).
fn banned_cpus(text: &str) -> Vec<usize> {
    text.lines()
        .rev()
        .find_map(banned_setting)
        .and_then(|v| cpulist::parse(&v).ok())
        .unwrap_or_default()
}

/// irqbalance (1.8 and later: IRQBALANCE_BANNED_CPULIST; before, that name is ignored) keeps IRQs off the CPUs
/// the running kernel isolates (isolated, nohz_full) by itself while no banned list is set, and an explicit list
/// replaces that. So fix sets a list only while the boot parameters do not cover the isolated CPUs yet (before
/// the reboot, or without the command-line step), and takes its own list out again once they do: then
/// irqbalance follows the boot parameters wherever they move. The list holds the user's own CPUs, the target's
/// isolated CPUs and those the running kernel isolates — less the CPUs earlier fixes put there for another core.
pub(crate) fn irqbalance(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::Irqbalance,
        "irqbalance: keep IRQs off the isolated CPUs",
        "irqbalance moves IRQs back onto the RT core every 10 s",
    );
    let Ok(text) = host.read(IRQBALANCE_DEFAULTS) else {
        s.note(format!(
            "{IRQBALANCE_DEFAULTS} not found: irqbalance is not installed, nothing to do"
        ));
        return s;
    };
    let earlier = super::earlier::Earlier::load(host);
    let ours = earlier.added_to_file(IRQBALANCE_DEFAULTS, banned_cpus);
    let mut users = banned_cpus(&text);
    users.retain(|c| !ours.contains(c));
    let mut kernel = Vec::new();
    for f in ["isolated", "nohz_full"] {
        let v = host.read(&format!("{CPU_DIR}/{f}")).unwrap_or_default();
        kernel.extend(cpulist::parse(&v).unwrap_or_default());
    }
    let covered = t.isolated.iter().all(|c| kernel.contains(c));
    let line = if users.is_empty() && covered {
        s.note(format!(
            "the running kernel isolates {} (isolated, nohz_full): irqbalance keeps IRQs off them by itself while \
             no banned list is set, so none is",
            crate::fix::cpus_named(&t.isolated)
        ));
        None
    } else {
        // CPUs the kernel isolates because an earlier fix asked are not the user's: they leave with that fix.
        let released = earlier.cmdline_isolated();
        kernel.retain(|c| !released.contains(c) || t.isolated.contains(c));
        let mut banned = users;
        banned.extend(&t.isolated);
        banned.extend(kernel);
        Some(format!("{BANNED}{}", cpulist::format(&banned)))
    };
    let new = with_banned(&text, line);
    if new != text {
        file(&mut s, host, IRQBALANCE_DEFAULTS, new);
        let argv = ["systemctl", "try-restart", "irqbalance.service"]
            .map(String::from)
            .to_vec();
        s.changes.push(Change::Command(CommandChange {
            argv,
            again_on_rollback: true,
            reboot: false,
        }));
    }
    s
}

/// `text` with its banned-list settings replaced by `line` (where the first was, else next to Debian's
/// commented-out example, else at the end), or taken out.
fn with_banned(text: &str, line: Option<String>) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut placed = false;
    for l in text.lines() {
        if banned_setting(l).is_none() {
            lines.push(l.to_string());
        } else if !placed {
            lines.extend(line.clone());
            placed = true;
        }
    }
    if let (false, Some(line)) = (placed, line) {
        match lines.iter().position(|l| l.trim() == format!("#{BANNED}")) {
            Some(i) => lines.insert(i + 1, line),
            None => lines.push(line),
        }
    }
    let mut new = lines.join("\n");
    new.push('\n');
    new
}

pub fn rps(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::Rps,
        "NIC receive path: RPS off, no IRQ deferral",
        "receive packet steering hands packets to other CPUs through IPIs; napi_defer_hard_irqs and \
         gro_flush_timeout hold received frames back to batch them",
    );
    let Some(nic) = &t.nic else {
        s.note("no --nic given: nothing to do");
        return s;
    };
    let dir = format!("{NET}/{nic}/queues");
    for q in host
        .list(&dir)
        .unwrap_or_default()
        .iter()
        .filter(|q| q.starts_with("rx-"))
    {
        value(
            &mut s,
            host,
            &format!("{dir}/{q}/rps_cpus"),
            "0",
            ValueKind::HexMask,
            false,
        );
    }
    for knob in ["napi_defer_hard_irqs", "gro_flush_timeout"] {
        let path = format!("{NET}/{nic}/{knob}");
        if host.exists(&path) {
            value(&mut s, host, &path, "0", ValueKind::Exact, false);
        }
    }
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
