//! The EtherCAT NIC's queues: which IRQ serves which queue, and the CPU it lands on.

use super::nic::present;
use super::{Assessment, Check, CheckId, Ctx, Eval, Section, read_interrupts, unknown};
use crate::host::Host;
use crate::machine::irq::{irq_affinity, nic_irqs, virtio_device};
use crate::parse::cpulist;
use crate::parse::irqname::queue_label;

pub(crate) const NIC_QUEUE_IRQS: Check = Check {
    id: CheckId::NicQueueIrqs,
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
