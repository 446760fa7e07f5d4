//! The cyclic loop, with cyclictest's discipline: sleep to an absolute deadline on CLOCK_MONOTONIC, read the clock,
//! record, advance the deadline. Inside the loop: two vDSO clock reads, one clock_nanosleep, arithmetic and relaxed
//! atomics — no allocation, lock, print or other system call.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use super::series::Series;
use crate::measure::interference::smi::LocalSmi;

/// When the loop ends, besides the stop flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) period_ns: u64,
    /// Stop once the run spans this many periods, counted and missed together (the original's iterations: cycles).
    pub(crate) iterations: Option<u64>,
    /// Stop at the first wakeup this long after the start.
    pub(crate) duration_ns: Option<u64>,
    /// Stop at the first period outside the Great band (`--until-confident`: it breaks the claim).
    pub(crate) stop_when_late: bool,
    /// The first wakeup (CLOCK_MONOTONIC ns), shared by threads that start together; None: one period from now.
    pub(crate) start_ns: Option<u64>,
}

impl Limits {
    pub(crate) fn of(spec: &crate::measure::spec::RunSpec) -> Limits {
        // --until-confident: as many cycles as the claim needs with none late (confidence.rs).
        let proving = spec
            .until_confident
            .map(|r| crate::measure::result::confidence::cycles_to_prove(r, spec.period_us));
        Limits {
            period_ns: u64::from(spec.period_us) * 1000,
            iterations: spec.iterations.or(proving),
            duration_ns: spec.duration.map(|s| (s * 1e9) as u64),
            stop_when_late: proving.is_some(),
            start_ns: None,
        }
    }
}

/// How the loop went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoopEnd {
    /// From the first wakeup to the last (ns).
    pub(crate) elapsed_ns: u64,
    /// Ended by the stop flag rather than by iterations or duration.
    pub(crate) stopped: bool,
}

pub(crate) use crate::sys::clock::monotonic_ns as now_ns;
use crate::sys::clock::sleep_until_monotonic as sleep_until;

/// One wakeup, as `on_wake` sees it: its index (0 = the unrecorded first), the deadline and the time read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wake {
    pub(crate) index: u64,
    pub(crate) deadline_ns: u64,
    pub(crate) now_ns: u64,
}

/// Runs the cyclic loop on the calling (RT) thread. `on_wake` runs right after each wakeup (the NIC sender sends
/// its frame there); then the period since the previous wakeup and the wakeup latency are recorded, and `smi`
/// (this core's SMI counter, when this thread keeps it) is read when due — outside the timed section, which ends
/// with the clock read. The first wakeup only starts the clock. Periods whose deadline passed before the thread
/// woke are skipped and counted.
pub(crate) fn run<F: FnMut(Wake)>(
    plan: &Limits,
    series: &mut Series,
    stop: &AtomicBool,
    mut smi: Option<&mut LocalSmi>,
    mut on_wake: F,
) -> LoopEnd {
    let period = plan.period_ns.max(1);
    let mut next = plan.start_ns.unwrap_or_else(|| now_ns() + period);
    let mut first = 0u64;
    let mut prev = 0u64;
    let mut wakeups = 0u64;
    // The periods since the first wakeup, recorded or skipped: unlike the series' counts, `r` does not clear it.
    let mut spanned = 0u64;
    let mut stopped = false;
    let fault_at = test_seam_fault_cycle();
    loop {
        if stop.load(Relaxed) {
            stopped = true;
            break;
        }
        sleep_until(next);
        let t = now_ns();
        on_wake(Wake {
            index: wakeups,
            deadline_ns: next,
            now_ns: t,
        });
        if wakeups == 0 {
            first = t;
        } else {
            series.record(t - prev, Some(t.saturating_sub(next)));
            spanned += 1;
        }
        prev = t;
        wakeups += 1;
        next += period;
        if next <= t {
            let skipped = (t - next) / period + 1;
            next += skipped * period;
            // Deadlines beyond the last of `iterations` are not the run's: they were never due.
            let due = plan
                .iterations
                .map_or(skipped, |n| skipped.min(n.saturating_sub(spanned)));
            series.add_missed(due);
            spanned += due;
        }
        if let Some(c) = smi.as_deref_mut() {
            c.between_cycles();
        }
        if fault_at == Some(wakeups) {
            test_seam_fault();
        }
        if plan.iterations.is_some_and(|n| spanned >= n)
            || plan.duration_ns.is_some_and(|d| t - first >= d)
            || (plan.stop_when_late && series.not_great() > 0)
        {
            break;
        }
    }
    // The last reading, still on this core: the run's total is complete when the supervisor's last window closes.
    if let Some(c) = smi {
        c.read();
    }
    LoopEnd {
        elapsed_ns: prev.saturating_sub(first),
        stopped,
    }
}

/// A test seam (`test-seams` only): with RMP_EVAL_TEST_FAULT_CYCLE=N, each loop takes a page fault at its N-th
/// wakeup — a path the memory lock does not cover, for the page-fault test to see (tests/common/run.rs).
#[cfg(feature = "test-seams")]
fn test_seam_fault_cycle() -> Option<u64> {
    std::env::var("RMP_EVAL_TEST_FAULT_CYCLE")
        .ok()
        .and_then(|v| v.parse().ok())
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_fault_cycle() -> Option<u64> {
    None
}

#[cfg(feature = "test-seams")]
fn test_seam_fault() {
    crate::sys::process::take_a_page_fault();
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_fault() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_requested_iterations() {
        // Not RT and not timed: only counts and invariants that hold however late the wakeups are.
        let mut s = Series::new("Cyclic", 200, None);
        let stop = AtomicBool::new(false);
        let mut calls = 0;
        let plan = Limits {
            period_ns: 200_000,
            iterations: Some(50),
            duration_ns: None,
            stop_when_late: false,
            start_ns: None,
        };
        let end = run(&plan, &mut s, &stop, None, |_| calls += 1);
        let sum = s.summary();
        assert_eq!(sum.count + sum.missed, 50);
        assert_eq!(calls, sum.count + 1);
        assert_eq!(sum.buckets.total(), sum.count);
        assert!(!end.stopped);
        // A loaded machine can miss all 50 periods: then no wakeup was recorded and there is no wakeup summary.
        assert_eq!(sum.wakeup.map_or(0, |w| w.count), sum.count);
        // Time runs from the first wakeup to the last: none when the first wakeup came after all 50 deadlines.
        assert_eq!(end.elapsed_ns > 0, sum.count > 0, "{end:?}");
    }

    #[test]
    fn iterations_are_the_periods_spanned_missed_ones_included() {
        // Each wakeup sleeps 50 periods before the next: every later wakeup finds whole periods passed, whatever
        // the machine's speed, so periods are missed; counted and missed still add up to the cycles asked for.
        let mut s = Series::new("Cyclic", 1, None);
        let stop = AtomicBool::new(false);
        let plan = Limits {
            period_ns: 1_000,
            iterations: Some(500),
            duration_ns: None,
            stop_when_late: false,
            start_ns: None,
        };
        run(&plan, &mut s, &stop, None, |_| {
            std::thread::sleep(std::time::Duration::from_micros(50))
        });
        let sum = s.summary();
        assert!(sum.missed > 0, "{sum:?}");
        assert_eq!(sum.count + sum.missed, 500, "{sum:?}");
    }

    #[test]
    fn stop_flag_ends_before_the_first_sleep() {
        let mut s = Series::new("Cyclic", 1000, None);
        let stop = AtomicBool::new(true);
        let plan = Limits {
            period_ns: 1_000_000,
            iterations: None,
            duration_ns: None,
            stop_when_late: false,
            start_ns: None,
        };
        let end = run(&plan, &mut s, &stop, None, |_| {});
        assert!(end.stopped);
        assert_eq!(s.summary().count, 0);
    }

    #[test]
    fn a_late_period_ends_a_run_that_proves_a_rate() {
        // A 1 µs period with bands of 1 µs: an unprivileged, loaded thread is late within a few periods; the
        // limit of a million periods is never what ends it.
        let mut s = Series::new("Cyclic", 1, Some(1));
        let stop = AtomicBool::new(false);
        let plan = Limits {
            period_ns: 1_000,
            iterations: Some(1_000_000),
            duration_ns: None,
            stop_when_late: true,
            start_ns: None,
        };
        let end = run(&plan, &mut s, &stop, None, |_| {
            std::thread::sleep(std::time::Duration::from_micros(50))
        });
        let sum = s.summary();
        assert!(!end.stopped);
        assert_eq!(sum.buckets.not_great(), 1, "{sum:?}");
        assert_eq!(sum.count, sum.buckets.great + 1);
        assert!(sum.count < 1_000_000);
    }
}
