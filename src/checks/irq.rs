//! Interrupts on the RT core: stray device IRQs, the default affinity for new IRQs, and irqbalance.

use super::{Assessment, Check, Ctx, Eval, Section, Unknown, id, unknown};
use crate::host::Host;
use crate::machine::irq::{
    DEFAULT_SMP_AFFINITY, INTERRUPTS, IRQBALANCE_DEFAULTS, irq_affinity, nic_irqs,
};
use crate::machine::{CPU_ISOLATED, CPU_NOHZ_FULL, PROC};
use crate::parse::{cpulist, interrupts, mask};
use crate::remedy;

/// Offenders named in a detail line; the rest are counted.
const SHOW: usize = 3;

/// /proc/interrupts for a check: what it cannot give is the check's unknown.
pub(crate) fn read_interrupts(host: &Host) -> Result<interrupts::Interrupts, Unknown> {
    crate::machine::irq::read_interrupts(host).map_err(|e| unknown(e.to_string()))
}

pub(crate) const UNRELATED_IRQS: Check = Check {
    id: id::UNRELATED_IRQS,
    section: Section::Core,
    title: "No unrelated IRQs on RT core",
    doc: "Every device interrupt handled on the RT core delays the RT thread. Fails when a device IRQ other than \
          the NIC's has fired on the core and is still routed there; Arm per-CPU interrupts (the arch timer) \
          cannot move and are only named. Improvements: an IRQ already moved away \
          (its effective affinity excludes the core) no longer counts, so a fixed machine passes before reboot; \
          and without --nic the original never reported a named IRQ (it filtered with an empty NIC name, which \
          matches everything).",
    remedy: Some(remedy::IRQ_AFFINITY),
    by_hand: Some(
        "these IRQs still reach the RT core although fix's affinity step has nothing left to change: the kernel \
         manages them (per-CPU or managed IRQs) or moves them only at their next interrupt; irqaffinity= on the \
         kernel command line (fix's cmdline step) routes them at boot",
    ),
    evaluate: unrelated_irqs,
};

/// /proc/interrupts has one column per online CPU (show_interrupts walks the online mask): a header that names
/// other CPUs than the online list is not this machine's table at that moment, and its counts prove nothing.
fn header_matches_online(host: &Host, ints: &interrupts::Interrupts) -> Result<(), Unknown> {
    let Ok(online) = crate::machine::online_cpus(host) else {
        return Ok(());
    };
    if ints.cpus != online {
        return Err(unknown(format!(
            "{INTERRUPTS} has columns for CPUs {} but the online CPUs are {}",
            cpulist::format(&ints.cpus),
            cpulist::format(&online)
        )));
    }
    Ok(())
}

fn unrelated_irqs(host: &Host, ctx: &Ctx) -> Eval {
    let ints = read_interrupts(host)?;
    header_matches_online(host, &ints)?;
    let col = ints
        .column(ctx.core)
        .ok_or_else(|| unknown("could not map CPU column"))?;
    let nic = ctx
        .nic
        .as_deref()
        .map(|n| nic_irqs(host, n, &ints))
        .unwrap_or_default();
    let mut offenders = Vec::new();
    let mut per_cpu = Vec::new();
    for row in &ints.rows {
        let Some(n) = row.irq() else { continue };
        // A device row has a count for every CPU column: a missing or garbled one is not a zero.
        let count = row.count(col).ok_or_else(|| {
            unknown(format!(
                "{INTERRUPTS}: IRQ {n} has no count for CPU{}",
                ctx.core
            ))
        })?;
        if count == 0 || nic.binary_search(&n).is_ok() {
            continue;
        }
        // The arch timer and its kin fire on every CPU and cannot move: named, not counted against the core.
        if row.per_cpu() {
            per_cpu.push(format!("{n} {}", row.actions().join(",")));
            continue;
        }
        if irq_affinity(host, n).is_some_and(|a| !a.contains(&ctx.core)) {
            continue;
        }
        let label = row.actions().join(",");
        offenders.push(if label.is_empty() {
            format!("{n} (unlabeled)")
        } else {
            format!("{n} {label}")
        });
    }
    if offenders.is_empty() {
        return Ok(Assessment::pass(if per_cpu.is_empty() {
            "clean".to_string()
        } else {
            format!(
                "clean; per-CPU, cannot move: {}",
                super::first_few(&per_cpu, SHOW)
            )
        }));
    }
    let mut d = super::first_few(&offenders, SHOW);
    if ctx.nic.is_none() {
        d.push_str(" (--nic names the EtherCAT NIC, whose IRQs belong here)");
    }
    Ok(Assessment::fail(d))
}

pub(crate) const DEFAULT_AFFINITY: Check = Check {
    id: id::DEFAULT_AFFINITY,
    section: Section::Core,
    title: "New IRQs avoid RT core",
    doc: "/proc/irq/default_smp_affinity is the affinity every newly requested IRQ starts with (a NIC reset or \
          a hot-plugged device). Passes when it leaves the RT core out; unknown for a mask the kernel never holds \
          (no CPU at all, or not in its format).",
    remedy: Some(remedy::IRQ_AFFINITY),
    by_hand: None,
    evaluate: default_affinity,
};

fn default_affinity(host: &Host, ctx: &Ctx) -> Eval {
    let raw = super::read(host, DEFAULT_SMP_AFFINITY)?;
    let cpus = mask::parse(&raw)
        .map_err(|_| unknown(format!("default_smp_affinity={raw} is not a mask")))?;
    // The kernel refuses a default affinity without an online CPU (EINVAL), so it never reads back empty.
    if cpus.is_empty() {
        return Err(unknown(format!(
            "default_smp_affinity={raw} selects no CPU (the kernel never holds that)"
        )));
    }
    Ok(if cpus.contains(&ctx.core) {
        Assessment::fail(format!("mask {raw} includes CPU{}", ctx.core))
    } else {
        Assessment::pass(format!("mask {raw} (CPUs {})", cpulist::format(&cpus)))
    })
}

pub(crate) const IRQBALANCE: Check = Check {
    id: id::IRQBALANCE,
    section: Section::Core,
    title: "irqbalance keeps off RT core",
    doc: "irqbalance rewrites IRQ affinities every 10 s and undoes manual pinning. Passes when it is not running, \
          or IRQBALANCE_BANNED_CPULIST/IRQBALANCE_BANNED_CPUS in /etc/default/irqbalance bans the core, or \
          neither is set and the core is isolated or nohz_full (irqbalance skips those by itself; an empty \
          banned list removes that).",
    remedy: Some(remedy::IRQBALANCE),
    by_hand: None,
    evaluate: irqbalance,
};

/// A process's name: its comm file, else the name in its stat line (a snapshot may hold one without the other).
/// Ok(None) when the process is gone (exited while being read, or recorded so by the snapshot).
fn process_name(host: &Host, pid: &str) -> Result<Option<String>, ()> {
    let comm = format!("{PROC}/{pid}/comm");
    match host.read_trimmed(&comm) {
        Ok(c) => return Ok(Some(c)),
        Err(e) if !e.is_not_found() => return Err(()),
        Err(_) => {}
    }
    // comm gone from the machine (live, or recorded so) is the process gone.
    if host.lacks(&comm) {
        return Ok(None);
    }
    let stat = format!("{PROC}/{pid}/stat");
    match host.read_bytes(&stat) {
        Ok(b) => crate::parse::task::stat(&b).map(|s| Some(s.comm)).ok_or(()),
        Err(_) => Err(()),
    }
}

/// Whether a process named `name` runs, from /proc/PID/comm or /proc/PID/stat (works on snapshots, which keep
/// them).
pub(crate) fn process_running(host: &Host, name: &str) -> Result<bool, Unknown> {
    let pids = host
        .list(PROC)
        .map_err(|e| unknown(format!("{PROC}: {}", e.reason())))?;
    // A process that exits meanwhile is gone (not found); one whose name cannot be read might be `name`.
    let mut unreadable = 0;
    for p in pids
        .iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        match process_name(host, p) {
            Ok(Some(c)) if c == name => return Ok(true),
            Ok(_) => {}
            Err(()) => unreadable += 1,
        }
    }
    if unreadable > 0 {
        return Err(unknown(format!(
            "{unreadable} processes' names could not be read"
        )));
    }
    Ok(false)
}

fn shell_var<'a>(text: &'a str, var: &str) -> Option<&'a str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.trim().strip_prefix(var)?.strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').trim_matches('\''))
        .next_back()
}

fn irqbalance(host: &Host, ctx: &Ctx) -> Eval {
    if !process_running(host, "irqbalance")? {
        return Ok(Assessment::pass("not running"));
    }
    let core = ctx.core;
    let defaults = host.read(IRQBALANCE_DEFAULTS).unwrap_or_default();
    if let Some(l) = shell_var(&defaults, "IRQBALANCE_BANNED_CPULIST") {
        let banned = cpulist::parse(l).unwrap_or_default();
        return Ok(if banned.contains(&core) {
            Assessment::pass(format!("running, banned CPUs {l}"))
        } else {
            Assessment::fail(format!(
                "running, CPU{core} not in IRQBALANCE_BANNED_CPULIST={l}"
            ))
        });
    }
    if let Some(m) = shell_var(&defaults, "IRQBALANCE_BANNED_CPUS") {
        let banned = mask::parse(m).unwrap_or_default();
        return Ok(if banned.contains(&core) {
            Assessment::pass(format!("running, banned mask {m}"))
        } else {
            Assessment::fail(format!(
                "running, CPU{core} not in IRQBALANCE_BANNED_CPUS={m}"
            ))
        });
    }
    let in_list = |p: &str| {
        host.read_trimmed(p)
            .ok()
            .and_then(|r| cpulist::parse(&r).ok())
            .is_some_and(|v| v.contains(&core))
    };
    Ok(if in_list(CPU_ISOLATED) || in_list(CPU_NOHZ_FULL) {
        Assessment::pass("running, skips isolated CPUs")
    } else {
        Assessment::fail(format!("running and may move IRQs onto CPU{core}"))
    })
}
