//! The cyclic test (no NIC): one RT thread on the core runs the sampler's loop; the main thread supervises.

use super::result::{RunResult, Verdict};
use super::sampler::{self, Plan};
use super::series::Series;
use super::session::{Gauges, Session, Watch};
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
    let session = Session::begin(host, watch)?;
    let mut series = Series::new("Cyclic", spec.period_us, spec.bucket_width_us);
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
    session.supervise(&[at.core], gauges, watch, || thread.is_finished());
    let (series, ended) = thread.join()?;
    let s = session.finish();
    let summaries = vec![series.summary()];
    let empty = series.count() == 0;
    Ok(RunResult {
        period_us: spec.period_us,
        duration_s: ended.elapsed_ns as f64 / 1e9,
        mode: RunMode::Cyclic,
        verdict: if empty {
            Verdict::Incomplete
        } else {
            RunResult::judge(&summaries, None)
        },
        series: summaries,
        rtt: None,
        bucket_width_us: series.bands().width_ns() as f64 / 1000.0,
        started: s.started,
        label: label.to_string(),
        core: Some(at.core),
        priority: Some(spec.send_priority),
        kernel: host.read_trimmed(OSRELEASE).unwrap_or_default(),
        interrupted: ended.stopped,
        dma_latency_held: s.dma_latency_held,
        error: empty.then(|| "stopped before a whole period was measured".to_string()),
    })
}
