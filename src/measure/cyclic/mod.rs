//! The one runner of cyclic loops: one RT thread per placed loop, each running the sampler's loop with its own
//! period, priority and CPU, and its own series. The plain cyclic run is a set of one ("Cyclic" on the core);
//! `run --thread`/`--profile` sets are placed in threads.rs. The session's setup is done before the first thread
//! starts; the main thread supervises.

pub(crate) mod collect;
pub(crate) mod profile;
pub(crate) mod sampler;
pub mod series;
pub(crate) mod stats;
pub(crate) mod threads;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Result;
use crate::host::Host;
use crate::measure::interference::report::Interference;
use crate::measure::interference::smi::LocalSmi;
use crate::measure::result::{Header, Measurement, RunResult, SeriesSummary, ThreadInfo};
use crate::measure::session::rt::{self, RtThread};
use crate::measure::session::{Gauges, Session, Setup, Watch};
use crate::measure::spec::{Placement, RunMode, RunSpec};
use crate::trace::marker::Marker;
use crate::trace::session::Scope;
use collect::SeriesCollector;
use sampler::{Limits, LoopEnd};
use series::Series;

/// How far ahead of now the shared first deadline of a set lies: time to start every thread before it.
const START_AHEAD_NS: u64 = 50_000_000;

/// A loop as placed: its name, period, priority and CPU, and the thread's name.
#[derive(Debug, Clone)]
pub(crate) struct PlacedLoop {
    pub(crate) name: String,
    pub(crate) period_us: u32,
    pub(crate) priority: u8,
    pub(crate) cpu: usize,
    /// The RT thread's name (15 bytes at most).
    pub(crate) thread: String,
}

/// What the runner measures: the loops, and how a thread set's result is finished (None: the plain cyclic run).
pub(crate) struct Loops<'a> {
    pub(crate) placed: Vec<PlacedLoop>,
    pub(crate) finish: Option<&'a dyn Fn(RunResult) -> RunResult>,
}

/// Measures `spec` on the checked CPUs: the plain cyclic run, one loop; the result carries `label`.
pub(crate) fn run(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    label: &str,
    watch: &mut dyn Watch,
) -> Result<RunResult> {
    let one = PlacedLoop {
        name: "Cyclic".into(),
        period_us: spec.period_us,
        priority: spec.send_priority,
        cpu: at.core,
        thread: "rmp-eval-rt".into(),
    };
    run_loops(
        host,
        spec,
        at,
        (label, watch),
        Loops {
            placed: vec![one],
            finish: None,
        },
    )
}

/// What the thread on the counted core takes besides its loop: the trace marker and the core's SMI counter.
struct OnCore {
    marker: Option<Marker>,
    smi: Option<LocalSmi>,
}

/// The period of the loop on the counted core (a set has one there at most), for the trace's windows.
fn on_core_period_ns(placed: &[PlacedLoop], core: usize) -> u64 {
    placed
        .iter()
        .find(|p| p.cpu == core)
        .map_or(0, |p| u64::from(p.period_us) * 1000)
}

/// Runs `loops` and builds the result (a set's through `loops.finish`).
pub(crate) fn run_loops(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    (label, watch): (&str, &mut dyn Watch),
    loops: Loops,
) -> Result<RunResult> {
    let placed = &loops.placed;
    let mut rt_cpus: Vec<usize> = placed.iter().map(|p| p.cpu).collect();
    rt_cpus.sort_unstable();
    rt_cpus.dedup();
    let setup = Setup {
        rt_cpus,
        core: at.core,
        trace: spec.trace.then(|| Scope::Cpu {
            core: at.core,
            period_ns: on_core_period_ns(placed, at.core),
        }),
        signals: None,
    };
    let mut session = Session::begin(host, spec, setup, watch)?;
    let mut series: Vec<Series> = placed
        .iter()
        .map(|p| Series::new(&p.name, p.period_us, spec.bucket_width_us))
        .collect();
    let infos = thread_infos(placed, &series, loops.finish.is_some());
    let gauges = gauges(spec, placed, &series, loops.finish.is_some());
    let mut refs: Vec<&mut Series> = series.iter_mut().collect();
    let mut collectors = session.collectors(&mut refs);
    let width_us = series[0].bands().width_ns() as f64 / 1000.0;
    session.own_loops(
        placed
            .iter()
            .zip(&series)
            .filter(|(p, _)| p.cpu == at.core)
            .map(|(_, s)| s.live())
            .collect(),
    );
    let stop = session.stop_flag();
    let on_core = placed.iter().position(|p| p.cpu == at.core).map(|i| {
        let smi = session.smi_reader(placed[i].period_us);
        (
            i,
            OnCore {
                marker: session.take_marker(),
                smi,
            },
        )
    });
    let threads = spawn_all(spec, placed, series, &stop, on_core)?;
    let header = Header {
        spec,
        at,
        label,
        mode: RunMode::Cyclic,
        width_us,
    };
    let finish = |r: RunResult| match loops.finish {
        Some(f) => f(r),
        None => r,
    };
    let partial = |s: &Session, cs: &[SeriesCollector], _: &()| {
        let series = with_infos(cs.iter().map(SeriesCollector::summary).collect(), &infos);
        finish(header.result(Measurement::of_loops(series, s.elapsed_s()), &s.so_far()))
    };
    session.supervise(gauges, &mut collectors, &mut (), watch, partial, || {
        threads.iter().all(|t| t.is_finished())
    });
    let joined = join_all(threads);
    let trace = session.finish_trace();
    let (series, ended) = joined?;
    let summaries = with_infos(session.finish_series(collectors, series), &infos);
    let counters = session.take_counters();
    let mut s = session.finish();
    s.interrupted = ended.stopped;
    let mut r = finish(header.result(
        Measurement::of_loops(summaries, ended.elapsed_ns as f64 / 1e9),
        &s,
    ));
    // Under --root the files are a snapshot that does not move: no counters.
    if let Some(counted) = counters.and_then(|c| c.counted()) {
        let traced_ticks = trace.as_ref().and_then(|t| t.ticks_per_s);
        r.interference = Some(settle(host, spec, at, counted, traced_ticks));
    }
    r.trace = trace;
    r.name_ipi_senders();
    if let (Some(t), Some(smi)) = (
        &mut r.trace,
        r.interference.as_ref().and_then(|i| i.smi.as_ref()),
    ) {
        crate::measure::interference::smi::attribute_trace(t, smi, spec.period_us);
    }
    if let Some(e) = &s.hlog_error {
        watch.note(e);
    }
    Ok(r)
}

/// Each thread's period, priority and CPU for a set's series (none for the plain cyclic run).
fn thread_infos(placed: &[PlacedLoop], series: &[Series], set: bool) -> Vec<ThreadInfo> {
    if !set {
        return Vec::new();
    }
    placed
        .iter()
        .zip(series)
        .map(|(p, s)| ThreadInfo {
            period_us: p.period_us,
            bucket_width_us: s.bands().width_ns() as f64 / 1000.0,
            priority: p.priority,
            cpu: p.cpu,
        })
        .collect()
}

fn with_infos(mut v: Vec<SeriesSummary>, infos: &[ThreadInfo]) -> Vec<SeriesSummary> {
    for (s, i) in v.iter_mut().zip(infos) {
        s.thread = Some(*i);
    }
    v
}

/// The live view's counters: every series, with each period for a set.
fn gauges(spec: &RunSpec, placed: &[PlacedLoop], series: &[Series], set: bool) -> Gauges {
    Gauges {
        period_us: placed[0].period_us,
        bucket_width_us: spec.bucket_width_us,
        series: placed
            .iter()
            .zip(series)
            .map(|(p, s)| (p.name.clone(), s.live()))
            .collect(),
        periods_us: match set {
            true => placed.iter().map(|p| p.period_us).collect(),
            false => Vec::new(),
        },
        extra: None,
    }
}

type Joined = RtThread<(Series, LoopEnd)>;

/// Starts one RT thread per placed loop (a set's with one shared first deadline); `on_core` goes to the thread
/// it names. On a failure the ones started are stopped through `stop` and joined.
fn spawn_all(
    spec: &RunSpec,
    placed: &[PlacedLoop],
    series: Vec<Series>,
    stop: &Arc<AtomicBool>,
    mut on_core: Option<(usize, OnCore)>,
) -> Result<Vec<Joined>> {
    let start = (placed.len() > 1).then(|| sampler::now_ns() + START_AHEAD_NS);
    let mut started = Vec::new();
    for (i, (p, mut s)) in placed.iter().zip(series).enumerate() {
        let plan = Limits {
            period_ns: u64::from(p.period_us) * 1000,
            start_ns: start,
            ..Limits::of(spec)
        };
        let flag = Arc::clone(stop);
        let mine = on_core
            .take_if(|(at, _)| *at == i)
            .map(|(_, o)| o)
            .unwrap_or(OnCore {
                marker: None,
                smi: None,
            });
        let first_smi = move || {
            if let Some(smi) = &mine.smi {
                smi.read();
            }
            mine
        };
        match rt::spawn_rt_ready(&p.thread, p.cpu, p.priority, first_smi, move |mut mine| {
            let ended = sampler::run(&plan, &mut s, &flag, mine.smi.as_mut(), |w| {
                if let (Some(m), true) = (mine.marker.as_mut(), w.index > 0) {
                    m.mark(
                        w.index - 1,
                        w.deadline_ns,
                        w.now_ns.saturating_sub(w.deadline_ns),
                    );
                }
            });
            (s, ended)
        }) {
            Ok(t) => started.push(t),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                drop(join_all(started));
                return Err(e);
            }
        }
    }
    Ok(started)
}

/// Every thread's series, and how the loops ended: stopped if any was, over the longest one's time.
fn join_all(threads: Vec<Joined>) -> Result<(Vec<Series>, LoopEnd)> {
    let mut series = Vec::new();
    let mut ended = LoopEnd {
        elapsed_ns: 0,
        stopped: false,
    };
    let mut first_err = None;
    for t in threads {
        match t.join() {
            Ok((s, e)) => {
                series.push(s);
                ended.stopped |= e.stopped;
                ended.elapsed_ns = ended.elapsed_ns.max(e.elapsed_ns);
            }
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok((series, ended)),
    }
}

/// The counters' run totals with their suspects and the tick truth, read against check's nohz_full verdict.
/// Whether `check` passes for the run's core.
fn passes(host: &Host, ctx: &crate::checks::Ctx, check: &crate::checks::Check) -> bool {
    (check.evaluate)(host, ctx).is_ok_and(|a| a.status == crate::checks::Status::Pass)
}

pub(crate) fn settle(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    mut i: Interference,
    traced_ticks: Option<f64>,
) -> Interference {
    let ctx = crate::checks::Ctx {
        core: at.core,
        nic: None,
        pid: None,
        smi_seconds: None,
    };
    let nohz = match (crate::tunable::cmdline::NOHZ_FULL.evaluate)(host, &ctx) {
        Ok(a) => (a.status, a.detail),
        Err(crate::checks::Unknown(why)) => (crate::checks::Status::Unknown, why),
    };
    i.settle_suspects(u32::from(spec.send_priority));
    if nohz.0 == crate::checks::Status::Pass
        && passes(host, &ctx, &crate::tunable::cmdline::CORE_ISOLATED)
    {
        i.settle_isolated();
    }
    i.settle_firmware();
    i.settle_ticks(
        (nohz.0, nohz.1.as_str()),
        host.exists(crate::machine::CPU_NOHZ_FULL),
        &crate::measure::measured_kernel(),
        traced_ticks,
    );
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::interference::cause::Act;
    use crate::measure::interference::report::{CounterWindow, Interferer, SourceKind};
    use crate::remedy::StepId;

    /// A run whose worst window held CAL, RES and a device IRQ on CPU 1, as the counters report them.
    fn counted() -> Interference {
        let w = CounterWindow {
            seconds: 1.0,
            worst_wakeup_us: Some(80.0),
            sources: vec![
                Interferer::new(SourceKind::Interrupt, "CAL".into(), None, 3, 1.0),
                Interferer::new(SourceKind::Interrupt, "RES".into(), None, 2, 1.0),
                Interferer::new(SourceKind::Irq, "virtio1-input.0".into(), Some(28), 1, 1.0),
            ],
            ..CounterWindow::default()
        };
        let mut i = Interference {
            cpu: 1,
            worst_window: Some(w.clone()),
            ..Default::default()
        };
        i.add(&w);
        i
    }

    fn remedy<'a>(
        i: &'a Interference,
        name: &str,
    ) -> Vec<&'a crate::measure::interference::cause::Remedy> {
        let w = i.worst_window.iter().flat_map(|w| &w.sources);
        i.sources
            .iter()
            .chain(w)
            .chain(&i.suspects)
            .filter(|s| s.name == name)
            .map(|s| &s.remedy)
            .collect()
    }

    /// The captured RT guest with CPU 1 isolated by fix (isolcpus, nohz_full on its command line): a CAL there is
    /// never sent to `fix --only cmdline`, which is in force; on the untuned guest it is.
    #[test]
    fn a_cross_cpu_call_on_a_core_already_isolated_is_not_sent_to_fix() {
        let at = Placement {
            core: 1,
            receive_cpu: 1,
        };
        let spec = RunSpec::default();
        let root =
            |t: &str| Host::with_root(format!("{}/tests/fixtures/{t}", env!("CARGO_MANIFEST_DIR")));
        let isolated = settle(
            &root("debian12-rt-qemu-isolated"),
            &spec,
            at,
            counted(),
            None,
        );
        let cal = remedy(&isolated, "CAL");
        assert_eq!(cal.len(), 3, "run, worst window, suspects");
        assert!(
            cal.iter()
                .all(|r| r.act == Act::None && r.why.contains("already isolated"))
        );
        // What the step still removes keeps its remedy.
        assert!(
            remedy(&isolated, "virtio1-input.0")
                .iter()
                .all(|r| r.act == Act::Fix(StepId::IrqAffinity))
        );
        let untuned = settle(
            &root("debian12-rt-qemu-untuned"),
            &spec,
            at,
            counted(),
            None,
        );
        assert!(
            remedy(&untuned, "CAL")
                .iter()
                .all(|r| r.act == Act::Fix(StepId::Cmdline))
        );
    }

    /// A NIC run with its receiver on the core: RES and CAL are the receiver's own wakeups, never a fix step;
    /// irq_work (IWI) is no wakeup and keeps its own remedy.
    #[test]
    fn a_receivers_wakeups_are_the_runs_own() {
        let mut i = counted();
        let iwi = Interferer::new(SourceKind::Interrupt, "IWI".into(), None, 5, 1.0);
        i.sources.push(iwi.clone());
        i.settle_suspects(42);
        i.settle_receiver();
        let kept = i.sources.iter().find(|s| s.name == "IWI").unwrap();
        assert_eq!(kept.remedy, iwi.remedy);
        for name in ["CAL", "RES"] {
            let r = remedy(&i, name);
            assert!(!r.is_empty());
            assert!(
                r.iter()
                    .all(|r| r.act == Act::None && r.why.contains("receiver")),
                "{r:?}"
            );
        }
    }
}
