//! `Host::traced`: the system paths a Host touched, so that `snapshot` copies exactly what the checks read, and
//! how many accesses that took (what the checks' work costs in system calls).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::Host;

/// The system paths a traced Host touched, shared between its clones, and how many accesses that took.
#[derive(Clone, Default)]
pub(crate) struct Trace(Arc<Mutex<BTreeSet<String>>>, Arc<AtomicUsize>);

impl Trace {
    /// The recorded paths, sorted.
    pub(crate) fn paths(&self) -> Vec<String> {
        match self.0.lock() {
            Ok(g) => g.iter().cloned().collect(),
            Err(p) => p.into_inner().iter().cloned().collect(),
        }
    }
    /// Accesses so far (a path touched twice counts twice): what the checks' work costs in system calls.
    pub(crate) fn touched(&self) -> usize {
        self.1.load(Ordering::Relaxed)
    }
    pub(super) fn record(&self, abs: &str) {
        self.1.fetch_add(1, Ordering::Relaxed);
        let mut g = match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if !g.contains(abs) {
            g.insert(abs.to_string());
        }
    }
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Trace")
    }
}

// A trace is bookkeeping, not identity: two Hosts on the same root are the same machine.
impl PartialEq for Trace {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Trace {}

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
