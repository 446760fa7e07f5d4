//! Tests of analyse on captured samples.
use super::*;

const SAMPLE: &str =
    include_str!("../../../tests/fixtures/samples/trace-firecracker-vm-fifo90-spinner.txt");

/// The lines of the captured sample from the marker before cycle `c` through cycle c's marker.
fn window(c: u64) -> String {
    let ls: Vec<&str> = SAMPLE.lines().collect();
    let at = |c: u64| {
        ls.iter()
            .position(|l| l.contains(&format!("rmp-eval c={c} ")))
            .unwrap()
    };
    ls[at(c - 1)..=at(c)].join("\n")
}

#[test]
fn the_fifo90_spinner_is_named() {
    // Captured on the dev VM: cycle 292 was 306 µs late because the SCHED_FIFO 90 python spinner (pid
    // 18866) ran from before the deadline until 299 µs after it.
    let e = explain(&window(292), 1).unwrap();
    assert_eq!(e.cycle, 292);
    assert!((e.late_us - 306.226).abs() < 1e-6);
    let top = &e.culprits[0];
    assert_eq!(
        (top.kind, top.name.as_str(), top.id),
        (Kind::Thread, "python3", Some(18866))
    );
    assert_eq!(top.prio.as_deref(), Some("FIFO/RR 90"));
    assert!(top.ran_us > 250.0 && top.ran_us < 306.3, "{}", top.ran_us);
    assert_eq!(
        top.remedy.act,
        crate::measure::interference::cause::Act::Check(crate::checks::CheckId::RtCoreThreads)
    );
    assert!(
        e.verdict
            .starts_with("late by 306 µs: python3 (pid 18866, FIFO/RR 90) ran"),
        "{}",
        e.verdict
    );
    assert!(e.verdict.contains("rt_core_threads"));
    // Its timer fired ~14 µs after the deadline and woke it, but it ran only when the spinner slept.
    assert!(e.timer_us.unwrap() > 0.0 && e.timer_us.unwrap() < 30.0);
    assert!(e.running_us.unwrap() > 290.0);
    assert!(
        e.timeline
            .iter()
            .any(|s| s.what.contains("→ python3 (18868"))
    );
}

#[test]
fn a_late_timer_is_not_blamed_on_the_task_it_interrupted() {
    // Cycle 2 (58 µs late): rustc (normal priority) had the CPU; the RT thread's timer fired 35 µs after the
    // deadline (the VM's host), the switch followed 13 µs later. rustc did not hold the RT thread back.
    let e = explain(&window(2), 1).unwrap();
    assert!(
        (e.timer_us.unwrap() - 35.075).abs() < 0.01,
        "{:?}",
        e.timer_us
    );
    assert!(
        e.culprits.iter().all(|c| c.id != Some(18868)),
        "own thread is not a culprit"
    );
    let rustc = e.culprits.iter().find(|c| c.name == "rustc").unwrap();
    assert!(rustc.ran_us < 15.0, "{}", rustc.ran_us);
    assert!(
        e.verdict
            .contains("timer interrupt came 35 µs after the deadline"),
        "{}",
        e.verdict
    );
    assert!(explain("garbage", 1).is_none());
    assert!(
        explain(&window(2), 0).is_none(),
        "another CPU's window holds nothing"
    );
}

#[test]
fn a_lost_switch_and_a_late_timer() {
    // Captured by `rmp-eval run --core 1 --trace --break-us 150 --period-us 200` on the development VM while
    // a SCHED_FIFO 90 python spinner ran on CPU 1 and other engineers' tests shared the VM: cycle 7189 (2027 µs
    // late). tokio-rt-worker had the CPU at the deadline; the timer came 1588 µs late; the switch to the
    // spinner (python3 31078) is missing from the trace (its lines show it running) and it ran ~400 µs more.
    let text = include_str!(
        "../../../tests/fixtures/samples/trace-firecracker-vm-late-timer-lost-switch.txt"
    );
    let e = explain(text, 1).unwrap();
    assert_eq!(e.cycle, 7189);
    assert!(
        (e.timer_us.unwrap() - 1588.0).abs() < 1.5,
        "{:?}",
        e.timer_us
    );
    let py = e.culprits.iter().find(|c| c.id == Some(31078)).unwrap();
    assert_eq!(
        py.prio.as_deref(),
        Some("FIFO/RR 90"),
        "priority taken from its wakeup"
    );
    assert!(py.ran_us > 200.0 && py.ran_us < 450.0, "{}", py.ran_us);
    assert!(
        e.verdict
            .contains("timer interrupt came 1588 µs after the deadline"),
        "{}",
        e.verdict
    );
    assert!(
        e.verdict
            .contains("tokio-rt-worker (pid 79, normal) had it"),
        "{}",
        e.verdict
    );
    assert!(
        e.verdict.contains("also python3 (pid 31078, FIFO/RR 90)"),
        "{}",
        e.verdict
    );
}
