//! What surrounds a measurement: the stop flag wired to SIGINT/SIGTERM (a second signal ends the process), the
//! memory lock, the main thread kept off the RT core, and the supervision loop that draws the live view while the
//! RT threads run. The NIC mode uses the same pieces around its own threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::{SigId, flag};

use crate::error::{Error, Result};
use crate::output::Output;
use crate::report::live::LiveView;

/// How often the live table is redrawn on a terminal (≤ 10 Hz) and a progress line printed otherwise.
pub const FRAME: Duration = Duration::from_millis(100);
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

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

/// What the supervision loop shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// Redraw the table in place (a terminal).
    Live,
    /// A plain progress line every 10 s (a pipe or a file).
    Progress,
    /// Nothing (`--json`).
    Quiet,
}

impl Show {
    pub fn choose(out: Output, json: bool) -> Self {
        match (json, out.terminal) {
            (true, _) => Show::Quiet,
            (false, true) => Show::Live,
            (false, false) => Show::Progress,
        }
    }
}

/// Waits for `finished`, drawing the live view; never touches the RT threads except through their counters.
/// Threads started by `rt::spawn_rt` unpark this (the spawning) thread when they end, so without a live table it
/// wakes once a second at most, not ten times.
pub fn supervise(out: Output, show: Show, view: &mut LiveView, finished: impl Fn() -> bool) {
    let start = Instant::now();
    let mut last_progress = start;
    let step = if show == Show::Live {
        FRAME
    } else {
        Duration::from_secs(1)
    };
    while !finished() {
        std::thread::park_timeout(step);
        let elapsed = start.elapsed().as_secs_f64();
        match show {
            Show::Live => crate::out!("{}", view.frame(elapsed, out.color)),
            Show::Progress if last_progress.elapsed() >= PROGRESS_EVERY => {
                last_progress = Instant::now();
                crate::out!("{}", view.progress_line(elapsed));
            }
            _ => {}
        }
    }
    if show == Show::Live {
        crate::out!("{}", view.clear());
    }
}
