//! The audited process as /proc shows it: its threads (policy, priority, allowed CPUs, voluntary switches), the
//! cyclic one among them, and the pid of `--process NAME`. The checks on it are in process.rs.

use procfs_core::FromRead;
use procfs_core::process::{Stat, Status as ProcStatus};

use super::unknown;
use crate::host::Host;
use crate::machine::PROC;

/// One thread of the audited process (or of the kernel).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Thread {
    pub(crate) tid: u32,
    pub(crate) comm: String,
    /// SCHED_FIFO/RR priority; None for other policies.
    pub(crate) rt: Option<u32>,
    pub(crate) allowed: Vec<usize>,
    pub(crate) voluntary: u64,
}

fn rt_of(st: &Stat) -> Option<u32> {
    let p = st.policy?;
    (p == libc::SCHED_FIFO as u32 || p == libc::SCHED_RR as u32).then_some(st.rt_priority?)
}

fn allowed(st: &ProcStatus) -> Vec<usize> {
    st.cpus_allowed_list
        .iter()
        .flatten()
        .flat_map(|&(a, b)| a as usize..=b as usize)
        .collect()
}

/// A thread read from its task directory.
pub(super) fn thread(host: &Host, base: &str) -> Option<Thread> {
    let st = crate::parse::task::stat(&host.read_bytes(&format!("{base}/stat")).ok()?)?;
    let status =
        ProcStatus::from_read(&host.read_bytes(&format!("{base}/status")).ok()?[..]).ok()?;
    Some(Thread {
        tid: st.pid as u32,
        rt: rt_of(&st),
        comm: st.comm,
        allowed: allowed(&status),
        voluntary: status.voluntary_ctxt_switches.unwrap_or(0),
    })
}

/// The threads of `pid`.
pub(crate) fn threads(host: &Host, pid: u32) -> Result<Vec<Thread>, super::Unknown> {
    let dir = format!("{PROC}/{pid}/task");
    let tids = host
        .list(&dir)
        .map_err(|e| unknown(format!("process {pid}: {}", e.reason())))?;
    let v: Vec<Thread> = tids
        .iter()
        .filter_map(|t| thread(host, &format!("{dir}/{t}")))
        .collect();
    if v.is_empty() {
        return Err(unknown(format!("process {pid}: no readable threads")));
    }
    Ok(v)
}

/// The cyclic thread: highest RT priority, else most voluntary switches.
pub(crate) fn cyclic(threads: &[Thread]) -> Option<&Thread> {
    threads
        .iter()
        .max_by_key(|t| (t.rt.map_or(0, |p| p + 1), t.voluntary))
}

/// A thread as the details name it: `comm(tid)`.
pub(super) fn name(t: &Thread) -> String {
    format!("{}({})", t.comm, t.tid)
}

/// Finds the one process named `name` (its comm); errors say what was found.
pub(crate) fn find(host: &Host, name: &str) -> crate::error::Result<u32> {
    let mut hits: Vec<u32> = host
        .list(PROC)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.parse::<u32>().ok())
        .filter(|p| {
            host.read_trimmed(&format!("{PROC}/{p}/comm"))
                .is_ok_and(|c| c == name)
        })
        .collect();
    hits.sort_unstable();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(crate::error::Error::usage(format!(
            "--process {name}: no such process"
        ))),
        many => Err(crate::error::Error::usage(format!(
            "--process {name}: {} processes have that name ({}); give --pid",
            many.len(),
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
