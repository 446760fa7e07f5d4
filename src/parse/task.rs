//! /proc/PID/task/TID/stat and …/status: a thread's name, kernel-thread flag, last CPU, scheduling policy, and
//! the CPUs it may run on.

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

/// Parses a stat line. The name sits in parentheses and may itself contain spaces and ')', so the fields are
/// counted from the last ')'.
pub fn parse_stat(text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let tid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // f[0] is field 3 (state); field N is f[N - 3].
    let field = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(TaskStat {
        tid,
        comm,
        flags: field(9)?,
        processor: usize::try_from(field(39)?).ok()?,
        rt_priority: u32::try_from(field(40)?).ok()?,
        policy: u32::try_from(field(41)?).ok()?,
    })
}

/// The "Cpus_allowed_list" value of a status file.
pub fn allowed_list(status: &str) -> Option<&str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(str::trim)
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
        assert!(parse_stat("1 (x) S 1 2").is_none());
        let st = "Name:\tbash\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n";
        assert_eq!(allowed_list(st), Some("0"));
    }
}
