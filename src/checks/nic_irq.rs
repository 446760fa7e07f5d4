//! The EtherCAT NIC's receive path: its IRQs pinned to the RT core, which IRQ serves which queue, no receive
//! packet steering, no deferral.

use super::irq::read_interrupts;
use super::nic::present;
use super::{Assessment, Check, Ctx, Eval, Section, id, unknown};
use crate::host::Host;
use crate::machine::irq::{PROC_IRQ, irq_affinity, nic_irqs, virtio_device};
use crate::machine::net::NET;
use crate::parse::irqname::queue_label;
use crate::parse::kint::{self, Range};
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

pub(crate) const NIC_QUEUE_IRQS: Check = Check {
    id: id::NIC_QUEUE_IRQS,
    section: Section::Nic,
    title: "NIC queue IRQs",
    doc: "On a multi-queue NIC (i210, i225: 4 queues) each queue has its own MSI-X IRQ, and the queue a frame uses \
          decides which IRQ, which CPU and which coalescing apply. Names each queue's IRQ as the drivers \
          name them (igb/igc/ixgbe `IF-TxRx-N`, `IF-rx-N`/`IF-tx-N`, e1000e `IF-rx-0`, i40e/ice `i40e-IF-TxRx-N`, \
          ena `IF-Tx-Rx-N`, stmmac `IF:rx-N`, virtio `virtioN-input.N`/`output.N`; r8169 and bcmgenet have one \
          IRQ for every queue) and the CPU it lands on (its effective affinity), for `run --txq/--rxq`. Passes when every queue's IRQ lands on the RT core; \
          otherwise informational (nic_irqs_pinned judges the affinity), naming the queues that do.",
    remedy: None,
    by_hand: None,
    evaluate: nic_queue_irqs,
};

fn nic_queue_irqs(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let ints = read_interrupts(host)?;
    let irqs = nic_irqs(host, nic, &ints);
    let virtio = virtio_device(host, nic);
    let (mut parts, mut on_core, mut queues) = (Vec::new(), Vec::new(), 0);
    for row in &ints.rows {
        let Some(n) = row.irq().filter(|n| irqs.contains(n)) else {
            continue;
        };
        let Some(q) = row
            .actions()
            .iter()
            .find_map(|a| queue_label(a, nic, virtio.as_deref()))
        else {
            continue;
        };
        let cpus = irq_affinity(host, n).unwrap_or_default();
        if cpus == [ctx.core] {
            on_core.push(q.clone());
        }
        queues += 1;
        let on = if cpus.is_empty() {
            "?".to_string()
        } else {
            cpulist::format(&cpus)
        };
        parts.push(format!("{q} IRQ {n} on CPU {on}"));
    }
    if parts.is_empty() {
        return Err(unknown(if irqs.is_empty() {
            "no NIC IRQs seen"
        } else {
            "no per-queue IRQs: one IRQ serves every queue"
        }));
    }
    let all = parts.join(", ");
    Ok(if on_core.len() == queues {
        Assessment::pass(all)
    } else if on_core.is_empty() {
        Assessment::info(format!("{all}; none on CPU{}", ctx.core))
    } else {
        Assessment::info(format!("{all}; on CPU{}: {}", ctx.core, on_core.join(", ")))
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
    // napi_defer_hard_irqs is "%u" (at most S32_MAX), gro_flush_timeout "%lu" nanoseconds.
    let num = |f: &str, r: &Range| -> Result<u64, super::Unknown> {
        let path = format!("{NET}/{nic}/{f}");
        let v = super::read(host, &path)?;
        kint::uint(&v, r).map_err(|e| unknown(format!("{f}: '{}' {e}", super::sanitize(&v, 24))))
    };
    let defer = num("napi_defer_hard_irqs", &Range::new(0..=i32::MAX as i64))?;
    let gro = num("gro_flush_timeout", &Range::U64)?;
    let d = format!("napi_defer_hard_irqs={defer}, gro_flush_timeout={gro}");
    Ok(if defer == 0 && gro == 0 {
        Assessment::pass(d)
    } else {
        Assessment::fail(d)
    })
}
