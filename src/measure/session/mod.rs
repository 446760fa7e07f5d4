//! What surrounds a measurement, for every kind of run (`Session`): one setup sequence, done in full before the
//! first RT thread starts (`Session::begin`) — the stop flag wired to SIGINT/SIGTERM (a second signal ends the
//! process), malloc told to keep what is freed and memory locked, /dev/cpu_dma_latency held at 0, every thread of
//! the process confined to the housekeeping CPUs, the interference counters opened (the msr driver loaded) and
//! tracefs set up — and the supervision loop that hands the live counters to a `Watch` (the caller's live view:
//! this module knows no terminal) while the RT threads run. Nothing of this reaches an RT core once its loop
//! runs. The guards are in guards.rs, the caller's side (`Watch`, `Gauges`, `Action`, `Extra`) in watch.rs.

mod guards;
pub(crate) mod rt;
mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::interference::{Counters, Counting};
use super::result::SeriesSummary;
use super::result::{RunResult, StoppedBy};
use super::spec::RunSpec;
use crate::error::Result;
use crate::host::Host;
use crate::measure::cyclic::collect::Collector;
use crate::measure::cyclic::series::Series;
use crate::measure::interference::smi::LocalSmi;
use crate::measure::result::hlog::Hlog;
use crate::measure::result::store;
use crate::trace::marker::Marker;
use crate::trace::session::{Scope, TraceReport, Tracing};
pub(crate) use guards::{Confined, MemoryLock, OffCore, StopOnSignal};
use rt::DmaLatency;
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
    // Fields drop in order: the trace and the counters (tracefs put back, the msr driver unloaded) while the
    // threads are still confined, the memory lock last.
    tracing: Option<Tracing>,
    marker: Option<Marker>,
    counters: Option<Counters>,
    _confined: Confined,
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
    /// Since the session began: the last reset, and the end of the supervision (the RT threads' end).
    reset_after: Option<Duration>,
    supervised_until: Option<Duration>,
}

/// What the session records into the result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ended {
    /// RFC 3339, UTC.
    pub(crate) started: String,
    /// A signal (or `q`) ended the run.
    pub(crate) interrupted: bool,
    /// Which: q, SIGINT (Ctrl+C) or SIGTERM.
    pub(crate) stopped_by: Option<StoppedBy>,
    pub(crate) dma_latency_held: bool,
    /// When the statistics were last reset (RFC 3339), and how often.
    pub(crate) reset_at: Option<String>,
    pub(crate) resets: u64,
    /// Seconds from the last reset to the end (or to now, at a checkpoint): the span the result covers.
    pub(crate) since_reset_s: Option<f64>,
    /// Why the interval log is incomplete, when it is.
    pub(crate) hlog_error: Option<String>,
}

/// What a run measures on, for its setup: the CPUs its RT threads will run on (every other thread of the process
/// is kept off them), the core whose interference counters are read, and what `--trace` follows (when asked).
pub(crate) struct Setup {
    pub(crate) rt_cpus: Vec<usize>,
    pub(crate) core: usize,
    pub(crate) trace: Option<Scope>,
    /// Handlers installed before the run's first change to the machine (`StopOnSignal::share`), else installed here.
    pub(crate) signals: Option<StopOnSignal>,
}

impl Session {
    /// The one setup sequence of every run, in this order: the interval log, the signal handlers, malloc's
    /// trimming off and memory locked, /dev/cpu_dma_latency held (a note to `watch` when it cannot: that is a
    /// tuning, not a precondition), every thread of the process off `setup.rt_cpus`, the counters of
    /// `setup.core` opened (the msr driver loaded) and tracefs set up. The caller starts its RT threads after.
    pub(crate) fn begin(
        host: &Host,
        spec: &RunSpec,
        setup: Setup,
        watch: &mut dyn Watch,
    ) -> Result<Session> {
        let started = store::unix_now();
        let hlog = match &spec.hlog {
            Some(p) => Some(Hlog::create(p, wall_now())?),
            None => None,
        };
        let signals = match setup.signals {
            Some(s) => s,
            None => StopOnSignal::install()?,
        };
        let lock = MemoryLock::acquire()?;
        let dma = DmaLatency::hold(host);
        if let (Some(note), true) = (&dma.note, host.is_live()) {
            watch.note(note);
        }
        // Before the counters and the trace: the threads they start inherit the confined mask.
        let confined = Confined::apply(&setup.rt_cpus);
        let counters = Counters::open(host, setup.core, &setup.rt_cpus, spec.counters);
        let (tracing, marker) = match setup.trace {
            Some(scope) => {
                let (t, m) = Tracing::start(host, scope, spec.break_us)?;
                (Some(t), Some(m))
            }
            None => (None, None),
        };
        Ok(Session {
            signals,
            _lock: lock,
            dma,
            tracing,
            marker,
            counters: Some(counters),
            _confined: confined,
            started,
            start: Instant::now(),
            interval: Duration::from_secs_f64(spec.hlog_interval_s),
            hlog,
            last_reset: None,
            resets: 0,
            reset_after: None,
            supervised_until: None,
        })
    }

    /// The trace marker for the RT loop (once), under --trace.
    pub(crate) fn take_marker(&mut self) -> Option<Marker> {
        self.marker.take()
    }

    /// The SMI counter of the counted core, for the RT thread that runs on it (once; see measure::interference::smi).
    pub(crate) fn smi_reader(&mut self, period_us: u32) -> Option<LocalSmi> {
        self.counters.as_mut()?.smi_reader(period_us)
    }

    /// The series of the loops on the counted core (every thread of a set there): their wakeups are the run's
    /// own timer interrupts, not the kernel's ticks.
    pub(crate) fn own_loops(&mut self, live: Vec<Arc<crate::measure::cyclic::series::Live>>) {
        if let Some(c) = &mut self.counters {
            c.own_loops(live);
        }
    }

    /// The trace's report, once the RT threads are joined.
    pub(crate) fn finish_trace(&mut self) -> Option<TraceReport> {
        self.tracing.take().map(Tracing::finish)
    }

    /// The interference counters, once the supervision is over.
    pub(crate) fn take_counters(&mut self) -> Option<Counters> {
        self.counters.take()
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

    /// Hands `gauges` to `watch` and, until `finished`, ticks it (and the interference counters), cuts and
    /// gathers the intervals of `collectors` (into the interval log) and `extra`, resets both on `r` or SIGUSR1
    /// (when the watch allows resets), stops on `q` and passes `partial(collectors, extra)` to the watch once a minute. Threads started by `rt::spawn_rt` unpark this
    /// (the spawning) thread when they end, so it never sleeps longer than a tick after they did.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn supervise<E: Extra>(
        &mut self,
        gauges: Gauges,
        collectors: &mut [Collector],
        extra: &mut E,
        watch: &mut dyn Watch,
        partial: impl Fn(&Self, &[Collector], &E) -> RunResult,
        finished: impl Fn() -> bool,
    ) {
        let mut counters = self.counters.take();
        match &mut counters {
            Some(c) => self.supervise_with(
                gauges,
                (collectors, extra),
                &mut Counting {
                    inner: watch,
                    counters: c,
                },
                partial,
                finished,
            ),
            None => self.supervise_with(gauges, (collectors, extra), watch, partial, finished),
        }
        self.counters = counters;
    }

    fn supervise_with<E: Extra>(
        &mut self,
        gauges: Gauges,
        (collectors, extra): (&mut [Collector], &mut E),
        watch: &mut dyn Watch,
        partial: impl Fn(&Self, &[Collector], &E) -> RunResult,
        finished: impl Fn() -> bool,
    ) {
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
                watch.restarted();
                self.last_reset = Some(store::unix_now());
                self.reset_after = Some(now);
                self.resets += 1;
            }
            if action == Action::Stop {
                self.signals.stop_by_key();
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
        self.supervised_until = Some(self.start.elapsed());
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
            stopped_by: self.signals.stopped_by(),
            dma_latency_held: self.dma.held(),
            reset_at: self.last_reset.map(store::rfc3339),
            resets: self.resets,
            since_reset_s: self.reset_after.map(|r| {
                let end = self
                    .supervised_until
                    .unwrap_or_else(|| self.start.elapsed());
                end.saturating_sub(r).as_secs_f64()
            }),
            hlog_error: None,
        }
    }

    /// Releases the guards (the DMA latency request first, then the rest in field order).
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
