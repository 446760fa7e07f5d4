//! Interference counters on the RT core, read from files by the supervising thread (never by the RT loop) once a
//! second: device IRQs and architecture interrupts (/proc/interrupts), softirqs (/proc/softirqs), and the other
//! threads that ran there (/proc/PID/task/TID/stat's last CPU and schedstat's run time and timeslices). Each
//! 1-s window is a difference of two snapshots; the run's totals and the window that held the worst wakeup are
//! reported, each source with its remedy (measure::cause). Works on any kernel, without tracefs.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use procfs_core::FromRead;
use procfs_core::process::{Schedstat, Stat, Status};

use super::interference_report::{Interference, Source, SourceKind, Window};
use super::result::RunResult;
use super::series::Live;
use super::session::{Action, Gauges, Watch};
use crate::host::Host;
use crate::parse::{interrupts, softirqs};

pub(crate) const PROC_INTERRUPTS: &str = "/proc/interrupts";
pub(crate) const PROC_SOFTIRQS: &str = "/proc/softirqs";
const PROC: &str = "/proc";
/// The window length.
pub(crate) const WINDOW: Duration = Duration::from_secs(1);

/// One thread as last seen.
#[derive(Debug, Clone, PartialEq)]
struct TaskSnap {
    pid: u32,
    comm: String,
    cpu: usize,
    run_ns: u64,
    slices: u64,
    /// SCHED_FIFO/RR priority, for RT threads.
    rt: Option<u32>,
}

/// The counters at one instant, for one CPU.
#[derive(Debug, Clone, Default)]
struct Snap {
    /// Row name ("38", "LOC") → (count on the CPU, action or description).
    irqs: BTreeMap<String, (u64, String)>,
    softirqs: BTreeMap<String, u64>,
    tasks: HashMap<u32, TaskSnap>,
    /// Involuntary context switches of this process's SCHED_FIFO threads (the RT loop preempted).
    rt_preempted: u64,
    /// Loop wakeups so far (the series' count plus missed).
    wakeups: u64,
}

fn snap(host: &Host, cpu: usize, live: Option<&Live>) -> Snap {
    let mut s = Snap::default();
    if let Some(i) = host
        .read(PROC_INTERRUPTS)
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
        .read(PROC_SOFTIRQS)
        .ok()
        .and_then(|t| softirqs::parse(&t).ok())
    {
        s.softirqs = t
            .on_cpu(cpu)
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect();
    }
    let own = std::process::id();
    for pid in host.list(PROC).unwrap_or_default() {
        let Ok(pid_n) = pid.parse::<u32>() else {
            continue;
        };
        for tid in host.list(&format!("{PROC}/{pid}/task")).unwrap_or_default() {
            let base = format!("{PROC}/{pid}/task/{tid}");
            let Some(st) = host
                .read_bytes(&format!("{base}/stat"))
                .ok()
                .and_then(|b| crate::parse::task::stat(&b))
            else {
                continue;
            };
            let Some(task_cpu) = st.processor.and_then(|p| usize::try_from(p).ok()) else {
                continue;
            };
            if pid_n == own {
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
                continue;
            }
            // Only threads seen on the CPU need their run time (halves the reads).
            if task_cpu != cpu {
                continue;
            }
            let Some(ss) = host
                .read_bytes(&format!("{base}/schedstat"))
                .ok()
                .and_then(|b| Schedstat::from_read(&b[..]).ok())
            else {
                continue;
            };
            s.tasks.insert(
                st.pid as u32,
                TaskSnap {
                    pid: pid_n,
                    comm: st.comm.clone(),
                    cpu: task_cpu,
                    run_ns: ss.sum_exec_runtime,
                    slices: ss.pcount,
                    rt: rt_prio(&st),
                },
            );
        }
    }
    if let Some(l) = live {
        s.wakeups = l.count.load(Relaxed) + l.missed.load(Relaxed);
    }
    s
}

/// The SCHED_FIFO/SCHED_RR priority of a thread, None for other policies.
fn rt_prio(st: &Stat) -> Option<u32> {
    let p = st.policy?;
    (p == libc::SCHED_FIFO as u32 || p == libc::SCHED_RR as u32).then_some(st.rt_priority?)
}

/// What changed between two snapshots: the window's sources (LOC and arch_timer are left to the tick count).
fn diff(a: &Snap, b: &Snap, secs: f64) -> Window {
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
    super::interference_report::rank(&mut sources);
    Window {
        seconds: secs,
        sources,
        local_timer,
        loop_wakeups: b.wakeups.saturating_sub(a.wakeups),
        rt_preempted: b.rt_preempted.saturating_sub(a.rt_preempted),
        ..Default::default()
    }
}

/// The sampler the supervising thread ticks.
pub(crate) struct Counters {
    host: Host,
    cpu: usize,
    live: Option<Arc<Live>>,
    start: Instant,
    last: Option<(Instant, Snap)>,
    worst_seen: u64,
    /// Never samples (`run --no-counters`, to measure their cost).
    off: bool,
    pub(crate) report: Interference,
}

impl Counters {
    pub(crate) fn new(host: &Host, cpu: usize) -> Self {
        Counters {
            host: host.clone(),
            cpu,
            live: None,
            start: Instant::now(),
            last: None,
            worst_seen: 0,
            off: false,
            report: Interference {
                cpu,
                ..Default::default()
            },
        }
    }

    /// Counters that never sample.
    pub(crate) fn off(mut self) -> Self {
        self.off = true;
        self
    }

    /// The loop started: take the first snapshot. `live` is the RT series' counters (worst wakeup, count).
    pub(crate) fn begin(&mut self, live: Option<Arc<Live>>) {
        if self.off {
            return;
        }
        self.live = live;
        self.start = Instant::now();
        self.last = Some((self.start, snap(&self.host, self.cpu, self.live.as_deref())));
    }

    /// Closes a window when one has passed (or `force`, at the end).
    pub(crate) fn tick(&mut self, force: bool) {
        let Some((at, prev)) = &self.last else { return };
        let now = Instant::now();
        let secs = now.duration_since(*at).as_secs_f64();
        if !force && now.duration_since(*at) < WINDOW || secs <= 0.0 {
            return;
        }
        let next = snap(&self.host, self.cpu, self.live.as_deref());
        let mut w = diff(prev, &next, secs);
        w.index = self.report.windows;
        w.start_s = at.duration_since(self.start).as_secs_f64();
        let worst = self
            .live
            .as_ref()
            .map_or(0, |l| l.max_wakeup_ns.load(Relaxed));
        if worst > self.worst_seen {
            self.worst_seen = worst;
            w.worst_wakeup_us = Some(worst as f64 / 1000.0);
            self.report.worst_window = Some(w.clone());
        }
        self.report.add(&w);
        self.last = Some((now, next));
    }
}

/// A `Watch` that also closes the counters' windows: the supervising thread's ticks drive both.
pub(crate) struct Counting<'a> {
    pub(crate) inner: &'a mut dyn Watch,
    pub(crate) counters: Counters,
}

impl Watch for Counting<'_> {
    fn note(&mut self, text: &str) {
        self.inner.note(text);
    }
    fn start(&mut self, gauges: Gauges) {
        self.counters
            .begin(gauges.series.first().map(|s| Arc::clone(&s.1)));
        self.inner.start(gauges);
    }
    fn interval(&self) -> Duration {
        self.inner.interval().min(WINDOW)
    }
    fn tick(&mut self, elapsed: Duration) -> Action {
        self.counters.tick(false);
        self.inner.tick(elapsed)
    }
    fn end(&mut self) {
        self.counters.tick(true);
        self.inner.end();
    }
    fn checkpoint(&mut self, partial: &RunResult) {
        self.inner.checkpoint(partial);
    }
}

#[cfg(test)]
#[path = "interference_tests.rs"]
mod tests;
