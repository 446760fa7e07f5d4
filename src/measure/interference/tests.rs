//! Tests of the counters' windows on samples in the layout of captured files.
use super::cause::Act;
use super::report::{self, SourceKind};
use super::snap::{Snap, TaskSnap, diff};
use crate::checks::CheckId;
use crate::parse::{interrupts, softirqs};
use crate::remedy::StepId;

fn snap_of(interrupts: &str, soft: &str, tasks: &[(u32, &str, u64, u64)]) -> Snap {
    let i = interrupts::parse(interrupts).unwrap();
    let col = i.column(1).unwrap();
    Snap {
        irqs: i
            .rows
            .iter()
            // As snap() reads them: a row without CPU 1's column (ERR, MIS) is left out.
            .filter_map(|r| {
                let what = if r.irq().is_some() {
                    r.actions().join(",")
                } else {
                    r.desc.clone()
                };
                Some((r.name.clone(), (*r.counts.get(col)?, what)))
            })
            .collect(),
        softirqs: softirqs::parse(soft)
            .unwrap()
            .on_cpu(1)
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect(),
        tasks: tasks
            .iter()
            .map(|&(tid, comm, run, sl)| {
                (
                    tid,
                    TaskSnap {
                        pid: tid,
                        comm: comm.into(),
                        cpu: 1,
                        run_ns: run,
                        slices: sl,
                        rt: (comm == "spinner").then_some(90),
                    },
                )
            })
            .collect(),
        rt_preempted: 0,
        wakeups: 0,
        own: Default::default(),
    }
}

/// The RT guest's /proc/interrupts with CPU 1 isolated (captured), and the same a window later, hand-made: CAL,
/// TLB and RES grew on CPU 1.
const RT_GUEST: &str =
    include_str!("../../../tests/fixtures/samples/interrupts-debian12-rt-qemu-isolated.txt");

#[test]
fn the_interrupts_rmp_eval_sent_are_its_own_and_never_a_fix() {
    let later = RT_GUEST
        .replace("RES:        113         35", "RES:        113         38")
        .replace("CAL:          0       1584", "CAL:          0       1644")
        .replace("TLB:          0          0", "TLB:          0          2");
    let mut a = snap_of(RT_GUEST, "       CPU0 CPU1\n TIMER: 5 5\n", &[]);
    let mut b = snap_of(&later, "       CPU0 CPU1\n TIMER: 5 5\n", &[]);
    // Of the 60 function calls, 58 were rmp-eval's own reads of the core's SMI counter from another CPU.
    a.own.insert("CAL".into(), 100);
    b.own.insert("CAL".into(), 158);
    let w = diff(&a, &b, 1.0);
    let of = |k: SourceKind, n: &str| w.sources.iter().find(|s| s.kind == k && s.name == n);
    let own = of(SourceKind::Own, "CAL").expect("rmp-eval's CAL");
    assert_eq!(own.count, 58);
    assert_eq!(own.describe(), "CAL interrupts sent by rmp-eval itself");
    let machine = of(SourceKind::Interrupt, "CAL").expect("the machine's CAL");
    assert_eq!(
        (machine.count, machine.remedy.act),
        (2, Act::Fix(StepId::Cmdline))
    );
    let tlb = of(SourceKind::Interrupt, "TLB").unwrap();
    assert_eq!(tlb.count, 2);
    for s in &w.sources {
        if s.kind == SourceKind::Own || s.name == "TLB" || s.name == "RES" {
            assert!(!matches!(s.remedy.act, Act::Fix(_)), "{s:?}");
        }
    }
    // All of a row rmp-eval's: no machine source left for it.
    b.own.insert("CAL".into(), 100 + 60);
    let w = diff(&a, &b, 1.0);
    assert!(
        !w.sources
            .iter()
            .any(|s| s.kind == SourceKind::Interrupt && s.name == "CAL")
    );
}

#[test]
fn a_window_names_what_grew() {
    // Hand-made in the layout of the development VM's /proc/interrupts and /proc/softirqs (samples/*-firecracker-
    // vm-2cpu.txt, the parsers' captured tests): a virtio-net IRQ and NET_RX grew, TIMER and RES did not.
    let a = snap_of(
        "           CPU0       CPU1\n 38:        100        200  PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\nLOC:      5000       7000   Local timer interrupts\nRES:  1 2 Rescheduling interrupts\n",
        "       CPU0 CPU1\n NET_RX: 10 20\n  TIMER: 5 5\n",
        &[(42, "spinner", 1_000_000, 10), (7, "kworker/1:1", 0, 0)],
    );
    let b = snap_of(
        "           CPU0       CPU1\n 38:        100        260  PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\nLOC:      5000       8250   Local timer interrupts\nRES:  1 2 Rescheduling interrupts\n",
        "       CPU0 CPU1\n NET_RX: 10 80\n  TIMER: 5 5\n",
        &[(42, "spinner", 7_000_000, 30), (7, "kworker/1:1", 0, 0)],
    );
    let w = diff(&a, &b, 1.0);
    assert_eq!(w.local_timer, 1250);
    let irq = w
        .sources
        .iter()
        .find(|s| s.kind == SourceKind::Irq)
        .unwrap();
    assert_eq!(
        (irq.name.as_str(), irq.id, irq.count),
        ("virtio2-input.0", Some(38), 60)
    );
    assert_eq!(irq.remedy.act, Act::Fix(StepId::IrqAffinity));
    let rx = w.sources.iter().find(|s| s.name == "NET_RX").unwrap();
    assert_eq!((rx.count, rx.remedy.act), (60, Act::Fix(StepId::Rps)));
    assert!(
        w.sources
            .iter()
            .all(|s| s.name != "TIMER" && s.name != "RES" && s.name != "kworker/1:1")
    );
    let t = w
        .sources
        .iter()
        .find(|s| s.kind == SourceKind::Thread)
        .unwrap();
    assert_eq!(
        (t.name.as_str(), t.count, t.ran_ms),
        ("spinner", 20, Some(6.0))
    );
    assert_eq!(t.remedy.act, Act::Check(CheckId::RtCoreThreads));
    assert_eq!(t.describe(), "spinner (pid 42, FIFO/RR 90)");
    // The RT thread leads the suspects; the device IRQ and NET_RX follow.
    let sus = report::suspects(&w.sources, 42);
    assert_eq!(sus[0].name, "spinner");
    assert!(sus.iter().any(|s| s.id == Some(38)));
}

/// Every loop on the core is the run's own: a LinuxCNC set's 25 µs base thread's 40,000 wakeups a second are
/// not the kernel's ticks, any more than the servo thread's 1,000.
#[test]
fn every_loop_on_the_core_counts_as_the_runs_own_wakeups() {
    use std::sync::atomic::Ordering::Relaxed;
    let d = tempfile::tempdir().unwrap();
    let host = crate::host::Host::with_root(d.path());
    let servo = crate::measure::cyclic::series::Series::new("servo", 1000, None).live();
    let base = crate::measure::cyclic::series::Series::new("base", 25, None).live();
    servo.count.store(1000, Relaxed);
    base.count.store(39_990, Relaxed);
    base.missed.store(10, Relaxed);
    let s = super::snap::snap(&host, 1, &[servo, base]);
    assert_eq!(s.wakeups, 41_000);
}

/// /proc/interrupts of a 3-CPU machine, in the layout of the captured files (arch rows after the devices).
fn three_cpus(res: [u64; 3], cal: [u64; 3], tlb: [u64; 3]) -> String {
    let row = |name: &str, v: [u64; 3], desc: &str| {
        format!(
            "{name:>4}: {:>10} {:>10} {:>10}   {desc}\n",
            v[0], v[1], v[2]
        )
    };
    format!(
        "            CPU0       CPU1       CPU2\n   1:          9          0          0   IO-APIC   1-edge      i8042\n{}{}{}",
        row("RES", res, "Rescheduling interrupts"),
        row("CAL", cal, "Function call interrupts"),
        row("TLB", tlb, "TLB shootdowns"),
    )
}

/// A thread set's other RT CPU (2, beside the counted core 1) has its IPIs over the run in the result; the
/// housekeeping CPU 0 does not.
#[test]
fn a_thread_sets_other_cpu_has_its_ipis_counted() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("proc")).unwrap();
    let file = d.path().join("proc/interrupts");
    std::fs::write(&file, three_cpus([5, 10, 20], [1, 2, 3], [0, 0, 7])).unwrap();
    let h = crate::host::Host::with_root(d.path());
    let mut c = super::Counters::open(&h, 1, &[1, 2], true);
    c.begin(None);
    std::fs::write(&file, three_cpus([50, 11, 24], [9, 2, 5], [4, 0, 8])).unwrap();
    c.tick(true);
    c.settle_others();
    let others = &c.report.other_cpus;
    assert_eq!(others.len(), 1, "{others:?}");
    assert_eq!(others[0].cpu, 2);
    let want: std::collections::BTreeMap<String, u64> = [("CAL", 2), ("RES", 4), ("TLB", 1)]
        .map(|(k, v)| (k.to_string(), v))
        .into();
    assert_eq!(others[0].ipis, want);
}
