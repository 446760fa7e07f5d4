//! Tests of the receive-path analysis on windows captured from `run --nic --trace` on a veth pair (the sample's
//! header says how).
use super::*;
use crate::measure::interference::cause;

const SAMPLE: &str =
    include_str!("../../../tests/fixtures/samples/trace-firecracker-vm-veth-receive.txt");

/// The kept window of frame `f`.
fn window(f: u64) -> &'static str {
    let at = SAMPLE.find(&format!("# cycle {f} ")).unwrap();
    let end = SAMPLE[at + 1..]
        .find("# cycle ")
        .map_or(SAMPLE.len(), |e| at + 1 + e);
    &SAMPLE[at..end]
}

fn path(e: &Explanation) -> &ReceivePath {
    e.path.as_ref().unwrap()
}

#[test]
fn net_rx_in_the_reflectors_send_and_a_lost_switch() {
    // No RPS: the reflector (pid 1777, CPU 0) hands the reply to wlA1766 and runs NET_RX itself, waking the
    // receiver (pid 1787) onto CPU 1; its sched_switch was lost, so its marker is the first sign it ran.
    let e = explain(window(1963), "wlA1766", &[1, 1], &[]).unwrap();
    assert_eq!((e.cycle, e.cpu), (1963, 1));
    let p = path(&e);
    assert!(p.irq.is_none());
    let rx = p.netif_rx.as_ref().unwrap();
    assert_eq!((rx.cpu, rx.name.as_str()), (0, "rmp-eval"));
    assert!((rx.at_us - 57.531).abs() < 1e-3, "{}", rx.at_us);
    let n = p.net_rx.as_ref().unwrap();
    assert_eq!((n.cpu, n.id, n.ran_us), (0, Some(1777), Some(18.0)));
    assert_eq!(p.received.as_ref().unwrap().cpu, 0);
    let w = p.woken.as_ref().unwrap();
    assert_eq!((w.cpu, w.id, p.woken_cpu), (0, Some(1777), Some(1)));
    let r = p.running.as_ref().unwrap();
    assert_eq!(r.cpu, 1);
    assert_eq!(
        r.at_us,
        e.timeline.last().unwrap().at_us,
        "running = the marker"
    );
    let names: Vec<&str> = p.phases.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        ["wire_and_peer", "kernel_receive", "wakeup", "receiver"]
    );
    assert_eq!(
        p.phases[1].remedy.act,
        cause::Act::None,
        "NET_RX off the RT CPU"
    );
    // The wait for CPU 1 is the largest phase; what held CPU 1 then is named.
    assert!(
        e.verdict.contains("waiting for the receiver's CPU"),
        "{}",
        e.verdict
    );
    assert!(
        e.culprits
            .iter()
            .any(|c| c.cpu == Some(1) && c.kind == Kind::Thread)
    );
}

#[test]
fn a_queued_reply_is_not_given_a_later_frames_path() {
    let e = explain(window(873), "wlA1766", &[1, 1], &[]).unwrap();
    let p = path(&e);
    assert!(p.woken.is_none() && p.received.is_none() && p.net_rx.is_none());
    assert!(e.verdict.contains("already queued"), "{}", e.verdict);
}

#[test]
fn rps_on_the_rt_cpu_is_blamed_on_rps() {
    // RPS of wlA1864 = CPU 1: netif_rx on CPU 0 at 16297.651708, the IPI reaches CPU 1 at .651827, NET_RX there
    // (in the compiler it interrupted) wakes the receiver at .651846.
    let e = explain(window(690), "wlA1864", &[1, 1], &[]).unwrap();
    let p = path(&e);
    assert_eq!(p.netif_rx.as_ref().unwrap().cpu, 0);
    let n = p.net_rx.as_ref().unwrap();
    assert_eq!((n.cpu, n.name.as_str()), (1, "opt cgu.13"));
    let k = &p.phases[1];
    assert_eq!(
        (k.name.as_str(), k.remedy.act),
        (
            "kernel_receive",
            cause::Act::Fix(crate::remedy::StepId::Rps)
        )
    );
    assert!((k.us - 138.0).abs() < 1.0, "{}", k.us);
    assert!(e.culprits.iter().any(|c| c.name == "NET_RX"
        && c.cpu == Some(1)
        && c.remedy.act == cause::Act::Fix(crate::remedy::StepId::Rps)));
    assert!(e.verdict.contains("--only rps"), "{}", e.verdict);
    assert_eq!(p.running.as_ref().unwrap().cpu, 1);
}

#[test]
fn on_preempt_rt_the_nic_irq_is_the_one_whose_thread_ran_net_rx() {
    // PREEMPT_RT guest, virtio-net: the hard handler of IRQ 28 (virtio1-input.0) only wakes its thread, which
    // raises and runs NET_RX on CPU 1 and wakes the receiver. No hard handler raised NET_RX and none is named after
    // ens4, so only the thread's name ties the reply to its IRQ (before: irq null).
    const RT: &str =
        include_str!("../../../tests/fixtures/samples/trace-qemu-rt-guest-virtio-receive.txt");
    let e = explain(RT, "ens4", &[1, 1], &[]).unwrap();
    assert_eq!(e.cycle, 1235);
    let p = path(&e);
    let irq = p.irq.as_ref().unwrap();
    assert_eq!(
        (irq.cpu, irq.id, irq.name.as_str()),
        (1, Some(28), "virtio1-input.0")
    );
    // From the hard entry (32.916947443) to its exit (32.917199573).
    assert_eq!(irq.ran_us, Some(252.13));
    let n = p.net_rx.as_ref().unwrap();
    assert_eq!((n.cpu, n.name.as_str()), (1, "irq/28-virtio1-"));
    // Not the other queue's thread (irq/29, output), which ran NET_RX on CPU 0 in the same window.
    assert_ne!(irq.id, Some(29));
}

#[test]
fn the_nics_irqs_from_sys_judge_the_irq_found() {
    // The same RT guest window, with the IRQ lists /sys and /proc/interrupts would give: the guest's ens4 is
    // virtio1, whose queues are IRQs 28 (input.0) and 29 (output.0).
    const RT: &str =
        include_str!("../../../tests/fixtures/samples/trace-qemu-rt-guest-virtio-receive.txt");
    let e = explain(RT, "ens4", &[1, 1], &[28, 29]).unwrap();
    let p = path(&e);
    assert_eq!(p.irq.as_ref().and_then(|i| i.id), Some(28));
    assert_eq!(p.irq_of_nic, Some(true));
    assert!(
        e.verdict.contains("NIC IRQ 28 (virtio1-input.0) on CPU 1"),
        "{}",
        e.verdict
    );
    // Had /sys named another device's IRQs, the path still names 28 (its thread ran NET_RX) but says it is not
    // one of the NIC's.
    let e = explain(RT, "ens4", &[1, 1], &[40, 41]).unwrap();
    let p = path(&e);
    assert_eq!(p.irq.as_ref().and_then(|i| i.id), Some(28));
    assert_eq!(p.irq_of_nic, Some(false));
    assert!(
        e.verdict
            .contains("IRQ 28 (virtio1-input.0) on CPU 1, not one of ens4's"),
        "{}",
        e.verdict
    );
    // No list (a veth has no IRQ): no judgement.
    let e = explain(RT, "ens4", &[1, 1], &[]).unwrap();
    assert_eq!(path(&e).irq_of_nic, None);
}
