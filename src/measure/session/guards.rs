//! The guards a run holds while it measures, each undone on drop: the stop flag wired to SIGINT/SIGTERM (and
//! SIGUSR1 for a reset), the memory lock, and the main thread kept off the RT CPUs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use signal_hook::{SigId, flag};

use crate::error::{Error, Result};
use crate::sys::process as sys;

/// SIGINT and SIGTERM set `stop` while this lives, SIGUSR1 sets `reset`; a second one while stop is set exits at once (status 130).
/// Dropping it restores the previous behaviour, so a run inside fix leaves Ctrl+C as it was.
pub(crate) struct StopOnSignal {
    pub(crate) stop: Arc<AtomicBool>,
    /// SIGUSR1: reset the statistics.
    pub(crate) reset: Arc<AtomicBool>,
    ids: Vec<SigId>,
}

impl StopOnSignal {
    pub(crate) fn install() -> Result<Self> {
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
        let reset = Arc::new(AtomicBool::new(false));
        ids.push(
            flag::register(SIGUSR1, Arc::clone(&reset))
                .map_err(|e| Error::sys("installing the signal handler", e))?,
        );
        Ok(StopOnSignal { stop, reset, ids })
    }

    pub(crate) fn stopped(&self) -> bool {
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

/// mlockall for the life of the guard (`rt::lock_memory`, shedding the code mapped so far with `shed_code`).
pub(crate) struct MemoryLock;

impl MemoryLock {
    pub(crate) fn acquire(shed_code: bool) -> Result<Self> {
        crate::measure::rt::lock_memory(shed_code)?;
        Ok(MemoryLock)
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        crate::measure::rt::unlock_memory();
    }
}

/// Moves the calling (main) thread off the RT CPUs while this lives, when another CPU is allowed.
pub(crate) struct OffCore {
    saved: Option<sys::Cpus>,
}

impl OffCore {
    pub(crate) fn apply(rt_cpus: &[usize]) -> Self {
        let Ok(saved) = sys::affinity() else {
            return OffCore { saved: None };
        };
        let others = rt_cpus.iter().fold(saved.clone(), |s, &c| s.without(c));
        if !others.is_empty() && sys::set_affinity(&others).is_ok() {
            OffCore { saved: Some(saved) }
        } else {
            OffCore { saved: None }
        }
    }
}

impl Drop for OffCore {
    fn drop(&mut self) {
        if let Some(s) = &self.saved {
            let _ = sys::set_affinity(s);
        }
    }
}
