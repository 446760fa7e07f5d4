//! One late cycle explained from the trace of the window before it (the RT CPU's events from the previous cycle's
//! marker to this cycle's): who had the CPU between the deadline and the moment the RT thread ran, nested the way
//! the kernel nests them (a task, interrupted by an IRQ, which raised a softirq …), each with its time inside
//! [deadline, wakeup], and a verdict naming the largest and its remedy.

use super::event::{Event, Softirq, TraceEntry, What, events, softirq_name};
use super::model::Mark;
use super::model::verdict;
pub(crate) use super::model::{Culprit, Explanation, Kind, TimelineStep};
use super::walk::{Holder, Walk};

const TIMELINE_MAX: usize = 60;

/// What one pass over the window saw: who held the CPU when, and the moments the RT thread's wakeup went through.
struct Replay {
    segments: Vec<(Holder, u64, u64)>,
    timer_at: Option<u64>,
    woken_at: Option<u64>,
    running_at: Option<u64>,
    at_deadline: Option<Holder>,
    timeline: Vec<TimelineStep>,
    last_hrtimer: Option<(u64, bool)>,
}

/// The marker's own view of one window: the RT thread's marker event, its mark, and the deadline `d` and wakeup `w`
/// in trace time.
struct Window<'a> {
    rt: &'a Event,
    m: Mark,
    d: u64,
    w: u64,
}

impl Window<'_> {
    fn rel(&self, t: u64) -> f64 {
        (t as f64 - self.d as f64) / 1000.0
    }
}

/// The events on `core`, in order.
fn on_cpu(entries: &[TraceEntry], core: usize) -> Vec<&Event> {
    events(entries).filter(|l| l.cpu == core).collect()
}

/// The deadline in trace time: the marker's dl when the trace clock is CLOCK_MONOTONIC (as set), else W − lat.
pub(crate) fn deadline(m: &Mark, w: u64) -> u64 {
    if m.deadline_ns <= w && w - m.deadline_ns < m.lat_ns + 1_000_000 {
        m.deadline_ns
    } else {
        w.saturating_sub(m.lat_ns)
    }
}

/// Walks `lines` (up to and including the marker) once, recording who held the CPU inside [d, w] and the timeline.
fn replay(lines: &[&Event], win: &Window) -> Option<Replay> {
    let first = lines.first()?;
    let mut walk = Walk::new(first);
    // The timeline starts at the last context switch before the deadline (what was running then).
    let start = lines
        .iter()
        .rev()
        .find(|l| matches!(l.what, What::Switch { .. }) && l.ts_ns <= win.d)
        .map_or(first.ts_ns, |l| l.ts_ns);
    let mut r = Replay {
        segments: Vec::new(),
        timer_at: None,
        woken_at: None,
        running_at: None,
        at_deadline: None,
        timeline: Vec::new(),
        last_hrtimer: None,
    };
    for &l in lines {
        let (held, from, to) = walk.span(l);
        if l.ts_ns > win.d && r.at_deadline.is_none() {
            r.at_deadline = Some(walk.task().clone());
        }
        let (a, b) = (from.max(win.d), to.min(win.w));
        if b > a {
            r.segments.push((held, a, b));
        }
        walk.apply(l);
        let note = r.note(l, &walk, win);
        if let (Some(n), true) = (note, l.ts_ns >= start && r.timeline.len() < TIMELINE_MAX) {
            r.timeline.push(TimelineStep {
                at_us: win.rel(l.ts_ns),
                what: n,
            });
        }
    }
    Some(r)
}

impl Replay {
    /// The timeline's words for one event (None for events it leaves out), noting the RT thread's wakeup moments.
    fn note(&mut self, l: &Event, walk: &Walk, win: &Window) -> Option<String> {
        let (rt, d) = (win.rt, win.d);
        match &l.what {
            What::Switch { prev, .. } => {
                let t = walk.task();
                if t.id == Some(u64::from(rt.pid)) && l.ts_ns >= d {
                    self.running_at.get_or_insert(l.ts_ns);
                }
                Some(format!(
                    "switch {} ({}) → {} ({}{})",
                    prev.comm,
                    prev.pid,
                    t.name,
                    t.id.unwrap_or(0),
                    t.prio
                        .as_deref()
                        .map(|p| format!(", {p}"))
                        .unwrap_or_default()
                ))
            }
            What::Wakeup { waking, task, .. } if task.pid == rt.pid && l.ts_ns + 1000 >= d => {
                if !waking {
                    self.woken_at.get_or_insert(l.ts_ns);
                }
                if let Some((t, true)) = self.last_hrtimer {
                    self.timer_at.get_or_insert(t);
                }
                Some(format!("{} {}", l.name(), rt.comm))
            }
            What::TimerEntry { function, .. } => {
                self.last_hrtimer = Some((l.ts_ns, function == "hrtimer_wakeup"));
                Some(format!("hrtimer {function}"))
            }
            What::Mark(_) if std::ptr::eq(l, rt) => Some(format!(
                "{} marks cycle {} (late {:.1} µs)",
                rt.comm,
                win.m.cycle,
                win.m.lat_ns as f64 / 1000.0
            )),
            what => interrupt_note(what),
        }
    }
}

/// The timeline's words for an interrupt-like event.
fn interrupt_note(what: &What) -> Option<String> {
    match what {
        What::IrqEntry { irq, name } => Some(format!("IRQ {irq} ({name}) enters")),
        What::Softirq {
            at: Softirq::Entry,
            vec,
        } => Some(format!("softirq {} enters", softirq_name(*vec))),
        What::Ipi {
            entry: true,
            reason,
        } => Some(format!("IPI {reason}")),
        What::Vector {
            name, entry: true, ..
        } => Some(format!("{name} interrupt")),
        _ => None,
    }
}

/// Time each holder kept the RT thread from running, largest first, and the time the CPU was idle.
/// Until the RT thread's timer `fired`, only interrupt handlers can have held it back (a thread, even at a higher
/// priority, is preempted by the timer interrupt); from then on, whatever had the CPU kept it from running.
fn blame(
    segments: Vec<(Holder, u64, u64)>,
    fired: u64,
    rt_pid: Option<u64>,
) -> (Vec<Culprit>, u64) {
    let mut ran: std::collections::BTreeMap<Holder, u64> = Default::default();
    let mut idle_ns = 0u64;
    for (h, a, b) in segments {
        let is_task = h.kind == Kind::Thread;
        if is_task && h.id == Some(0) {
            idle_ns += b - a;
            continue;
        }
        if is_task && h.id == rt_pid {
            continue;
        }
        let a = if matches!(h.kind, Kind::Thread | Kind::Softirq) {
            a.max(fired)
        } else {
            a
        };
        if b > a {
            *ran.entry(h).or_default() += b - a;
        }
    }
    let mut culprits: Vec<Culprit> = ran.into_iter().map(|(h, ns)| h.culprit(ns)).collect();
    culprits.sort_by(|a, b| b.ran_us.total_cmp(&a.ran_us));
    (culprits, idle_ns)
}

/// Explains the last rmp-eval marker of a window (one CPU's). None when the window holds no marker.
pub(crate) fn explain(entries: &[TraceEntry], core: usize) -> Option<Explanation> {
    let lines = on_cpu(entries, core);
    let (mi, m) = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, l)| l.mark().map(|m| (i, m)))?;
    let rt = lines[mi];
    let w = rt.ts_ns;
    let win = Window {
        rt,
        d: deadline(&m, w),
        w,
        m,
    };
    let r = replay(&lines[..=mi], &win)?;
    let fired = r.timer_at.unwrap_or(win.d).clamp(win.d, w);
    let (culprits, idle_ns) = blame(r.segments, fired, Some(u64::from(rt.pid)));
    let late_us = win.m.lat_ns as f64 / 1000.0;
    let idle_us = idle_ns as f64 / 1000.0;
    let holder = r
        .at_deadline
        .filter(|h| h.id != Some(0))
        .map(|h| h.culprit(0));
    let rel = |t: u64| win.rel(t);
    let verdict = verdict(
        core,
        late_us,
        idle_us,
        &culprits,
        r.timer_at.map(rel),
        holder.as_ref(),
    );
    Some(Explanation {
        cycle: win.m.cycle,
        late_us,
        cpu: core,
        timer_us: r.timer_at.map(rel),
        woken_us: r.woken_at.map(rel),
        running_us: r.running_at.map(rel),
        idle_us,
        culprits,
        timeline: r.timeline,
        verdict,
        path: None,
        lost: None,
    })
}

#[cfg(test)]
mod tests;
