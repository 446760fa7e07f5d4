//! Several cyclic threads (`run --thread`, `--profile`): each its own RT thread running the sampler's loop with its
//! own period, priority and CPU, and its own series (bands scaled to its period), run by the one runner
//! (mod.rs). They share a first deadline, so they start together and then preempt each other as their
//! priorities say — a fast high-priority thread's cost shows in the slower one's series.

use super::profile::{self, JitterRow};
use crate::error::Result;
use crate::host::Host;
use crate::measure::cyclic::{self, Loops, Placed};
use crate::measure::result::RunResult;
use crate::measure::session::Watch;
use crate::measure::spec::{Placement, RunSpec, ThreadSet, ThreadSpec};

/// Fills each thread's priority and CPU from the run's defaults.
pub(crate) fn place(spec: &RunSpec, at: Placement, threads: &[ThreadSpec]) -> Vec<Placed> {
    threads
        .iter()
        .map(|t| Placed {
            name: t.name.clone(),
            period_us: t.period_us,
            priority: t.priority.unwrap_or(spec.send_priority),
            cpu: t.cpu.unwrap_or(at.core),
            // Thread names are 15 bytes at most.
            thread: format!("rmp-eval-{}", t.name).chars().take(15).collect(),
        })
        .collect()
}

/// Measures the threads of `set`; the result carries `label` (run, before, after).
pub(crate) fn run(
    host: &Host,
    spec: &RunSpec,
    set: &ThreadSet,
    at: Placement,
    label: &str,
    watch: &mut dyn Watch,
) -> Result<RunResult> {
    let placed = place(spec, at, &set.threads);
    let finish = |r: RunResult| finish(r, &placed, spec, set);
    let loops = Loops {
        placed: placed.clone(),
        finish: Some(&finish),
    };
    cyclic::run_loops(host, spec, at, (label, watch), loops)
}

/// The run-level period and priority are the first thread's (each series carries its own); under a profile the
/// result names it, and under a LinuxCNC one it reads each thread's max jitter as latency-test shows it.
fn finish(mut r: RunResult, placed: &[Placed], spec: &RunSpec, set: &ThreadSet) -> RunResult {
    r.period_us = placed[0].period_us;
    r.priority = Some(placed[0].priority);
    r.profile = set.profile.map(|p| p.name().to_string());
    if set.profile.is_some_and(|p| p.is_linuxcnc()) {
        let rows = r
            .series
            .iter()
            .zip(placed)
            .filter(|(s, _)| s.count > 0)
            .map(|(s, p)| {
                let ns = (s.max_us * 1000.0).round() as u64;
                JitterRow::new(&p.name, p.period_us, ns, spec.bucket_width_us)
            })
            .collect();
        r.linuxcnc = Some(profile::reading(rows));
    }
    r
}
