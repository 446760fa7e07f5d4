//! What the tests share on this machine, taken by lock, not by being alone in a test binary: the tests are threads
//! of one process, and another checkout may run this suite on the same machine at the same time. A lock is a
//! flock(2) on a file in /run/lock: each hold opens the file anew, and flock locks belong to the open file, so
//! holds conflict between threads of this process as between processes.
//!
//! Linux grants a shared hold while an exclusive one waits, so shared holds nest (a test and a helper it calls,
//! each holding the machine shared). A thread that holds a lock alone gets no-op shared holds of it; one that
//! holds it shared and asks for it alone panics (it would wait for itself forever).

use std::cell::RefCell;
use std::fs::{File, OpenOptions};

use nix::fcntl::{Flock, FlockArg};

pub struct Lock {
    path: &'static str,
}

/// The live machine and its RT core. Shared: a test that measures on the RT core or puts real-time work there (a
/// `run`, a NIC run, a SCHED_FIFO helper), or that compares two readings of the machine (check against the test's
/// own reads, against a snapshot). Alone: a test that changes the machine (fix live: IRQs, knobs, the journal) or
/// whose verdict depends on what else runs on the RT core (noise, why a cycle was late, the trace's report). The
/// file's name is older than this module: other checkouts' suites take the same lock.
pub static LIVE: Lock = Lock {
    path: "/run/lock/fx-rmp-eval-live-tests.lock",
};

thread_local! {
    /// The locks this thread holds: (path, alone).
    static HELD: RefCell<Vec<(&'static str, bool)>> = const { RefCell::new(Vec::new()) };
}

/// A hold on a [`Lock`], released when dropped. Holds no file when the lock file cannot be opened (not root, no
/// /run/lock: then no other test can hold it either), or when this thread holds the lock alone already.
pub struct Hold {
    path: &'static str,
    alone: bool,
    _file: Option<Flock<File>>,
}

impl Lock {
    fn open(&self) -> Option<File> {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.path)
            .or_else(|_| File::open(self.path))
            .ok()
    }

    fn held(&self, alone: bool) -> bool {
        HELD.with(|h| {
            h.borrow()
                .iter()
                .any(|&(p, a)| p == self.path && a == alone)
        })
    }

    fn hold(&'static self, file: Option<Flock<File>>, alone: bool) -> Hold {
        HELD.with(|h| h.borrow_mut().push((self.path, alone)));
        Hold {
            path: self.path,
            alone,
            _file: file,
        }
    }

    /// Held shared: waits while a test holds it alone.
    pub fn shared(&'static self) -> Hold {
        if self.held(true) {
            return self.hold(None, false);
        }
        let file = self.open().map(|f| {
            Flock::lock(f, FlockArg::LockShared)
                .map_err(|(_, e)| e)
                .unwrap_or_else(|e| panic!("flock {}: {e}", self.path))
        });
        self.hold(file, false)
    }

    /// Held alone: waits until no other test holds it.
    pub fn alone(&'static self) -> Hold {
        assert!(
            !self.held(false),
            "{}: asked for alone by a test that holds it shared (take it alone first)",
            self.path
        );
        let f = self
            .open()
            .unwrap_or_else(|| panic!("cannot open {} (root only)", self.path));
        let file = Flock::lock(f, FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .unwrap_or_else(|e| panic!("flock {}: {e}", self.path));
        self.hold(Some(file), true)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(i) = h.iter().rposition(|&e| e == (self.path, self.alone)) {
                h.remove(i);
            }
        });
    }
}
