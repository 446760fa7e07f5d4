//! The cyclic test (no NIC): one RT thread on the core runs the sampler's loop; the main thread supervises.

use super::result::{RunResult, Verdict};
use super::sampler::{self, Plan};
use super::series::Series;
use super::session::{Ended, Gauges, Session, Watch};
use super::spec::{Placement, RunMode, RunSpec};
use super::{OSRELEASE, rt};
use crate::error::Result;
use crate::host::Host;

/// Measures `spec` on the checked CPUs; the result carries `label` (run, before, after).
pub fn run(
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
        extra: None,
    };
    let plan = Plan::of(spec);
    let stop = session.stop_flag();
    let thread = rt::spawn_rt("rmp-eval-rt", at.core, spec.send_priority, move || {
        let ended = sampler::run(&plan, &mut series, &stop, |_| {});
        (series, ended)
    })?;
    let partial = |s: &Session, cs: &[super::collect::Collector]| {
        let summaries = cs.iter().map(|c| c.summary()).collect();
        result(
            host,
            spec,
            at,
            label,
            summaries,
            width_us,
            s.elapsed_s(),
            &s.so_far(),
        )
    };
    session.supervise(&[at.core], gauges, &mut collectors, watch, partial, || {
        thread.is_finished()
    });
    let (series, ended) = thread.join()?;
    let summaries = session.finish_series(collectors, vec![series]);
    let mut s = session.finish();
    s.interrupted = ended.stopped;
    let r = result(
        host,
        spec,
        at,
        label,
        summaries,
        width_us,
        ended.elapsed_ns as f64 / 1e9,
        &s,
    );
    if let Some(e) = &s.hlog_error {
        watch.note(e);
    }
    Ok(r)
}

#[allow(clippy::too_many_arguments)]
fn result(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    label: &str,
    summaries: Vec<super::result::SeriesSummary>,
    width_us: f64,
    duration_s: f64,
    s: &Ended,
) -> RunResult {
    let empty = summaries.iter().all(|x| x.count == 0);
    RunResult {
        period_us: spec.period_us,
        duration_s,
        mode: RunMode::Cyclic,
        verdict: if empty {
            Verdict::Incomplete
        } else {
            RunResult::judge(&summaries, None)
        },
        series: summaries,
        rtt: None,
        bucket_width_us: width_us,
        started: s.started.clone(),
        label: label.to_string(),
        core: Some(at.core),
        priority: Some(spec.send_priority),
        kernel: host.read_trimmed(OSRELEASE).unwrap_or_default(),
        interrupted: s.interrupted,
        dma_latency_held: s.dma_latency_held,
        error: empty.then(|| "stopped before a whole period was measured".to_string()),
        checkpoint: false,
        reset_at: s.reset_at.clone(),
        resets: s.resets,
        identity: None,
    }
}
