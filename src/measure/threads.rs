//! Several cyclic threads (`run --thread`): each its own RT thread running the sampler's loop with its own period,
//! priority and CPU, and its own series (bands scaled to its period). They share a first deadline, so they start
//! together and then preempt each other as their priorities say — a fast high-priority thread's cost shows in
//! the slower one's series. The main thread supervises them as it does the one cyclic thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::collect::Collector;
use super::cyclic::settle;
use super::interference::Counting;
use super::profile::{self, JitterRow};
use super::result::{Header, Measured, RunResult, SeriesSummary, ThreadInfo};
use super::rt::{self, RtThread};
use super::sampler::{self, Ended, Limits};
use super::series::Series;
use super::session::{Gauges, Session, Watch};
use super::spec::{Placement, RunMode, RunSpec, ThreadSet, ThreadSpec};
use crate::error::Result;
use crate::host::Host;

/// How far ahead of now the shared first deadline lies: time to start every thread before it.
const START_AHEAD_NS: u64 = 50_000_000;

/// A thread as placed: its spec with the priority and CPU filled in.
#[derive(Debug, Clone)]
pub(crate) struct Placed {
    pub(crate) name: String,
    pub(crate) period_us: u32,
    pub(crate) priority: u8,
    pub(crate) cpu: usize,
}

/// Fills each thread's priority and CPU from the run's defaults.
pub(crate) fn place(spec: &RunSpec, at: Placement, threads: &[ThreadSpec]) -> Vec<Placed> {
    threads
        .iter()
        .map(|t| Placed {
            name: t.name.clone(),
            period_us: t.period_us,
            priority: t.priority.unwrap_or(spec.send_priority),
            cpu: t.cpu.unwrap_or(at.core),
        })
        .collect()
}

type Joined = RtThread<(Series, Ended)>;

/// Starts one RT thread per placed thread, all with the same first deadline; on a failure the ones started are
/// stopped through `stop` and joined.
fn spawn_all(
    spec: &RunSpec,
    placed: &[Placed],
    series: Vec<Series>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Joined>> {
    let start = sampler::now_ns() + START_AHEAD_NS;
    let mut started = Vec::new();
    for (p, mut s) in placed.iter().zip(series) {
        let plan = Limits {
            period_ns: u64::from(p.period_us) * 1000,
            start_ns: Some(start),
            ..Limits::of(&RunSpec {
                period_us: p.period_us,
                ..spec.clone()
            })
        };
        let flag = Arc::clone(stop);
        let name = format!("rmp-eval-{}", p.name);
        // Thread names are 15 bytes at most.
        let name: String = name.chars().take(15).collect();
        match rt::spawn_rt(&name, p.cpu, p.priority, move || {
            let ended = sampler::run(&plan, &mut s, &flag, |_| {});
            (s, ended)
        }) {
            Ok(t) => started.push(t),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                for t in started {
                    drop(t.join());
                }
                return Err(e);
            }
        }
    }
    Ok(started)
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
    let mut session = Session::begin(host, spec, watch)?;
    let mut series: Vec<Series> = placed
        .iter()
        .map(|p| Series::new(&p.name, p.period_us, spec.bucket_width_us))
        .collect();
    let infos: Vec<ThreadInfo> = placed
        .iter()
        .zip(&series)
        .map(|(p, s)| ThreadInfo {
            period_us: p.period_us,
            bucket_width_us: s.bands().width_ns() as f64 / 1000.0,
            priority: p.priority,
            cpu: p.cpu,
        })
        .collect();
    let mut refs: Vec<&mut Series> = series.iter_mut().collect();
    let mut collectors = session.collectors(&mut refs);
    let gauges = Gauges {
        period_us: placed[0].period_us,
        bucket_width_us: spec.bucket_width_us,
        series: placed
            .iter()
            .zip(&series)
            .map(|(p, s)| (p.name.clone(), s.live()))
            .collect(),
        periods_us: placed.iter().map(|p| p.period_us).collect(),
        extra: None,
    };
    let stop = session.stop_flag();
    let threads = spawn_all(spec, &placed, series, &stop)?;
    let mut cpus: Vec<usize> = placed.iter().map(|p| p.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut counting = Counting::new(watch, host, at.core, spec.counters);
    let header = Header {
        spec,
        at,
        label,
        mode: RunMode::Cyclic,
        width_us: infos[0].bucket_width_us,
    };
    let with_threads = |mut v: Vec<SeriesSummary>| {
        for (s, i) in v.iter_mut().zip(&infos) {
            s.thread = Some(*i);
        }
        v
    };
    let partial = |s: &Session, cs: &[Collector], _: &()| {
        let series = with_threads(cs.iter().map(Collector::summary).collect());
        finish(
            header.result(Measured::of_loops(series, s.elapsed_s()), &s.so_far()),
            &placed,
            spec,
            set,
        )
    };
    session.supervise(
        &cpus,
        gauges,
        &mut collectors,
        &mut (),
        &mut counting,
        partial,
        || threads.iter().all(|t| t.is_finished()),
    );
    let mut ended_all = Vec::new();
    let mut first_err = None;
    for t in threads {
        match t.join() {
            Ok(x) => ended_all.push(x),
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let stopped = ended_all.iter().any(|(_, e)| e.stopped);
    let elapsed = ended_all
        .iter()
        .map(|(_, e)| e.elapsed_ns)
        .max()
        .unwrap_or(0);
    let summaries = with_threads(
        session.finish_series(collectors, ended_all.into_iter().map(|(s, _)| s).collect()),
    );
    let mut s = session.finish();
    s.interrupted = stopped;
    let mut r = finish(
        header.result(Measured::of_loops(summaries, elapsed as f64 / 1e9), &s),
        &placed,
        spec,
        set,
    );
    if let Some(counted) = counting.counters.counted() {
        r.interference = Some(settle(host, spec, at, counted, None));
    }
    if let Some(e) = &s.hlog_error {
        watch.note(e);
    }
    Ok(r)
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
