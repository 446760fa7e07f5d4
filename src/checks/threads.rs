//! Other threads on the RT core: what may run there, and what did run there last.

use super::{Assessment, Check, CheckId, Ctx, Eval, Section, unknown};
use crate::host::Host;
use crate::machine::PROC;
use crate::parse::{cpulist, task};

/// Threads named in a detail line; the rest are counted.
const SHOW: usize = 4;

pub(crate) const RT_CORE_THREADS: Check = Check {
    id: CheckId::RtCoreThreads,
    section: Section::Core,
    title: "No other threads on RT core",
    doc: "Any thread that may run on the RT core can preempt or delay the controller. Fails when a user-space \
          thread is allowed on the core, or a kernel thread that is not bound to it (bound per-CPU kthreads such \
          as ksoftirqd/N, migration/N or kworker/N:M belong to every CPU) last ran there. IRQ threads are left to \
          the IRQ checks. Run it while the controller is stopped.",
    remedy: None,
    by_hand: Some(
        "stop or move the named threads: set CPUAffinity= in /etc/systemd/system.conf to the housekeeping CPUs, pin other services with `taskset`/systemd CPUAffinity=, and run the check while the controller is stopped",
    ),
    evaluate: rt_core_threads,
};

/// What one thread's files say.
enum Seen {
    /// It exited while being read (live), or the snapshot recorded it gone.
    Gone,
    /// It exists but its files could not be read or parsed: it could be on the core.
    Unreadable,
    /// This many threads a process's status counts whose files the tree does not hold.
    Uncaptured(usize),
    Fine,
    Offends(String),
}

/// A file of a thread: its text, or what its absence means (gone on the machine, not captured in a tree).
fn task_file(host: &Host, path: &str) -> Result<String, Seen> {
    match host.read(path) {
        Ok(t) => Ok(t),
        Err(e) if e.is_not_found() && host.lacks(path) => Err(Seen::Gone),
        Err(_) => Err(Seen::Unreadable),
    }
}

/// The thread whose stat and status are under `base` (/proc/P/task/T, or /proc/P for its main thread).
fn task(host: &Host, base: &str, core: usize) -> Seen {
    let stat = match task_file(host, &format!("{base}/stat")) {
        Ok(s) => s,
        Err(seen) => return seen,
    };
    let Some(t) = task::parse_stat(&stat) else {
        return Seen::Unreadable;
    };
    // A kernel thread elsewhere cannot offend: skip reading its status (half the files).
    if t.is_kthread() && (t.processor != core || t.comm.starts_with("irq/")) {
        return Seen::Fine;
    }
    let status = match task_file(host, &format!("{base}/status")) {
        Ok(s) => s,
        Err(seen) => return seen,
    };
    let Some(allowed) = task::allowed_list(&status).and_then(|l| cpulist::parse(l).ok()) else {
        return Seen::Unreadable;
    };
    let offends = if t.is_kthread() {
        allowed != [core]
    } else {
        allowed.contains(&core)
    };
    if offends {
        Seen::Offends(format!("{}({})", t.comm, t.tid))
    } else {
        Seen::Fine
    }
}

/// The threads of process `pid`: each under task/, or, where a tree holds the process without its task/
/// directory, its main thread from /proc/P itself plus the other threads its status counts, unread.
fn process(host: &Host, pid: &str, core: usize) -> Vec<Seen> {
    let dir = format!("{PROC}/{pid}");
    match host.list(&format!("{dir}/task")) {
        Ok(tids) => tids
            .iter()
            .filter(|t| t.bytes().all(|b| b.is_ascii_digit()))
            .map(|tid| task(host, &format!("{dir}/task/{tid}"), core))
            .collect(),
        Err(e) if e.is_not_found() && host.lacks(&format!("{dir}/task")) => vec![Seen::Gone],
        Err(e) if e.is_not_found() => {
            let main = task(host, &dir, core);
            let threads = host
                .read(&format!("{dir}/status"))
                .ok()
                .and_then(|s| task::threads(&s));
            // Without a count, at least one thread is unaccounted for: the kernel's status always has it.
            let others = threads.map_or(1, |n| n - 1);
            vec![main, Seen::Uncaptured(others)]
        }
        Err(_) => vec![Seen::Unreadable],
    }
}

fn rt_core_threads(host: &Host, ctx: &Ctx) -> Eval {
    let core = ctx.core;
    let pids = host
        .list(PROC)
        .map_err(|e| unknown(format!("{PROC}: {}", e.reason())))?;
    let (mut seen, mut unreadable) = (0usize, 0usize);
    let mut offenders: Vec<String> = Vec::new();
    for pid in pids
        .iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        for t in process(host, pid, core) {
            match t {
                Seen::Gone => {}
                Seen::Unreadable => unreadable += 1,
                Seen::Uncaptured(n) => unreadable += n,
                Seen::Fine => seen += 1,
                Seen::Offends(name) => {
                    seen += 1;
                    offenders.push(name);
                }
            }
        }
    }
    if offenders.is_empty() {
        if unreadable > 0 {
            return Err(unknown(format!(
                "{unreadable} threads could not be read or parsed ({seen} read, none on CPU{core})"
            )));
        }
        if seen == 0 {
            return Err(unknown("no threads found"));
        }
        return Ok(Assessment::pass(format!(
            "{seen} threads, none on CPU{core}"
        )));
    }
    Ok(Assessment::fail(super::first_few(&offenders, SHOW)))
}
