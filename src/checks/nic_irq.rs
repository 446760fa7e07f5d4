//! The EtherCAT NIC's receive path: its IRQs pinned to the RT core, no receive packet steering, no deferral.

use super::irq::read_interrupts;
use super::nic::present;
use super::{Assessment, Check, Ctx, Eval, Section, id, unknown};
use crate::host::Host;
use crate::machine::irq::{PROC_IRQ, irq_affinity, nic_irqs};
use crate::machine::net::NET;
use crate::parse::{cpulist, mask};
use crate::remedy;

pub(crate) const NIC_IRQS_PINNED: Check = Check {
    id: id::NIC_IRQS_PINNED,
    section: Section::Nic,
    title: "NIC IRQs pinned to RT core",
    doc: "The NIC's interrupts should be handled on the RT core, next to the thread that waits for the frames. \
          Passes when every IRQ of the NIC has exactly the RT core as its affinity. The NIC's IRQs are found by \
          its MSI vectors and exact action names (see unrelated_irqs).",
    remedy: Some(remedy::IRQ_AFFINITY),
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

pub(crate) const RPS: Check = Check {
    id: id::RPS,
    section: Section::Nic,
    title: "RPS disabled on NIC",
    doc: "Receive Packet Steering hands received frames to other CPUs through an IPI, adding a hop and jitter. \
          Passes when every rx queue's rps_cpus mask is zero.",
    remedy: Some(remedy::RPS),
    by_hand: None,
    evaluate: rps,
};

fn rps(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let dir = format!("{NET}/{nic}/queues");
    let queues = host.list(&dir).map_err(|_| unknown("no queues dir"))?;
    let mut checked = 0;
    let mut bad = Vec::new();
    for q in queues.iter().filter(|q| q.starts_with("rx-")) {
        let path = format!("{dir}/{q}/rps_cpus");
        let raw = host
            .read_trimmed(&path)
            .map_err(|e| unknown(format!("cannot read {path}: {}", e.reason())))?;
        let cpus = mask::parse(&raw).map_err(|_| unknown(format!("{path}: not a mask")))?;
        checked += 1;
        if !cpus.is_empty() {
            bad.push(q.clone());
        }
    }
    if checked == 0 {
        return Err(unknown("no rx/tx queues found"));
    }
    Ok(if bad.is_empty() {
        Assessment::pass("all zero masks")
    } else {
        Assessment::fail(format!("non-zero masks present ({})", bad.join(",")))
    })
}

pub(crate) const NIC_IRQ_DEFER: Check = Check {
    id: id::NIC_IRQ_DEFER,
    section: Section::Nic,
    title: "NIC IRQ deferral off",
    doc: "napi_defer_hard_irqs and gro_flush_timeout hold received frames back to batch them: good for \
          throughput, a delay for every EtherCAT reply. Passes when both are 0.",
    remedy: Some(remedy::RPS),
    by_hand: None,
    evaluate: nic_irq_defer,
};

fn nic_irq_defer(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let defer = super::read(host, &format!("{NET}/{nic}/napi_defer_hard_irqs"))?;
    let gro = super::read(host, &format!("{NET}/{nic}/gro_flush_timeout"))?;
    let d = format!("napi_defer_hard_irqs={defer}, gro_flush_timeout={gro}");
    Ok(if defer == "0" && gro == "0" {
        Assessment::pass(d)
    } else {
        Assessment::fail(d)
    })
}
