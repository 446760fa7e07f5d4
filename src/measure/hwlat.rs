//! `run --hwlat`: the kernel's hardware latency detector (the hwlat tracer) on the RT core and one housekeeping CPU
//! for the run's length instead of the cyclic loop. A kernel thread spins with interrupts off and records every gap
//! in its time readings: what stops a CPU beneath Linux (SMIs, firmware) and no tuning of Linux removes. The main
//! thread reads the gaps from trace_pipe every READ_EVERY, and the SMI counts that a thread pinned to each CPU
//! counted reads there as often (a local read: the main thread's read of another CPU's register would be an IPI to
//! the CPU measured); the session's guards give the stop flag, and tracefs is put back as found on every exit (a
//! kill -9 by the next run, from its record).

mod gaps;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(crate) use gaps::HwlatReport;
use gaps::{Gaps, SmiTimeline};

use super::cyclic::series::Bands;
use super::interference::smi::{MsrDriver, OwnCpuReaders};
use super::result::{Header, Measurement, RunResult, Verdict};
use super::session::{Ended, Session, Setup, Watch};
use super::spec::{Placement, RunMode, RunSpec};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::trace::tracefs::{HwlatSettings, HwlatTracer, drain};

/// The kernel's own defaults: half of every second spinning, one CPU at a time in round-robin.
const WIDTH_US: u64 = 500_000;
const WINDOW_US: u64 = 1_000_000;
/// tracing_thresh's kernel default; lower when the Great band is narrower, so that no gap beyond it goes unseen.
const THRESHOLD_US: u64 = 10;
/// How often the pipe and the SMI counters are read.
const READ_EVERY: Duration = Duration::from_millis(100);

/// Runs the detector for the run's length (until the stop flag without --duration).
pub(crate) fn run(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    label: &str,
    watch: &mut dyn Watch,
) -> Result<RunResult> {
    let bands = Bands::new(spec.period_us, spec.bucket_width_us);
    let settings = HwlatSettings {
        width_us: WIDTH_US,
        window_us: WINDOW_US,
        threshold_us: (bands.width_ns() / 1000).clamp(1, THRESHOLD_US),
        cpus: cpus(host, at.core)?,
    };
    drop(HwlatTracer::usable(host).map_err(Error::from)?);
    // No RT thread of ours: nothing to confine, no loop counters (the detector reads its own SMIs below).
    let setup = Setup {
        rt_cpus: Vec::new(),
        core: at.core,
        trace: None,
        signals: None,
    };
    let session = Session::begin(
        host,
        &RunSpec {
            counters: false,
            ..spec.clone()
        },
        setup,
        watch,
    )?;
    // Before the detector starts: loading the msr driver must not fall into what it measures.
    let (_driver, said) = MsrDriver::ensure(host, at.core);
    let (counter, smi) = smi_counter(host, at.core, said);
    let tracer = HwlatTracer::start(host, &settings).map_err(Error::from)?;
    let mut reader = Reader {
        pipe: tracer.pipe().map_err(Error::from)?,
        buf: Vec::new(),
        gaps: Gaps::new(bands, report_of(&settings, tracer.mode)),
        counter,
        smi,
    };
    let header = Header {
        spec,
        at,
        label,
        mode: RunMode::Hwlat,
        width_us: bands.width_ns() as f64 / 1000.0,
    };
    watch.note(&what_runs(&settings.cpus, spec.duration));
    let stop = session.stop_flag();
    let start = Instant::now();
    let every = super::session::checkpoint_every();
    let mut next_checkpoint = every;
    while !stop.load(Ordering::SeqCst)
        && spec
            .duration
            .is_none_or(|d| start.elapsed().as_secs_f64() < d)
    {
        std::thread::sleep(READ_EVERY);
        reader.read();
        if start.elapsed() >= next_checkpoint {
            next_checkpoint += every;
            let mut r = result(&header, &session.so_far(), reader.gaps.so_far(), start);
            r.checkpoint = true;
            watch.checkpoint(&r);
        }
    }
    tracer.stop();
    reader.read();
    // The kernel refuses to change current_tracer (EBUSY) while trace_pipe is open: close it before the restore.
    let Reader {
        pipe,
        gaps,
        smi,
        counter,
        ..
    } = reader;
    drop((pipe, counter));
    drop(tracer);
    let report = gaps.finish(&smi);
    Ok(result(&header, &session.finish(), report, start))
}

/// The trace pipe and the SMI counters, read together by the main thread.
struct Reader {
    pipe: std::fs::File,
    buf: Vec<u8>,
    gaps: Gaps,
    counter: Option<OwnCpuReaders>,
    smi: SmiTimeline,
}

impl Reader {
    fn read(&mut self) {
        // Bounded per call: a flood of lines is read over the next calls, never all at once.
        for _ in 0..64 {
            self.buf.clear();
            if !drain(&mut self.pipe, &mut self.buf) {
                break;
            }
            self.gaps.feed(&self.buf);
        }
        let Some(c) = &self.counter else { return };
        match c.read() {
            Ok((counts, span)) => self.smi.reading(span, counts),
            Err(why) => {
                self.smi.lost(&why.to_string());
                self.counter = None;
            }
        }
    }
}

/// No live table: the gaps come as they come. Says where the detector runs and until when.
fn what_runs(cpus: &[usize], duration: Option<f64>) -> String {
    let list: Vec<String> = cpus.iter().map(ToString::to_string).collect();
    format!(
        "the hwlat tracer runs on CPU{} {} ({}), the report comes at the end",
        if cpus.len() == 1 { "" } else { "s" },
        list.join(" and "),
        duration.map_or("until Ctrl+C".to_string(), |d| format!("for {d} s"))
    )
}

/// The RT core and the first other online CPU (the SMI counter's pair).
fn cpus(host: &Host, core: usize) -> Result<Vec<usize>> {
    let online = crate::machine::online_cpus(host)?;
    let mut cpus = vec![core];
    cpus.extend(online.into_iter().find(|&c| c != core));
    Ok(cpus)
}

fn smi_counter(host: &Host, core: usize, driver: String) -> (Option<OwnCpuReaders>, SmiTimeline) {
    match OwnCpuReaders::start(host, core, READ_EVERY) {
        Ok((c, (first, (from, _)))) => {
            let t = SmiTimeline::counting(c.cpus.clone(), from, first);
            (Some(c), t)
        }
        Err(why) => (None, SmiTimeline::not_counted(format!("{why} ({driver})"))),
    }
}

fn report_of(s: &HwlatSettings, mode: Option<&str>) -> HwlatReport {
    HwlatReport {
        width_us: s.width_us,
        window_us: s.window_us,
        threshold_us: s.threshold_us,
        mode: mode.map(str::to_string),
        cpus: s.cpus.clone(),
        ..Default::default()
    }
}

fn measured(duration_s: f64) -> Measurement {
    Measurement {
        series: Vec::new(),
        rtt: None,
        duration_s,
        error: None,
    }
}

/// The result of the run so far (a checkpoint) or at its end.
fn result(header: &Header, ended: &Ended, report: HwlatReport, start: Instant) -> RunResult {
    let mut r = header.result(measured(start.elapsed().as_secs_f64()), ended);
    r.verdict = verdict(&report);
    // No thread of ours ran at a priority.
    r.priority = None;
    r.hwlat = Some(report);
    r
}

/// Pass when every gap is in the Great band (none at all included), fail otherwise; a short run's pass becomes
/// inconclusive later (`RunResult::conclusive`).
pub(crate) fn verdict(r: &HwlatReport) -> Verdict {
    if r.buckets.not_great() == 0 {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::result::Buckets;

    /// A detector run has no cycles: 10 s of it with every gap Great is a pass, less is inconclusive, and one gap
    /// beyond Great fails however short the run.
    #[test]
    fn judged_by_its_gaps_and_its_seconds() {
        let of = |great, good, duration_s| {
            let h = HwlatReport {
                buckets: Buckets {
                    great,
                    good,
                    ..Default::default()
                },
                ..Default::default()
            };
            RunResult {
                mode: RunMode::Hwlat,
                verdict: verdict(&h),
                duration_s,
                hwlat: Some(h),
                ..RunResult::for_test(vec![])
            }
            .conclusive()
            .verdict
        };
        assert_eq!(of(0, 0, 10.0), Verdict::Pass);
        assert_eq!(of(3, 0, 60.0), Verdict::Pass);
        assert_eq!(of(3, 0, 9.9), Verdict::Inconclusive);
        assert_eq!(of(3, 1, 1.0), Verdict::Fail);
    }
}
