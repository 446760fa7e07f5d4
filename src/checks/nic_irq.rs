//! The EtherCAT NIC's queues: which IRQ serves which queue, and the CPU it lands on.

use super::nic::present;
use super::{Assessment, Check, CheckId, Ctx, Eval, Section, read_interrupts, unknown};
use crate::host::Host;
use crate::machine::irq::{irq_affinity, nic_irqs};
use crate::parse::cpulist;

pub(crate) const NIC_QUEUE_IRQS: Check = Check {
    id: CheckId::NicQueueIrqs,
    section: Section::Nic,
    title: "NIC queue IRQs",
    doc: "On a multi-queue NIC (i210, i225: 4 queues) each queue has its own MSI-X IRQ, and the queue a frame uses \
          decides which IRQ, which CPU and which coalescing apply. Names each queue's IRQ (igb/igc \
          `IF-TxRx-N`, `IF-rx-N`/`IF-tx-N`, virtio `virtioN-input.N`/`output.N`) and the CPU it lands on (its \
          effective affinity), for `run --txq/--rxq`. Passes when every queue's IRQ lands on the RT core; \
          otherwise informational (nic_irqs_pinned judges the affinity), naming the queues that do.",
    remedy: None,
    by_hand: None,
    evaluate: nic_queue_irqs,
};

fn nic_queue_irqs(host: &Host, ctx: &Ctx) -> Eval {
    let nic = present(host, ctx)?;
    let ints = read_interrupts(host)?;
    let irqs = nic_irqs(host, nic, &ints);
    let (mut parts, mut on_core, mut queues) = (Vec::new(), Vec::new(), 0);
    for row in &ints.rows {
        let Some(n) = row.irq().filter(|n| irqs.contains(n)) else {
            continue;
        };
        let Some(q) = row.actions().iter().find_map(|a| queue_label(a, nic)) else {
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

/// The queue an IRQ action names: "enp2s0-TxRx-0" → "TxRx-0", "eth0-rx-1" → "rx-1", "virtio1-input.0" →
/// "input.0"; None for the NIC's other vectors ("enp2s0" alone: link and misc causes; "virtio1-config").
pub(crate) fn queue_label(action: &str, nic: &str) -> Option<String> {
    let rest = match action.strip_prefix(nic).and_then(|r| r.strip_prefix('-')) {
        Some(r) => r,
        None => {
            let r = action.strip_prefix("virtio")?;
            let (num, q) = r.split_once('-')?;
            if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            q
        }
    };
    let digit_end = rest.bytes().last().is_some_and(|b| b.is_ascii_digit());
    let queueish = ["TxRx-", "rx-", "tx-", "input.", "output.", "fp-"]
        .iter()
        .any(|p| rest.starts_with(p));
    (digit_end && queueish).then(|| rest.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_vectors_are_told_from_the_nics_other_ones() {
        // Action names from tests/fixtures/seed-i3-13100te/proc/interrupts (igc) and the RT guest's
        // (debian12-rt-qemu-untuned: virtio).
        assert_eq!(
            queue_label("enp2s0-TxRx-3", "enp2s0").as_deref(),
            Some("TxRx-3")
        );
        assert_eq!(queue_label("enp2s0", "enp2s0"), None);
        assert_eq!(
            queue_label("virtio2-input.0", "enp0s2").as_deref(),
            Some("input.0")
        );
        assert_eq!(queue_label("virtio2-config", "enp0s2"), None);
        assert_eq!(queue_label("virtio1-requests", "enp0s2"), None);
        assert_eq!(queue_label("eth1-rx-0", "eth1").as_deref(), Some("rx-0"));
        assert_eq!(queue_label("eth10-rx-0", "eth1"), None);
    }
}
