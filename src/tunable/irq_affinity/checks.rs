//! The IRQ affinity step's checks: stray device IRQs on the RT core, the default affinity for new IRQs, and the
//! NIC's IRQs pinned to the core.

use crate::checks::nic::present;
use crate::checks::{
    Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, read_interrupts, unknown,
};
use crate::fix::StepId;
use crate::host::Host;
use crate::machine::irq::{DEFAULT_SMP_AFFINITY, INTERRUPTS, PROC_IRQ, irq_affinity, nic_irqs};
use crate::parse::{cpulist, interrupts, mask};

/// Offenders named in a detail line; the rest are counted.
const SHOW: usize = 3;

pub(crate) const UNRELATED_IRQS: Check = Check {
    id: CheckId::UnrelatedIrqs,
    section: Section::Core,
    title: "No unrelated IRQs on RT core",
    doc: "Every device interrupt handled on the RT core delays the RT thread. Fails when a device IRQ other than \
          the NIC's has fired on the core and is still routed there; Arm per-CPU interrupts (the arch timer) \
          cannot move and are only named. Improvements: an IRQ already moved away \
          (its effective affinity excludes the core) no longer counts, so a fixed machine passes before reboot; \
          and without --nic the original never reported a named IRQ (it filtered with an empty NIC name, which \
          matches everything).",
    remedy: Some(StepId::IrqAffinity),
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
                crate::checks::first_few(&per_cpu, SHOW)
            )
        }));
    }
    let mut d = crate::checks::first_few(&offenders, SHOW);
    if ctx.nic.is_none() {
        d.push_str(" (--nic names the EtherCAT NIC, whose IRQs belong here)");
    }
    Ok(Assessment::fail(d))
}

pub(crate) const DEFAULT_AFFINITY: Check = Check {
    id: CheckId::DefaultAffinity,
    section: Section::Core,
    title: "New IRQs avoid RT core",
    doc: "/proc/irq/default_smp_affinity is the affinity every newly requested IRQ starts with (a NIC reset or \
          a hot-plugged device). Passes when it leaves the RT core out; unknown for a mask the kernel never holds \
          (no CPU at all, or not in its format).",
    remedy: Some(StepId::IrqAffinity),
    by_hand: None,
    evaluate: default_affinity,
};

fn default_affinity(host: &Host, ctx: &Ctx) -> Eval {
    let raw = crate::checks::read(host, DEFAULT_SMP_AFFINITY)?;
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

pub(crate) const NIC_IRQS_PINNED: Check = Check {
    id: CheckId::NicIrqsPinned,
    section: Section::Nic,
    title: "NIC IRQs pinned to RT core",
    doc: "The NIC's interrupts should be handled on the RT core, next to the thread that waits for the frames. \
          Passes when every IRQ of the NIC has exactly the RT core as its affinity. The NIC's IRQs are found by \
          its MSI vectors and exact action names (see unrelated_irqs).",
    remedy: Some(StepId::IrqAffinity),
    by_hand: None,
    evaluate: nic_irqs_pinned,
};

fn nic_irqs_pinned(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let ints = read_interrupts(host)?;
    let irqs = nic_irqs(host, nic, &ints);
    if irqs.is_empty() {
        return Err(unknown("no NIC IRQs seen"));
    }
    let mut bad = Vec::new();
    for n in &irqs {
        let path = format!("{}/{n}/smp_affinity_list", PROC_IRQ);
        let raw = host.read_trimmed(&path).map_err(|e| {
            unknown(format!(
                "cannot read smp_affinity_list for IRQ {n}: {}",
                e.reason()
            ))
        })?;
        let set = cpulist::parse(&raw).unwrap_or_default();
        let now = irq_affinity(host, *n).unwrap_or_default();
        if set != [ctx.core] || (!now.is_empty() && now != [ctx.core]) {
            bad.push(n.to_string());
        }
    }
    Ok(if bad.is_empty() {
        Assessment::pass(format!("all pinned to CPU{}", ctx.core))
    } else {
        Assessment::fail(format!("not pinned: {}", bad.join(",")))
    })
}
