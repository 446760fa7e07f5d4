//! What every step planner builds with: the target (core, NIC, CPUs), a step, a value change where the value
//! differs, a file change where the file does. The planners: crate::tunable, and irq.rs, cpuset.rs, ethtool.rs,
//! boot/ here.
//! Each reads what is there and proposes only the changes that differ; nothing is written here.

use super::kind::file::FileChange;
use super::kind::value::ValueChange;
use super::{Change, Step, StepId, ValueKind};
use crate::host::Host;

/// What the runtime planners work for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub(crate) core: usize,
    pub(crate) nic: Option<String>,
    pub(crate) online: Vec<usize>,
    /// The CPUs fix isolates: the core and its online SMT siblings (they share its caches and pipeline), sorted.
    /// Worked out once, here, so that every step — command line, workqueues, watchdog, IRQs, irqbalance,
    /// cpuset, and apply-saved at boot — keeps the same CPUs apart.
    pub(crate) isolated: Vec<usize>,
    /// The user's own kernel parameters, put on the command line with the tuning's (qualify --cmdline-extra).
    pub(crate) cmdline_extra: Vec<String>,
}

impl Target {
    /// The target of `core`, its SMT siblings read from the machine's topology.
    pub fn new(host: &Host, core: usize, nic: Option<String>, online: Vec<usize>) -> Target {
        let mut isolated = crate::machine::smt_siblings(host, core);
        isolated.retain(|c| online.contains(c));
        isolated.push(core);
        isolated.sort_unstable();
        isolated.dedup();
        Target {
            core,
            nic,
            online,
            isolated,
            cmdline_extra: vec![],
        }
    }
    /// The isolated CPUs other than the core.
    pub(crate) fn siblings(&self) -> Vec<usize> {
        self.isolated
            .iter()
            .copied()
            .filter(|&c| c != self.core)
            .collect()
    }
    /// The width of the machine's CPU masks.
    pub(crate) fn nbits(&self) -> usize {
        self.online.last().map_or(1, |m| m + 1)
    }
    pub(crate) fn housekeeping(&self) -> Vec<usize> {
        self.online
            .iter()
            .copied()
            .filter(|c| !self.isolated.contains(c))
            .collect()
    }
}

pub(crate) fn step(id: StepId, title: &str, why: &str) -> Step {
    Step {
        id,
        title: title.into(),
        why: why.into(),
        changes: vec![],
        notes: vec![],
    }
}

/// Adds a value change when the present value differs; a value that cannot be read becomes a note.
pub(crate) fn value(
    s: &mut Step,
    host: &Host,
    path: &str,
    want: &str,
    kind: ValueKind,
    refusable: bool,
) {
    match host.read(path) {
        Ok(now) if kind.same(&now, want) => {}
        Ok(now) => s.changes.push(Change::Value(ValueChange {
            path: path.into(),
            before: kind.normal(&now),
            after: want.into(),
            kind,
            refusable,
            label: None,
            owner: None,
        })),
        Err(e) => s.note(format!("{path}: {}", e.reason())),
    }
}

pub(crate) fn file(s: &mut Step, host: &Host, path: &str, want: String) {
    let before = host.read_bytes(path).ok();
    if before.as_deref() != Some(want.as_bytes()) {
        s.changes.push(Change::File(FileChange::new(
            path,
            before,
            want.into_bytes(),
            false,
        )));
    }
}
