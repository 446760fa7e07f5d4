//! The guards a run holds while it measures, each undone on drop: the stop flag wired to SIGINT/SIGTERM (and
//! SIGUSR1 for a reset), the memory lock, and every thread of the process but the RT ones kept off the RT CPUs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use signal_hook::{SigId, flag};

use crate::error::{Error, Result};
use crate::measure::result::StoppedBy;
use crate::sys::process as sys;

/// SIGINT and SIGTERM set `stop` while this lives, SIGUSR1 sets `reset`; a second one while stop is set exits at once (status 130).
/// Dropping it restores the previous behaviour, so a run inside fix leaves Ctrl+C as it was.
pub(crate) struct StopOnSignal {
    pub(crate) stop: Arc<AtomicBool>,
    /// SIGUSR1: reset the statistics.
    pub(crate) reset: Arc<AtomicBool>,
    /// What stopped the run: `StoppedBy` as a number (0: nothing yet).
    pub(crate) by: Arc<AtomicUsize>,
    ids: Vec<SigId>,
}

impl StopOnSignal {
    pub(crate) fn install() -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let by = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::new();
        for (sig, who) in [(SIGINT, StoppedBy::Sigint), (SIGTERM, StoppedBy::Sigterm)] {
            // The shutdown action must be registered first: it only fires when stop is already set.
            ids.push(
                flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))
                    .map_err(|e| Error::sys("installing the signal handler", e))?,
            );
            ids.push(
                flag::register(sig, Arc::clone(&stop))
                    .map_err(|e| Error::sys("installing the signal handler", e))?,
            );
            ids.push(
                flag::register_usize(sig, Arc::clone(&by), who as usize)
                    .map_err(|e| Error::sys("installing the signal handler", e))?,
            );
        }
        let reset = Arc::new(AtomicBool::new(false));
        ids.push(
            flag::register(SIGUSR1, Arc::clone(&reset))
                .map_err(|e| Error::sys("installing the signal handler", e))?,
        );
        Ok(StopOnSignal {
            stop,
            reset,
            by,
            ids,
        })
    }

    /// The same flags without owning the handlers (they stay registered for as long as `self` lives): for a run
    /// that installs them before its first change to the machine and hands them to its session later.
    pub(crate) fn share(&self) -> StopOnSignal {
        StopOnSignal {
            stop: Arc::clone(&self.stop),
            reset: Arc::clone(&self.reset),
            by: Arc::clone(&self.by),
            ids: Vec::new(),
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// `q` typed: the run stops as on a signal, and says it was q.
    pub(crate) fn stop_by_key(&self) {
        self.by.store(StoppedBy::Q as usize, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
    }

    /// What stopped the run, once something did.
    pub(crate) fn stopped_by(&self) -> Option<StoppedBy> {
        if !self.stopped() {
            return None;
        }
        Some(match self.by.load(Ordering::SeqCst) {
            x if x == StoppedBy::Q as usize => StoppedBy::Q,
            x if x == StoppedBy::Sigterm as usize => StoppedBy::Sigterm,
            _ => StoppedBy::Sigint,
        })
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// mlockall for the life of the guard (`rt::lock_memory`).
pub(crate) struct MemoryLock;

impl MemoryLock {
    pub(crate) fn acquire() -> Result<Self> {
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

/// This process's threads, as the kernel lists them.
const OWN_TASKS: &str = "/proc/self/task";

/// Every thread of this process kept off the RT CPUs while this lives (where another CPU is allowed), each put
/// back as it was on drop. Taken before the first RT thread starts: a thread started later inherits its parent's
/// mask (the RT threads then pin themselves), so from then on nothing of the process but the RT loops runs there.
pub(crate) struct Confined {
    saved: Vec<(i32, sys::Cpus)>,
}

impl Confined {
    pub(crate) fn apply(rt_cpus: &[usize]) -> Self {
        let mut saved = Vec::new();
        if rt_cpus.is_empty() {
            return Confined { saved };
        }
        // The calling thread first: a thread it starts meanwhile inherits the confined mask.
        let me = sys::thread_id();
        let others = crate::host::Host::live()
            .list(OWN_TASKS)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|t| t.parse::<i32>().ok())
            .filter(|&t| t != me);
        for tid in std::iter::once(me).chain(others) {
            let Ok(mask) = sys::affinity_of(tid) else {
                continue;
            };
            let off = rt_cpus.iter().fold(mask.clone(), |s, &c| s.without(c));
            if !off.is_empty() && sys::set_affinity_of(tid, &off).is_ok() {
                saved.push((tid, mask));
            }
        }
        Confined { saved }
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        // A thread that ended meanwhile is gone (ESRCH): nothing to put back.
        for (tid, mask) in &self.saved {
            let _ = sys::set_affinity_of(*tid, mask);
        }
    }
}
