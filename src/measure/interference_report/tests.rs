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
    let cap = crate::measure::thin::CAP;
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
    run.settle_ticks(("pass", "CPU 1"), true, "6.1.0", None);
    assert_eq!(run.ticks.local_timer_per_s, 1010.0, "{:?}", run.ticks);
    assert_eq!(run.ticks.ticks_per_s, 10.0, "{:?}", run.ticks);
    assert_eq!(run.windows, n);
}
