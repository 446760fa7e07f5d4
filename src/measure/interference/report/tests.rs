//! Tests of a run's merged windows: bounded however long the run, and the tick median.
use super::*;

#[test]
fn a_run_keeps_at_most_max_sources_and_counts_the_rest() {
    // A day-long run meets thousands of short-lived threads: 1,000 windows, each with one new thread.
    let mut run = Interference::default();
    for i in 0..1000u64 {
        let w = Window {
            index: i,
            seconds: 1.0,
            sources: vec![Source::new(
                SourceKind::Thread,
                format!("worker{i}"),
                Some(i),
                1 + i % 3,
                1.0,
            )],
            ..Window::default()
        };
        run.add(&w);
    }
    assert_eq!(run.sources.len(), MAX_SOURCES);
    assert_eq!(run.omitted_sources, 1000 - MAX_SOURCES as u64);
    let kept: u64 = run.sources.iter().map(|s| s.count).sum();
    let all: u64 = (0..1000u64).map(|i| 1 + i % 3).sum();
    assert_eq!(kept + run.omitted_count, all);
    // The most frequent are the ones kept.
    assert!(run.sources.iter().all(|s| s.count == 3));
}

#[test]
fn a_two_day_run_of_windows_keeps_bounded_state_and_the_tick_median() {
    // 2 days of 1 s windows: the per-window timer rates must not grow with the run (they did, 16 B a window).
    // Every 3rd window has a tick storm (1,250 LOC/s); the others 1,010 LOC/s against 1,000 loop wakeups.
    let mut run = Interference::default();
    let n = 2 * 86_400u64;
    for i in 0..n {
        let storm = i % 3 == 2;
        run.add(&Window {
            index: i,
            seconds: 1.0,
            local_timer: if storm { 1250 } else { 1010 },
            loop_wakeups: 1000,
            ..Window::default()
        });
    }
    let cap = crate::measure::interference::thin::CAP;
    assert!(
        run.timer_rates.values().len() <= cap,
        "{}",
        run.timer_rates.values().len()
    );
    assert!(
        run.timer_rates.capacity() <= cap,
        "{}",
        run.timer_rates.capacity()
    );
    run.settle_ticks((crate::checks::Status::Pass, "CPU 1"), true, "6.1.0", None);
    assert_eq!(run.ticks.local_timer_per_s, 1010.0, "{:?}", run.ticks);
    assert_eq!(run.ticks.ticks_per_s, 10.0, "{:?}", run.ticks);
    assert_eq!(run.windows, n);
}

/// A worst window holding SMIs on the RT core: the SMIs are its first suspect and the firmware is blamed; a run
/// whose SMIs fell elsewhere (or were not counted) blames nothing.
#[test]
fn smis_in_the_worst_window_blame_the_firmware() {
    let irq = Source::new(SourceKind::Irq, "eth0".into(), Some(38), 500, 1.0);
    let mut w = Window {
        seconds: 1.0,
        sources: vec![irq.clone()],
        worst_wakeup_us: Some(212.4),
        ..Window::default()
    };
    w.add_smi(&[1, 1]);
    assert_eq!((w.smi, w.smi_housekeeping), (Some(1), Some(1)));
    let mut run = Interference {
        cpu: 1,
        worst_window: Some(w),
        ..Interference::default()
    };
    run.settle_suspects(80);
    run.settle_firmware();
    assert_eq!(run.suspects[0].kind, SourceKind::Smi);
    assert_eq!(run.suspects[0].describe(), "SMIs (firmware)");
    assert!(
        run.firmware
            .as_deref()
            .unwrap()
            .starts_with("late by 212 µs: 1 SMI on CPU 1 in this window — the firmware"),
        "{:?}",
        run.firmware
    );
    // SMIs on the housekeeping CPU only: the RT core was not stopped by them here.
    let mut quiet = Window {
        seconds: 1.0,
        sources: vec![irq],
        worst_wakeup_us: Some(212.4),
        ..Window::default()
    };
    quiet.add_smi(&[0, 4]);
    let mut run = Interference {
        cpu: 1,
        worst_window: Some(quiet),
        ..Interference::default()
    };
    run.settle_suspects(80);
    run.settle_firmware();
    assert_eq!(run.firmware, None);
    assert_ne!(run.suspects[0].kind, SourceKind::Smi);
    // Not counted: no window has a count, nothing is blamed.
    let mut none = Interference {
        worst_window: Some(Window::default()),
        ..Interference::default()
    };
    none.settle_firmware();
    assert_eq!(none.firmware, None);
}

/// Every command the tick verdict suggests names the core it is about: `fix --core N --only cmdline`, as the
/// remedies' one formatter writes it.
#[test]
fn the_tick_verdicts_name_the_core_in_the_command() {
    let mut run = Interference {
        cpu: 3,
        ..Interference::default()
    };
    let want = "rmp-eval fix --core 3 --only cmdline";
    run.settle_ticks(
        (crate::checks::Status::Pass, ""),
        false,
        "6.1.0",
        Some(250.0),
    );
    assert!(run.ticks.verdict.contains(want), "{}", run.ticks.verdict);
    run.settle_ticks(
        (crate::checks::Status::Fail, "no"),
        true,
        "6.1.0",
        Some(250.0),
    );
    assert!(run.ticks.verdict.contains(want), "{}", run.ticks.verdict);
    run.sources
        .push(Source::new(SourceKind::Softirq, "RCU".into(), None, 5, 1.0));
    run.settle_ticks(
        (crate::checks::Status::Pass, ""),
        true,
        "6.1.0",
        Some(250.0),
    );
    assert!(
        run.ticks.verdict.contains(&format!("rcu_nocbs ({want})")),
        "{}",
        run.ticks.verdict
    );
}
