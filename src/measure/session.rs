//! What surrounds a measurement, for the cyclic and the NIC run alike (`Session`): the stop flag wired to
//! SIGINT/SIGTERM (a second signal ends the process), the memory lock, /dev/cpu_dma_latency held at 0, the main
//! thread kept off the RT CPUs, and the supervision loop that hands the live counters to a `Watch` (the caller's
//! live view: this module knows no terminal) while the RT threads run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::{SigId, flag};

use super::rt::DmaLatency;
use super::series::Live;
use super::store;
use crate::error::{Error, Result};
use crate::host::Host;

/// SIGINT and SIGTERM set `stop` while this lives; a second one while stop is set exits at once (status 130).
/// Dropping it restores the previous behaviour, so a run inside fix leaves Ctrl+C as it was.
pub struct StopOnSignal {
    pub stop: Arc<AtomicBool>,
    ids: Vec<SigId>,
}

impl StopOnSignal {
    pub fn install() -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for sig in [SIGINT, SIGTERM] {
            // The shutdown action must be registered first: it only fires when stop is already set.
            ids.push(
                flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))
                    .map_err(|e| Error::sys("installing the signal handler", e))?,
            );
            ids.push(
                flag::register(sig, Arc::clone(&stop))
                    .map_err(|e| Error::sys("installing the signal handler", e))?,
            );
        }
        Ok(StopOnSignal { stop, ids })
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// mlockall for the life of the guard.
pub struct MemoryLock;

impl MemoryLock {
    pub fn acquire() -> Result<Self> {
        super::rt::lock_memory()?;
        Ok(MemoryLock)
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        super::rt::unlock_memory();
    }
}

/// Moves the calling (main) thread off the RT CPUs while this lives, when another CPU is allowed.
pub struct OffCore {
    saved: Option<CpuSet>,
}

impl OffCore {
    pub fn apply(rt_cpus: &[usize]) -> Self {
        let Ok(saved) = sched_getaffinity(Pid::from_raw(0)) else {
            return OffCore { saved: None };
        };
        let mut others = saved;
        for &c in rt_cpus {
            let _ = others.unset(c);
        }
        let any = (0..CpuSet::count()).any(|c| others.is_set(c).unwrap_or(false));
        if any && sched_setaffinity(Pid::from_raw(0), &others).is_ok() {
            OffCore { saved: Some(saved) }
        } else {
            OffCore { saved: None }
        }
    }
}

impl Drop for OffCore {
    fn drop(&mut self) {
        if let Some(s) = &self.saved {
            let _ = sched_setaffinity(Pid::from_raw(0), s);
        }
    }
}

/// What a run publishes while it measures: each series' counters and, in NIC mode, lines of its own.
pub struct Gauges {
    pub period_us: u32,
    pub bucket_width_us: Option<u32>,
    pub series: Vec<(String, Arc<Live>)>,
    pub extra: Option<Box<dyn Fn() -> String>>,
}

/// The caller's view of a running measurement (a live table, progress lines, nothing).
pub trait Watch {
    /// Something the user should know that does not stop the run.
    fn note(&mut self, text: &str);
    /// The RT threads run; these are their counters.
    fn start(&mut self, gauges: Gauges);
    /// How long the supervision loop waits between ticks (it also wakes when an RT thread ends).
    fn interval(&self) -> Duration;
    fn tick(&mut self, elapsed: Duration);
    /// The RT threads have ended.
    fn end(&mut self);
}

/// A `Watch` that shows nothing.
pub struct Quiet;

impl Watch for Quiet {
    fn note(&mut self, _: &str) {}
    fn start(&mut self, _: Gauges) {}
    fn interval(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn tick(&mut self, _: Duration) {}
    fn end(&mut self) {}
}

/// The guards of one run, taken before its RT threads start and released when it is finished.
pub struct Session {
    signals: StopOnSignal,
    _lock: MemoryLock,
    dma: DmaLatency,
    /// Unix time of the start.
    started: u64,
}

/// What the session records into the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// RFC 3339, UTC.
    pub started: String,
    /// A signal ended the run.
    pub interrupted: bool,
    pub dma_latency_held: bool,
}

impl Session {
    /// Installs the signal handlers, locks memory and holds /dev/cpu_dma_latency (a note to `watch` when it
    /// cannot: that is a tuning, not a precondition).
    pub fn begin(host: &Host, watch: &mut dyn Watch) -> Result<Session> {
        let started = store::unix_now();
        let signals = StopOnSignal::install()?;
        let lock = MemoryLock::acquire()?;
        let dma = DmaLatency::hold(host);
        if let (Some(note), true) = (&dma.note, host.is_live()) {
            watch.note(note);
        }
        Ok(Session {
            signals,
            _lock: lock,
            dma,
            started,
        })
    }

    /// The flag SIGINT/SIGTERM set.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.signals.stop)
    }

    pub fn stopped(&self) -> bool {
        self.signals.stopped()
    }

    /// With the main thread off `rt_cpus`: hands `gauges` to `watch`, ticks it until `finished`, ends it.
    /// Threads started by `rt::spawn_rt` unpark this (the spawning) thread when they end, so it never sleeps
    /// longer than the watch's interval after they did.
    pub fn supervise(
        &self,
        rt_cpus: &[usize],
        gauges: Gauges,
        watch: &mut dyn Watch,
        finished: impl Fn() -> bool,
    ) {
        let _off = OffCore::apply(rt_cpus);
        let start = Instant::now();
        watch.start(gauges);
        while !finished() {
            std::thread::park_timeout(watch.interval());
            watch.tick(start.elapsed());
        }
        watch.end();
    }

    /// Releases the guards (the DMA latency request first, then signals and the memory lock).
    pub fn finish(self) -> Ended {
        let dma_latency_held = self.dma.held();
        let interrupted = self.signals.stopped();
        drop(self.dma);
        Ended {
            started: store::rfc3339(self.started),
            interrupted,
            dma_latency_held,
        }
    }
}
