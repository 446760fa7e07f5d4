//! One late cycle explained from the trace of the window before it (the RT CPU's events from the previous cycle's
//! marker to this cycle's): who had the CPU between the deadline and the moment the RT thread ran, nested the way
//! the kernel nests them (a task, interrupted by an IRQ, which raised a softirq …), each with its time inside
//! [deadline, wakeup], and a verdict naming the largest and its remedy.

use serde::{Deserialize, Serialize};

use crate::measure::cause::{self, Remedy};
use crate::parse::ftrace::{self, Line};

/// What held the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Thread,
    Irq,
    Softirq,
    /// An architecture interrupt (x86 irq_vectors: local_timer, reschedule, call_function …; arm64 IPIs).
    Interrupt,
    /// An hrtimer callback (the tick, a thread's timer).
    Timer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    pub kind: Kind,
    /// Thread name, IRQ action, softirq type, interrupt or timer function.
    pub name: String,
    /// PID or IRQ number.
    pub id: Option<u64>,
    /// "FIFO 90", "normal" — threads only.
    pub prio: Option<String>,
    /// Time it held the CPU between the deadline and the RT thread running.
    pub ran_us: f64,
    pub remedy: Remedy,
}

impl Culprit {
    pub fn describe(&self) -> String {
        match (self.kind, self.id) {
            (Kind::Thread, Some(pid)) => match &self.prio {
                Some(p) => format!("{} (pid {pid}, {p})", self.name),
                None => format!("{} (pid {pid})", self.name),
            },
            (Kind::Irq, Some(n)) => format!("IRQ {n} ({})", self.name),
            (Kind::Softirq, _) => format!("softirq {}", self.name),
            (Kind::Timer, _) => format!("timer {}", self.name),
            _ => format!("{} interrupt", self.name),
        }
    }
}

/// One row of the timeline, at µs from the deadline (negative: before it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub at_us: f64,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The cycle's index among recorded periods (the series' max_index counts the same way).
    pub cycle: u64,
    pub late_us: f64,
    pub cpu: usize,
    /// When the RT thread's timer fired, was woken, ran (µs after the deadline), as far as the trace shows.
    pub timer_us: Option<f64>,
    pub woken_us: Option<f64>,
    pub running_us: Option<f64>,
    /// Time the CPU sat idle between the deadline and the timer (timer / idle-exit latency, or the host in a VM).
    pub idle_us: f64,
    pub culprits: Vec<Culprit>,
    pub timeline: Vec<Step>,
    pub verdict: String,
}

/// The marker the RT loop writes at each wakeup: "rmp-eval c=CYCLE dl=DEADLINE_NS lat=LATENCY_NS".
pub struct Mark {
    pub cycle: u64,
    pub deadline_ns: u64,
    pub lat_ns: u64,
}

pub fn mark(l: &Line) -> Option<Mark> {
    if l.event != "tracing_mark_write" || !l.body.starts_with("rmp-eval ") {
        return None;
    }
    let f = ftrace::fields(l.body);
    Some(Mark {
        cycle: ftrace::num(&f, "c")?,
        deadline_ns: ftrace::num(&f, "dl")?,
        lat_ns: ftrace::num(&f, "lat")?,
    })
}

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
    for l in &lines[..=mi] {
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
    let verdict = verdict(core, late_us, idle_us, &culprits, timer_at.map(rel));
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

/// A culprit counts when it took at least this share of the lateness.
const SIGNIFICANT: f64 = 0.2;

fn verdict(core: usize, late: f64, idle: f64, c: &[Culprit], timer: Option<f64>) -> String {
    let big: Vec<&Culprit> = c
        .iter()
        .filter(|x| x.ran_us >= SIGNIFICANT * late && x.ran_us >= 1.0)
        .collect();
    if let Some(top) = big.first() {
        let mut v = format!(
            "late by {late:.0} µs: {} ran {:.0} µs on CPU {core} → {}",
            top.describe(),
            top.ran_us,
            top.remedy.command(core)
        );
        for o in big.iter().skip(1).take(2) {
            v.push_str(&format!(
                "; also {} {:.0} µs → {}",
                o.describe(),
                o.ran_us,
                o.remedy.command(core)
            ));
        }
        return v;
    }
    if idle >= SIGNIFICANT * late {
        let t = timer
            .map(|t| format!(", its timer fired {t:.0} µs after the deadline"))
            .unwrap_or_default();
        return format!(
            "late by {late:.0} µs: CPU {core} was idle{t} — nothing on the CPU was in the way (timer or \
             idle-exit latency; in a VM, the host) → rmp-eval check --core {core} (see cstates)"
        );
    }
    if let Some(t) = timer.filter(|&t| t >= SIGNIFICANT * late) {
        return format!(
            "late by {late:.0} µs: the timer interrupt came {t:.0} µs after the deadline while CPU {core} was busy \
             and no handler ran in between (interrupts off in the kernel, an SMI, or in a VM the host)"
        );
    }
    format!(
        "late by {late:.0} µs: nothing traced on CPU {core} accounts for it (the delay is outside this CPU's events)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str =
        include_str!("../../tests/fixtures/samples/trace-firecracker-vm-fifo90-spinner.txt");

    /// The lines of the captured sample from the marker before cycle `c` through cycle c's marker.
    fn window(c: u64) -> String {
        let ls: Vec<&str> = SAMPLE.lines().collect();
        let at = |c: u64| {
            ls.iter()
                .position(|l| l.contains(&format!("rmp-eval c={c} ")))
                .unwrap()
        };
        ls[at(c - 1)..=at(c)].join("\n")
    }

    #[test]
    fn the_fifo90_spinner_is_named() {
        // Captured on the dev VM: cycle 292 was 306 µs late because the SCHED_FIFO 90 python spinner (pid
        // 18866) ran from before the deadline until 299 µs after it.
        let e = explain(&window(292), 1).unwrap();
        assert_eq!(e.cycle, 292);
        assert!((e.late_us - 306.226).abs() < 1e-6);
        let top = &e.culprits[0];
        assert_eq!(
            (top.kind, top.name.as_str(), top.id),
            (Kind::Thread, "python3", Some(18866))
        );
        assert_eq!(top.prio.as_deref(), Some("FIFO/RR 90"));
        assert!(top.ran_us > 250.0 && top.ran_us < 306.3, "{}", top.ran_us);
        assert_eq!(top.remedy.id, "rt_core_threads");
        assert!(
            e.verdict
                .starts_with("late by 306 µs: python3 (pid 18866, FIFO/RR 90) ran"),
            "{}",
            e.verdict
        );
        assert!(e.verdict.contains("rt_core_threads"));
        // Its timer fired ~14 µs after the deadline and woke it, but it ran only when the spinner slept.
        assert!(e.timer_us.unwrap() > 0.0 && e.timer_us.unwrap() < 30.0);
        assert!(e.running_us.unwrap() > 290.0);
        assert!(
            e.timeline
                .iter()
                .any(|s| s.what.contains("→ python3 (18868"))
        );
    }

    #[test]
    fn a_late_timer_is_not_blamed_on_the_task_it_interrupted() {
        // Cycle 2 (58 µs late): rustc (normal priority) had the CPU; the RT thread's timer fired 35 µs after the
        // deadline (the VM's host), the switch followed 13 µs later. rustc did not hold the RT thread back.
        let e = explain(&window(2), 1).unwrap();
        assert!(
            (e.timer_us.unwrap() - 35.075).abs() < 0.01,
            "{:?}",
            e.timer_us
        );
        assert!(
            e.culprits.iter().all(|c| c.id != Some(18868)),
            "own thread is not a culprit"
        );
        let rustc = e.culprits.iter().find(|c| c.name == "rustc").unwrap();
        assert!(rustc.ran_us < 15.0, "{}", rustc.ran_us);
        assert!(
            e.verdict
                .contains("timer interrupt came 35 µs after the deadline"),
            "{}",
            e.verdict
        );
        assert!(explain("garbage", 1).is_none());
        assert!(
            explain(&window(2), 0).is_none(),
            "another CPU's window holds nothing"
        );
    }
}
