//! `Host::traced`: the system paths a Host touched, so that `snapshot` copies exactly what the checks read, and
//! how many accesses that took (what the checks' work costs in system calls).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Host, Shared};

/// The system paths a traced Host touched, shared between its clones, and how many accesses that took.
pub(crate) type Trace = Shared<Touched>;

#[derive(Default)]
pub(crate) struct Touched {
    paths: Mutex<BTreeSet<String>>,
    accesses: AtomicUsize,
}

impl Touched {
    /// The recorded paths, sorted.
    pub(crate) fn paths(&self) -> Vec<String> {
        match self.paths.lock() {
            Ok(g) => g.iter().cloned().collect(),
            Err(p) => p.into_inner().iter().cloned().collect(),
        }
    }
    /// Accesses so far (a path touched twice counts twice): what the checks' work costs in system calls.
    pub(crate) fn touched(&self) -> usize {
        self.accesses.load(Ordering::Relaxed)
    }
    pub(super) fn record(&self, abs: &str) {
        self.accesses.fetch_add(1, Ordering::Relaxed);
        let mut g = match self.paths.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if !g.contains(abs) {
            g.insert(abs.to_string());
        }
    }
}

impl Host {
    /// This Host, recording every path it resolves from now on.
    pub(crate) fn traced(&self) -> (Host, Trace) {
        let t = Trace::default();
        let h = Host {
            root: self.root.clone(),
            trace: Some(t.clone()),
            loaded: self.loaded.clone(),
            keep: self.keep.clone(),
        };
        (h, t)
    }
}
