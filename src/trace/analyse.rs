//! One late cycle explained from the trace of the window before it (the RT CPU's events from the previous cycle's
//! marker to this cycle's): who had the CPU between the deadline and the moment the RT thread ran, nested the way
//! the kernel nests them (a task, interrupted by an IRQ, which raised a softirq …), each with its time inside
//! [deadline, wakeup], and a verdict naming the largest and its remedy.

use super::model::verdict;
pub use super::model::{Culprit, Explanation, Kind, Mark, Step, mark};
use crate::measure::cause;
use crate::parse::ftrace::{self, Line};

/// Who holds the CPU: the task at the bottom, interrupts and softirqs nested on it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Holder {
    kind: Kind,
    name: String,
    id: Option<u64>,
    prio: Option<String>,
}

const TIMELINE_MAX: usize = 60;

fn prio_text(kernel_prio: i64) -> String {
    match kernel_prio {
        p if p < 0 => "DEADLINE".into(),
        p if p < 100 => format!("FIFO/RR {}", 99 - p),
        _ => "normal".into(),
    }
}

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
    let mut stack = vec![Holder {
        kind: Kind::Thread,
        name: first.comm.to_string(),
        id: Some(u64::from(first.pid)),
        prio: None,
    }];
    let mut segments: Vec<(Holder, u64, u64)> = Vec::new();
    let (mut timer_at, mut woken_at, mut running_at) = (None, None, None);
    let mut last_hrtimer: Option<(u64, bool)> = None;
    let mut last_t = first.ts_ns;
    let mut timeline = Vec::new();
    // The timeline starts at the last context switch before the deadline (what was running then).
    let start = lines[..=mi]
        .iter()
        .rev()
        .find(|l| l.event == "sched_switch" && l.ts_ns <= d)
        .map_or(first.ts_ns, |l| l.ts_ns);
    // Priorities seen in wakeups and switches, for a task whose switch-in was lost.
    let mut prios: std::collections::HashMap<u64, String> = Default::default();
    let mut at_deadline: Option<Holder> = None;
    for l in &lines[..=mi] {
        // Every line names the task that had the CPU (interrupt lines name the task they interrupted): when it is
        // not the one the last sched_switch named, events were lost; the line is the truth.
        if stack[0].id != Some(u64::from(l.pid)) && l.event != "sched_switch" {
            let id = u64::from(l.pid);
            stack.truncate(1);
            stack[0] = Holder {
                kind: Kind::Thread,
                name: l.comm.to_string(),
                id: Some(id),
                prio: prios.get(&id).cloned(),
            };
        }
        if l.ts_ns > d && at_deadline.is_none() {
            at_deadline = Some(stack[0].clone());
        }
        let (a, b) = (last_t.max(d), l.ts_ns.min(w));
        if b > a {
            segments.push((
                stack.last().expect("the task is never popped").clone(),
                a,
                b,
            ));
        }
        last_t = l.ts_ns;
        let f = ftrace::fields(l.body);
        let mut note: Option<String> = None;
        match l.event {
            "sched_switch" => {
                let pid = ftrace::num(&f, "next_pid");
                let prio = ftrace::get(&f, "next_prio").and_then(|p| p.parse::<i64>().ok());
                stack.truncate(1);
                stack[0] = Holder {
                    kind: Kind::Thread,
                    name: ftrace::get(&f, "next_comm").unwrap_or("?").to_string(),
                    id: pid,
                    prio: prio.map(prio_text),
                };
                if pid == Some(u64::from(rt.pid)) && l.ts_ns >= d {
                    running_at.get_or_insert(l.ts_ns);
                }
                note = Some(format!(
                    "switch {} ({}) → {} ({}{})",
                    ftrace::get(&f, "prev_comm").unwrap_or("?"),
                    ftrace::get(&f, "prev_pid").unwrap_or("?"),
                    stack[0].name,
                    pid.unwrap_or(0),
                    stack[0]
                        .prio
                        .as_deref()
                        .map(|p| format!(", {p}"))
                        .unwrap_or_default()
                ));
            }
            "sched_wakeup" | "sched_waking" => {
                if let (Some(pid), Some(p)) = (
                    ftrace::num(&f, "pid"),
                    ftrace::get(&f, "prio").and_then(|p| p.parse::<i64>().ok()),
                ) {
                    prios.insert(pid, prio_text(p));
                }
                if ftrace::num(&f, "pid") == Some(u64::from(rt.pid)) && l.ts_ns + 1000 >= d {
                    if l.event == "sched_wakeup" {
                        woken_at.get_or_insert(l.ts_ns);
                    }
                    if let Some((t, true)) = last_hrtimer {
                        timer_at.get_or_insert(t);
                    }
                    note = Some(format!("{} {}", l.event, rt.comm));
                }
            }
            "irq_handler_entry" => {
                let name = ftrace::get(&f, "name").unwrap_or("?").to_string();
                note = Some(format!(
                    "IRQ {} ({name}) enters",
                    ftrace::get(&f, "irq").unwrap_or("?")
                ));
                stack.push(Holder {
                    kind: Kind::Irq,
                    name,
                    id: ftrace::num(&f, "irq"),
                    prio: None,
                });
            }
            "softirq_entry" => {
                let name = ftrace::get(&f, "action").unwrap_or("?").to_string();
                note = Some(format!("softirq {name} enters"));
                stack.push(Holder {
                    kind: Kind::Softirq,
                    name,
                    id: None,
                    prio: None,
                });
            }
            "hrtimer_expire_entry" => {
                let func = ftrace::get(&f, "function").unwrap_or("?").to_string();
                last_hrtimer = Some((l.ts_ns, func == "hrtimer_wakeup"));
                note = Some(format!("hrtimer {func}"));
                stack.push(Holder {
                    kind: Kind::Timer,
                    name: func,
                    id: None,
                    prio: None,
                });
            }
            "ipi_entry" => {
                let name = l.body.trim_matches(|c| c == '(' || c == ')').to_string();
                note = Some(format!("IPI {name}"));
                stack.push(Holder {
                    kind: Kind::Interrupt,
                    name,
                    id: None,
                    prio: None,
                });
            }
            ev if ev.ends_with("_entry") && !ev.starts_with("tasklet") => {
                let name = ev.trim_end_matches("_entry").to_string();
                note = Some(format!("{name} interrupt"));
                stack.push(Holder {
                    kind: Kind::Interrupt,
                    name,
                    id: None,
                    prio: None,
                });
            }
            ev if ev.ends_with("_exit") || ev == "ipi_exit" => {
                let kind = match ev {
                    "irq_handler_exit" => Kind::Irq,
                    "softirq_exit" => Kind::Softirq,
                    "hrtimer_expire_exit" => Kind::Timer,
                    _ => Kind::Interrupt,
                };
                if stack.len() > 1 && stack.last().is_some_and(|h| h.kind == kind) {
                    stack.pop();
                }
            }
            "tracing_mark_write" if std::ptr::eq(l, rt) => {
                note = Some(format!(
                    "{} marks cycle {} (late {:.1} µs)",
                    rt.comm,
                    m.cycle,
                    m.lat_ns as f64 / 1000.0
                ));
            }
            _ => {}
        }
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
    let mut culprits: Vec<Culprit> = ran
        .into_iter()
        .map(|(h, ns)| Culprit {
            remedy: match h.kind {
                Kind::Thread => cause::for_task(&h.name),
                Kind::Irq => cause::for_irq(),
                Kind::Softirq => cause::for_softirq(&h.name),
                Kind::Interrupt => cause::for_arch(&h.name),
                Kind::Timer if h.name.starts_with("tick") => cause::for_arch("tick"),
                Kind::Timer => cause::for_arch(&h.name),
            },
            kind: h.kind,
            name: h.name,
            id: h.id,
            prio: h.prio,
            ran_us: ns as f64 / 1000.0,
        })
        .collect();
    culprits.sort_by(|a, b| b.ran_us.total_cmp(&a.ran_us));
    let late_us = m.lat_ns as f64 / 1000.0;
    let idle_us = idle_ns as f64 / 1000.0;
    let holder = at_deadline.filter(|h| h.id != Some(0)).map(|h| Culprit {
        kind: h.kind,
        remedy: cause::for_task(&h.name),
        name: h.name,
        id: h.id,
        prio: h.prio,
        ran_us: 0.0,
    });
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
    })
}

#[cfg(test)]
#[path = "analyse_tests.rs"]
mod tests;
