//! /proc/PID/task/TID/stat and …/status: a thread's name, kernel-thread flag, last CPU, scheduling policy, and
//! the CPUs it may run on. The stat line is parsed by procfs-core behind a shape check (`stat`), the one way
//! into it for every reader of stat files here; the status file's one line by hand (procfs-core's `Status` wants
//! the whole file, and the fixture trees keep only that line).

use procfs_core::FromRead;
use procfs_core::process::Stat;

/// PF_KTHREAD in include/linux/sched.h.
pub(crate) const PF_KTHREAD: u64 = 0x0020_0000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    pub tid: u32,
    pub comm: String,
    pub(crate) flags: u64,
    /// The CPU it last ran on.
    pub(crate) processor: usize,
    pub(crate) rt_priority: u32,
    /// 0 OTHER, 1 FIFO, 2 RR, 3 BATCH, 5 IDLE, 6 DEADLINE.
    pub(crate) policy: u32,
}

impl TaskStat {
    pub(crate) fn is_kthread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// procfs-core's `Stat` of a stat file, or None when it is not one. procfs-core 0.18 cuts the line at its
/// parentheses without checking them and panics on a malformed one ("(x)", "1 (x)", ") 1 ("): a --root snapshot
/// may come from anyone, so the shape it slices by is checked first — one ASCII byte before the first '(' and a
/// space after the last ')'. Everything after that procfs-core refuses with an error.
pub(crate) fn stat(bytes: &[u8]) -> Option<Stat> {
    let text = String::from_utf8_lossy(bytes);
    let t = text.trim().as_bytes();
    let open = t.iter().position(|&b| b == b'(')?;
    let close = t.iter().rposition(|&b| b == b')')?;
    let shaped =
        open >= 1 && t[open - 1].is_ascii() && close > open && t.get(close + 1) == Some(&b' ');
    shaped.then(|| Stat::from_read(t).ok()).flatten()
}

/// A stat line as the checks use it (procfs-core parses it; the name may hold spaces and ')'). None when it is
/// malformed or lacks the processor, priority or policy fields.
pub fn parse_stat(text: &str) -> Option<TaskStat> {
    let s = stat(text.as_bytes())?;
    Some(TaskStat {
        tid: u32::try_from(s.pid).ok()?,
        processor: usize::try_from(s.processor?).ok()?,
        rt_priority: s.rt_priority?,
        policy: s.policy?,
        flags: u64::from(s.flags),
        comm: s.comm,
    })
}

/// The "Cpus_allowed_list" value of a status file.
pub fn allowed_list(status: &str) -> Option<&str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(str::trim)
}

/// The "Threads" count of a process's status file (its threads, the main one included).
pub(crate) fn threads(status: &str) -> Option<usize> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| crate::parse::kint::uint(v.trim(), &crate::parse::kint::Range::U32).ok())
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_kthread() {
        // fixtures/debian12-rt-qemu-isolated/proc/17/stat (rcu_preempt, SCHED_FIFO 1 on an RT kernel).
        let s = "17 (rcu_preempt) I 2 0 0 0 -1 2129984 0 0 0 0 0 17 0 0 -2 0 1 0 57 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 1 1 0 0 0 0 0 0 0 0 0 0 0\n";
        let t = parse_stat(s).unwrap();
        assert_eq!(t.comm, "rcu_preempt");
        assert!(t.is_kthread());
        assert_eq!((t.processor, t.rt_priority, t.policy), (0, 1, 1));
    }

    #[test]
    fn names_with_spaces_and_parens() {
        let s = "4242 (Web Content) (x)) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
        let t = parse_stat(s).unwrap();
        assert_eq!(t.comm, "Web Content) (x)");
        assert!(!t.is_kthread());
        assert_eq!(t.processor, 3);
        assert!(parse_stat("garbage").is_none());
        // Lines procfs-core 0.18 panics on by itself: refused here.
        for bad in ["(x)", "1 (x)", ") 1 (", "1é(x) S", "1 (x)é", " (x) S 1"] {
            assert!(stat(bad.as_bytes()).is_none(), "{bad}");
        }
        assert!(parse_stat("1 (x) S 1 2").is_none());
        let st = "Name:\tbash\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n";
        assert_eq!(allowed_list(st), Some("0"));
        assert_eq!(threads(st), None);
        // The lines of fixtures/debian12-rt-qemu-isolated/proc/1/status as the kernel writes them.
        assert_eq!(threads("Name:\tsystemd\nThreads:\t1\n"), Some(1));
        assert_eq!(threads("Threads:\t07\n"), None);
    }
}
