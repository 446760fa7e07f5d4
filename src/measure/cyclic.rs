//! The cyclic test (no NIC): one RT thread on the core runs the sampler's loop; the main thread supervises.

use super::collect::Collector;
use super::interference::Counting;
use super::interference_report::Interference;
use super::result::{Header, Measured, RunResult};
use super::rt;
use super::sampler::{self, Limits};
use super::series::Series;
use super::session::{Gauges, Session, Watch};
use super::spec::{Placement, RunMode, RunSpec};
use crate::error::Result;
use crate::host::Host;
use crate::trace::session::{Scope, Tracing};

/// Measures `spec` on the checked CPUs; the result carries `label` (run, before, after).
pub(crate) fn run(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    label: &str,
    watch: &mut dyn Watch,
) -> Result<RunResult> {
    let mut session = Session::begin(host, spec, watch)?;
    let mut series = Series::new("Cyclic", spec.period_us, spec.bucket_width_us);
    let mut collectors = session.collectors(&mut [&mut series]);
    let width_us = series.bands().width_ns() as f64 / 1000.0;
    let gauges = Gauges {
        period_us: spec.period_us,
        bucket_width_us: spec.bucket_width_us,
        series: vec![("Cyclic".into(), series.live())],
        periods_us: Vec::new(),
        extra: None,
    };
    let plan = Limits::of(spec);
    let stop = session.stop_flag();
    // --trace: tracefs set up before the loop starts; the loop's only addition is one trace_marker write a cycle.
    let (tracing, marker) = match spec.trace {
        true => {
            let (t, m) = Tracing::start(host, Scope::Cpu(at.core), spec.break_us)?;
            (Some(t), Some(m))
        }
        false => (None, None),
    };
    // Before the RT thread: loading the msr driver for the SMI counters must not fall into the measurement.
    let mut counting = Counting::new(watch, host, at.core, spec.counters);
    let thread = rt::spawn_rt("rmp-eval-rt", at.core, spec.send_priority, move || {
        let ended = sampler::run(&plan, &mut series, &stop, |w| {
            if let (Some(m), true) = (&marker, w.index > 0) {
                m.mark(
                    w.index - 1,
                    w.deadline_ns,
                    w.now_ns.saturating_sub(w.deadline_ns),
                );
            }
        });
        (series, ended)
    });
    let thread = match thread {
        Ok(t) => t,
        Err(e) => {
            drop(tracing.map(Tracing::finish));
            return Err(e);
        }
    };
    let header = Header {
        spec,
        at,
        label,
        mode: RunMode::Cyclic,
        width_us,
    };
    let partial = |s: &Session, cs: &[Collector], _: &()| {
        let series = cs.iter().map(Collector::summary).collect();
        header.result(Measured::of_loops(series, s.elapsed_s()), &s.so_far())
    };
    session.supervise(
        &[at.core],
        gauges,
        &mut collectors,
        &mut (),
        &mut counting,
        partial,
        || thread.is_finished(),
    );
    let joined = thread.join();
    let trace = tracing.map(Tracing::finish);
    let (series, ended) = joined?;
    let summaries = session.finish_series(collectors, vec![series]);
    let mut s = session.finish();
    s.interrupted = ended.stopped;
    let mut r = header.result(
        Measured::of_loops(summaries, ended.elapsed_ns as f64 / 1e9),
        &s,
    );
    // Under --root the files are a snapshot that does not move: no counters.
    if let Some(counted) = counting.counters.counted() {
        let traced_ticks = trace.as_ref().and_then(|t| t.ticks_per_s);
        r.interference = Some(settle(host, spec, at, counted, traced_ticks));
    }
    r.trace = trace;
    if let (Some(t), Some(smi)) = (
        &mut r.trace,
        r.interference.as_ref().and_then(|i| i.smi.as_ref()),
    ) {
        super::smi::attribute_trace(t, smi, spec.period_us);
    }
    if let Some(e) = &s.hlog_error {
        watch.note(e);
    }
    Ok(r)
}

/// The counters' run totals with their suspects and the tick truth, read against check's nohz_full verdict.
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
    // Status names as check's JSON spells them.
    let nohz = match (crate::tunable::cmdline::NOHZ_FULL.evaluate)(host, &ctx) {
        Ok(a) => (
            serde_json::to_value(a.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            a.detail,
        ),
        Err(crate::checks::Unknown(why)) => ("unknown".to_string(), why),
    };
    i.settle_suspects(u32::from(spec.send_priority));
    i.settle_firmware();
    i.settle_ticks(
        (nohz.0.as_str(), nohz.1.as_str()),
        host.exists(crate::machine::CPU_NOHZ_FULL),
        &super::measured_kernel(),
        traced_ticks,
    );
    i
}
