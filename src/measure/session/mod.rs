//! What surrounds a measurement, for the cyclic and the NIC run alike (`Session`): the stop flag wired to
//! SIGINT/SIGTERM (a second signal ends the process), the memory lock, /dev/cpu_dma_latency held at 0, the main
//! thread kept off the RT CPUs, and the supervision loop that hands the live counters to a `Watch` (the caller's
//! live view: this module knows no terminal) while the RT threads run. The guards are in guards.rs, the caller's
//! side (`Watch`, `Gauges`, `Action`, `Extra`) in watch.rs.

mod guards;
mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::collect::Collector;
use super::hlog::Hlog;
use super::result::RunResult;
use super::result::SeriesSummary;
use super::rt::DmaLatency;
use super::series::Series;
use super::spec::RunSpec;
use super::store;
use crate::error::Result;
use crate::host::Host;
pub(crate) use guards::{MemoryLock, OffCore, StopOnSignal};
pub(crate) use watch::{Action, Extra, Gauges, Watch};

/// How often the run so far is handed to `Watch::checkpoint`.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(60);
/// Seconds between checkpoints instead, for tests that cannot wait a minute.
pub(crate) const CHECKPOINT_ENV: &str = "RMP_EVAL_CHECKPOINT_S";

pub(crate) fn checkpoint_every() -> Duration {
    std::env::var(CHECKPOINT_ENV)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.1)
        .map_or(CHECKPOINT_EVERY, Duration::from_secs_f64)
}

/// The guards of one run, taken before its RT threads start and released when it is finished, and what the main
/// thread does meanwhile: intervals, resets, the interval log, checkpoints.
pub(crate) struct Session {
    signals: StopOnSignal,
    _lock: MemoryLock,
    dma: DmaLatency,
    /// Unix time of the start.
    started: u64,
    start: Instant,
    interval: Duration,
    hlog: Option<Hlog>,
    last_reset: Option<u64>,
    resets: u64,
}

/// What the session records into the result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ended {
    /// RFC 3339, UTC.
    pub(crate) started: String,
    /// A signal (or `q`) ended the run.
    pub(crate) interrupted: bool,
    pub(crate) dma_latency_held: bool,
    /// When the statistics were last reset (RFC 3339), and how often.
    pub(crate) reset_at: Option<String>,
    pub(crate) resets: u64,
    /// Why the interval log is incomplete, when it is.
    pub(crate) hlog_error: Option<String>,
}

impl Session {
    /// Installs the signal handlers, locks memory, holds /dev/cpu_dma_latency (a note to `watch` when it cannot:
    /// that is a tuning, not a precondition) and opens the interval log.
    pub(crate) fn begin(host: &Host, spec: &RunSpec, watch: &mut dyn Watch) -> Result<Session> {
        let started = store::unix_now();
        let hlog = match &spec.hlog {
            Some(p) => Some(Hlog::create(p, wall_now())?),
            None => None,
        };
        let signals = StopOnSignal::install()?;
        // A cyclic run's loops are warmed up on every path; a NIC run's are not (see `rt::lock_memory`).
        let lock = MemoryLock::acquire(spec.nic().is_none())?;
        let dma = DmaLatency::hold(host);
        if let (Some(note), true) = (&dma.note, host.is_live()) {
            watch.note(note);
        }
        Ok(Session {
            signals,
            _lock: lock,
            dma,
            started,
            start: Instant::now(),
            interval: Duration::from_secs_f64(spec.hlog_interval_s),
            hlog,
            last_reset: None,
            resets: 0,
        })
    }

    /// The flag SIGINT/SIGTERM set.
    pub(crate) fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.signals.stop)
    }

    /// Seconds since the session began.
    pub(crate) fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The collectors of `series`, cutting intervals at the session's interval.
    pub(crate) fn collectors(&self, series: &mut [&mut Series]) -> Vec<Collector> {
        series
            .iter_mut()
            .filter_map(|s| s.collector())
            .map(|mut c| {
                c.set_interval(self.interval.as_secs_f64());
                c
            })
            .collect()
    }

    /// With the main thread off `rt_cpus`: hands `gauges` to `watch` and, until `finished`, ticks it, cuts and
    /// gathers the intervals of `collectors` (into the interval log) and `extra`, resets both on `r` or SIGUSR1
    /// (when the watch allows resets), stops on `q` and passes `partial(collectors, extra)` to the watch once a minute. Threads started by `rt::spawn_rt` unpark this
    /// (the spawning) thread when they end, so it never sleeps longer than a tick after they did.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn supervise<E: Extra>(
        &mut self,
        rt_cpus: &[usize],
        gauges: Gauges,
        collectors: &mut [Collector],
        extra: &mut E,
        watch: &mut dyn Watch,
        partial: impl Fn(&Self, &[Collector], &E) -> RunResult,
        finished: impl Fn() -> bool,
    ) {
        let _off = OffCore::apply(rt_cpus);
        watch.start(gauges);
        let mut next_cut = self.interval;
        let every = checkpoint_every();
        let mut next_checkpoint = every;
        while !finished() {
            let now = self.start.elapsed();
            let wait = watch.interval().min(next_cut.saturating_sub(now));
            std::thread::park_timeout(wait.max(Duration::from_millis(1)));
            let now = self.start.elapsed();
            if now >= next_cut {
                self.gather(collectors);
                extra.gather();
                for c in collectors.iter_mut() {
                    c.cut(now.as_secs_f64());
                }
                extra.cut(now.as_secs_f64());
                next_cut += self.interval;
                // A stalled main thread (a suspended VM) does not cut a burst of empty intervals.
                while next_cut <= now {
                    next_cut += self.interval;
                }
            }
            let action = watch.tick(now);
            let asked = action == Action::Reset || self.signals.reset.swap(false, Ordering::SeqCst);
            let reset = asked && watch.resets();
            // A reset that comes after the last period (this thread woke late) would leave the run with nothing
            // measured: the run keeps what it has.
            if reset && !finished() {
                for c in collectors.iter_mut() {
                    c.reset(now.as_secs_f64());
                }
                extra.reset(now.as_secs_f64());
                self.last_reset = Some(store::unix_now());
                self.resets += 1;
            }
            if action == Action::Stop {
                self.signals.stop.store(true, Ordering::SeqCst);
            }
            if now >= next_checkpoint {
                next_checkpoint += every;
                self.gather(collectors);
                extra.gather();
                let mut r = partial(self, collectors, extra);
                r.checkpoint = true;
                watch.checkpoint(&r);
            }
        }
        watch.end();
    }

    fn gather(&mut self, collectors: &mut [Collector]) {
        for c in collectors.iter_mut() {
            c.gather(|label, iv| {
                if let Some(h) = &mut self.hlog {
                    h.write(label, iv);
                }
            });
        }
    }

    /// The run's summary of each series once the RT threads have ended (the last intervals into the log).
    pub(crate) fn finish_series(
        &mut self,
        collectors: Vec<Collector>,
        series: Vec<Series>,
    ) -> Vec<SeriesSummary> {
        let end = self.elapsed_s();
        collectors
            .into_iter()
            .zip(series)
            .map(|(c, s)| {
                c.finish(s, end, |label, iv| {
                    if let Some(h) = &mut self.hlog {
                        h.write(label, iv);
                    }
                })
            })
            .collect()
    }

    /// What the session adds to a result, so far (for checkpoints).
    pub(crate) fn so_far(&self) -> Ended {
        Ended {
            started: store::rfc3339(self.started),
            interrupted: self.signals.stopped(),
            dma_latency_held: self.dma.held(),
            reset_at: self.last_reset.map(store::rfc3339),
            resets: self.resets,
            hlog_error: None,
        }
    }

    /// Releases the guards (the DMA latency request first, then signals and the memory lock).
    pub(crate) fn finish(self) -> Ended {
        let mut e = self.so_far();
        e.hlog_error = self.hlog.and_then(Hlog::finish);
        drop(self.dma);
        e
    }
}

/// Now, in seconds since the epoch.
fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
