//! One late cycle explained from the trace of the window before it (the RT CPU's events from the previous cycle's
//! marker to this cycle's): who had the CPU between the deadline and the moment the RT thread ran, nested the way
//! the kernel nests them (a task, interrupted by an IRQ, which raised a softirq …), each with its time inside
//! [deadline, wakeup], and a verdict naming the largest and its remedy.

use super::model::verdict;
pub use super::model::{Culprit, Explanation, Kind, Step, mark};
use super::walk::{Holder, Walk};
use crate::parse::ftrace::{self, Line};

const TIMELINE_MAX: usize = 60;

/// Explains the last rmp-eval marker of `text` (one window, one CPU). None when the window holds no marker.
pub fn explain(text: &str, core: usize) -> Option<Explanation> {
    let lines: Vec<Line> = text
        .lines()
        .filter_map(ftrace::parse_line)
        .filter(|l| l.cpu == core)
        .collect();
    let (mi, m) = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, l)| mark(l).map(|m| (i, m)))?;
    let rt = &lines[mi];
    let w = rt.ts_ns;
    // The deadline in trace time: the marker's dl when the trace clock is CLOCK_MONOTONIC (as set), else W − lat.
    let d = if m.deadline_ns <= w && w - m.deadline_ns < m.lat_ns + 1_000_000 {
        m.deadline_ns
    } else {
        w.saturating_sub(m.lat_ns)
    };
    let rel = |t: u64| (t as f64 - d as f64) / 1000.0;
    let first = lines.first()?;
    let mut walk = Walk::new(first);
    let mut segments: Vec<(Holder, u64, u64)> = Vec::new();
    let (mut timer_at, mut woken_at, mut running_at) = (None, None, None);
    let mut last_hrtimer: Option<(u64, bool)> = None;
    let mut timeline = Vec::new();
    // The timeline starts at the last context switch before the deadline (what was running then).
    let start = lines[..=mi]
        .iter()
        .rev()
        .find(|l| l.event == "sched_switch" && l.ts_ns <= d)
        .map_or(first.ts_ns, |l| l.ts_ns);
    let mut at_deadline: Option<Holder> = None;
    for l in &lines[..=mi] {
        let (held, from, to) = walk.span(l);
        if l.ts_ns > d && at_deadline.is_none() {
            at_deadline = Some(walk.task().clone());
        }
        let (a, b) = (from.max(d), to.min(w));
        if b > a {
            segments.push((held, a, b));
        }
        let f = ftrace::fields(l.body);
        walk.apply(l, &f);
        let note: Option<String> = match l.event {
            "sched_switch" => {
                let t = walk.task();
                if t.id == Some(u64::from(rt.pid)) && l.ts_ns >= d {
                    running_at.get_or_insert(l.ts_ns);
                }
                Some(format!(
                    "switch {} ({}) → {} ({}{})",
                    ftrace::get(&f, "prev_comm").unwrap_or("?"),
                    ftrace::get(&f, "prev_pid").unwrap_or("?"),
                    t.name,
                    t.id.unwrap_or(0),
                    t.prio
                        .as_deref()
                        .map(|p| format!(", {p}"))
                        .unwrap_or_default()
                ))
            }
            "sched_wakeup" | "sched_waking"
                if ftrace::num(&f, "pid") == Some(u64::from(rt.pid)) && l.ts_ns + 1000 >= d =>
            {
                if l.event == "sched_wakeup" {
                    woken_at.get_or_insert(l.ts_ns);
                }
                if let Some((t, true)) = last_hrtimer {
                    timer_at.get_or_insert(t);
                }
                Some(format!("{} {}", l.event, rt.comm))
            }
            "irq_handler_entry" => Some(format!(
                "IRQ {} ({}) enters",
                ftrace::get(&f, "irq").unwrap_or("?"),
                ftrace::get(&f, "name").unwrap_or("?")
            )),
            "softirq_entry" => Some(format!(
                "softirq {} enters",
                ftrace::get(&f, "action").unwrap_or("?")
            )),
            "hrtimer_expire_entry" => {
                let func = ftrace::get(&f, "function").unwrap_or("?");
                last_hrtimer = Some((l.ts_ns, func == "hrtimer_wakeup"));
                Some(format!("hrtimer {func}"))
            }
            "ipi_entry" => Some(format!(
                "IPI {}",
                l.body.trim_matches(|c| c == '(' || c == ')')
            )),
            ev if ev.ends_with("_entry") && !ev.starts_with("tasklet") => {
                Some(format!("{} interrupt", ev.trim_end_matches("_entry")))
            }
            "tracing_mark_write" if std::ptr::eq(l, rt) => Some(format!(
                "{} marks cycle {} (late {:.1} µs)",
                rt.comm,
                m.cycle,
                m.lat_ns as f64 / 1000.0
            )),
            _ => None,
        };
        if let (Some(n), true) = (note, l.ts_ns >= start && timeline.len() < TIMELINE_MAX) {
            timeline.push(Step {
                at_us: rel(l.ts_ns),
                what: n,
            });
        }
    }
    // Until the RT thread's timer fired, only interrupt handlers can have held it back (a thread, even at a higher
    // priority, is preempted by the timer interrupt); from then on, whatever had the CPU kept it from running.
    let fired = timer_at.unwrap_or(d).clamp(d, w);
    let rt_pid = Some(u64::from(rt.pid));
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
    let late_us = m.lat_ns as f64 / 1000.0;
    let idle_us = idle_ns as f64 / 1000.0;
    let holder = at_deadline
        .filter(|h| h.id != Some(0))
        .map(|h| h.culprit(0));
    let verdict = verdict(
        core,
        late_us,
        idle_us,
        &culprits,
        timer_at.map(rel),
        holder.as_ref(),
    );
    Some(Explanation {
        cycle: m.cycle,
        late_us,
        cpu: core,
        timer_us: timer_at.map(rel),
        woken_us: woken_at.map(rel),
        running_us: running_at.map(rel),
        idle_us,
        culprits,
        timeline,
        verdict,
        path: None,
        lost: None,
    })
}

#[cfg(test)]
mod tests;
