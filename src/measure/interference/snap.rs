//! One snapshot of the interference counters of a CPU — /proc/interrupts and /proc/softirqs' column, and the
//! threads that ran there (/proc/PID/task/TID/stat's last CPU, schedstat's run time and timeslices) — and the
//! window between two snapshots: what grew, ranked.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use procfs_core::FromRead;
use procfs_core::process::{Schedstat, Stat, Status};

use super::report::{self, Source, SourceKind, Window};
use crate::host::Host;
use crate::machine::PROC;
use crate::machine::irq::{INTERRUPTS, SOFTIRQS};
use crate::measure::cyclic::series::Live;
use crate::parse::{interrupts, softirqs};

/// One thread as last seen.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TaskSnap {
    pub(super) pid: u32,
    pub(super) comm: String,
    pub(super) cpu: usize,
    pub(super) run_ns: u64,
    pub(super) slices: u64,
    /// SCHED_FIFO/RR priority, for RT threads.
    pub(super) rt: Option<u32>,
}

/// The counters at one instant, for one CPU.
#[derive(Debug, Clone, Default)]
pub(super) struct Snap {
    /// Row name ("38", "LOC") → (count on the CPU, action or description).
    pub(super) irqs: BTreeMap<String, (u64, String)>,
    pub(super) softirqs: BTreeMap<String, u64>,
    pub(super) tasks: HashMap<u32, TaskSnap>,
    /// Involuntary context switches of this process's SCHED_FIFO threads (the RT loop preempted).
    pub(super) rt_preempted: u64,
    /// Loop wakeups so far (the count plus missed of every loop on the CPU).
    pub(super) wakeups: u64,
    /// Row name ("CAL") → interrupts rmp-eval sent to the CPU so far, counted where it sent them.
    pub(super) own: BTreeMap<String, u64>,
}

/// The counters of `cpu` now; `live`: the counters of the loops on it, for their wakeups.
pub(super) fn snap(host: &Host, cpu: usize, live: &[Arc<Live>]) -> Snap {
    let mut s = Snap::default();
    if let Some(i) = host
        .read(INTERRUPTS)
        .ok()
        .and_then(|t| interrupts::parse(&t).ok())
        && let Some(col) = i.column(cpu)
    {
        for r in &i.rows {
            if let Some(&n) = r.counts.get(col) {
                let what = if r.irq().is_some() {
                    r.actions().join(",")
                } else {
                    r.desc.clone()
                };
                s.irqs.insert(r.name.clone(), (n, what));
            }
        }
    }
    if let Some(t) = host
        .read(SOFTIRQS)
        .ok()
        .and_then(|t| softirqs::parse(&t).ok())
    {
        s.softirqs = t
            .on_cpu(cpu)
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect();
    }
    add_threads(host, cpu, &mut s);
    s.wakeups = live
        .iter()
        .map(|l| l.count.load(Relaxed) + l.missed.load(Relaxed))
        .sum();
    s
}

/// The rows of /proc/interrupts another CPU sends: a wakeup, a function call, a TLB shootdown, an irq_work.
const IPI_ROWS: [&str; 4] = ["RES", "CAL", "TLB", "IWI"];

/// Each of `cpus`'s counts of the `IPI_ROWS` now (a row the kernel does not have is left out).
pub(super) fn ipis(host: &Host, cpus: &[usize]) -> Vec<BTreeMap<String, u64>> {
    let table = host
        .read(INTERRUPTS)
        .ok()
        .and_then(|t| interrupts::parse(&t).ok());
    cpus.iter()
        .map(|&cpu| {
            let (Some(t), Some(col)) = (&table, table.as_ref().and_then(|t| t.column(cpu))) else {
                return BTreeMap::new();
            };
            t.rows
                .iter()
                .filter(|r| IPI_ROWS.contains(&r.name.as_str()))
                .filter_map(|r| Some((r.name.clone(), *r.counts.get(col)?)))
                .collect()
        })
        .collect()
}

/// The other threads seen on `cpu` (by their stat's last CPU) with their run time, and the preemptions of our
/// own RT threads.
fn add_threads(host: &Host, cpu: usize, s: &mut Snap) {
    let own = std::process::id();
    for pid in host.list(PROC).unwrap_or_default() {
        let Ok(pid_n) = pid.parse::<u32>() else {
            continue;
        };
        for tid in host.list(&format!("{PROC}/{pid}/task")).unwrap_or_default() {
            add_thread(
                host,
                &format!("{PROC}/{pid}/task/{tid}"),
                pid_n == own,
                pid_n,
                cpu,
                s,
            );
        }
    }
}

/// One thread (`base`: its /proc directory) of process `pid`; `own`: one of ours.
fn add_thread(host: &Host, base: &str, own: bool, pid: u32, cpu: usize, s: &mut Snap) {
    let Some(st) = host
        .read_bytes(&format!("{base}/stat"))
        .ok()
        .and_then(|b| crate::parse::task::stat(&b))
    else {
        return;
    };
    let Some(task_cpu) = st.processor.and_then(|p| usize::try_from(p).ok()) else {
        return;
    };
    if own {
        // Our own threads are the measurement, not interference; the RT ones count their preemptions.
        if st.policy == Some(libc::SCHED_FIFO as u32)
            && let Some(n) = host
                .read_bytes(&format!("{base}/status"))
                .ok()
                .and_then(|b| Status::from_read(&b[..]).ok())
                .and_then(|x| x.nonvoluntary_ctxt_switches)
        {
            s.rt_preempted += n;
        }
        return;
    }
    // Only threads seen on the CPU need their run time (halves the reads).
    if task_cpu != cpu {
        return;
    }
    let Some(ss) = host
        .read_bytes(&format!("{base}/schedstat"))
        .ok()
        .and_then(|b| Schedstat::from_read(&b[..]).ok())
    else {
        return;
    };
    s.tasks.insert(
        st.pid as u32,
        TaskSnap {
            pid,
            comm: st.comm.clone(),
            cpu: task_cpu,
            run_ns: ss.sum_exec_runtime,
            slices: ss.pcount,
            rt: rt_prio(&st),
        },
    );
}

/// The SCHED_FIFO/SCHED_RR priority of a thread, None for other policies.
fn rt_prio(st: &Stat) -> Option<u32> {
    let p = st.policy?;
    (p == libc::SCHED_FIFO as u32 || p == libc::SCHED_RR as u32).then_some(st.rt_priority?)
}

/// What changed between two snapshots: the window's sources (LOC and arch_timer are left to the tick count).
pub(super) fn diff(a: &Snap, b: &Snap, secs: f64) -> Window {
    let mut sources = Vec::new();
    let mut local_timer = 0;
    for (name, (n, what)) in &b.irqs {
        let d = n.saturating_sub(a.irqs.get(name).map_or(0, |x| x.0));
        if d == 0 {
            continue;
        }
        if name == "LOC" || what.contains("arch_timer") {
            local_timer += d;
            continue;
        }
        let numbered = name.bytes().all(|c| c.is_ascii_digit());
        // What rmp-eval sent is its own source; the row keeps the rest (the counts cannot go below what it sent).
        let own = b.own.get(name).copied().unwrap_or(0);
        let own = own
            .saturating_sub(a.own.get(name).copied().unwrap_or(0))
            .min(d);
        if own > 0 {
            sources.push(Source::new(SourceKind::Own, name.clone(), None, own, secs));
        }
        let d = d - own;
        if d == 0 {
            continue;
        }
        sources.push(Source::new(
            if numbered {
                SourceKind::Irq
            } else {
                SourceKind::Interrupt
            },
            if numbered { what.clone() } else { name.clone() },
            numbered.then(|| name.parse().unwrap_or(0)),
            d,
            secs,
        ));
    }
    for (name, n) in &b.softirqs {
        let d = n.saturating_sub(a.softirqs.get(name).copied().unwrap_or(0));
        if d > 0 {
            sources.push(Source::new(
                SourceKind::Softirq,
                name.clone(),
                None,
                d,
                secs,
            ));
        }
    }
    for (tid, t) in &b.tasks {
        // A thread that was elsewhere at the previous snapshot came to the CPU during the window: its run time
        // since then is unknown (only threads on the CPU are read), so it counts as seen once.
        let (count, ran_ms) = match a.tasks.get(tid) {
            Some(p) if t.run_ns > p.run_ns => (
                t.slices.saturating_sub(p.slices),
                Some((t.run_ns - p.run_ns) as f64 / 1e6),
            ),
            Some(_) => continue,
            None => (1, None),
        };
        let mut s = Source::new(
            SourceKind::Thread,
            t.comm.clone(),
            Some(u64::from(*tid)),
            count,
            secs,
        );
        s.pid = Some(t.pid);
        s.ran_ms = ran_ms;
        s.rt_priority = t.rt;
        sources.push(s);
    }
    report::rank(&mut sources);
    Window {
        seconds: secs,
        sources,
        local_timer,
        loop_wakeups: b.wakeups.saturating_sub(a.wakeups),
        rt_preempted: b.rt_preempted.saturating_sub(a.rt_preempted),
        ..Default::default()
    }
}
