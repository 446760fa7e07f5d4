//! Who held one CPU, line by line: the task at the bottom (from sched_switch, resynced from each line's task
//! column when a switch was lost), interrupts, softirqs and timer callbacks nested on it the way the kernel nests
//! them. Shared by the cyclic analysis (analyse) and the NIC receive path (receive).

use std::collections::HashMap;

use super::model::{Culprit, Kind};
use crate::measure::interference::cause;
use crate::parse::ftrace::{self, Line};

/// Who holds the CPU: the task at the bottom, interrupts and softirqs nested on it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Holder {
    pub kind: Kind,
    pub name: String,
    pub id: Option<u64>,
    pub prio: Option<String>,
}

impl Holder {
    fn new(kind: Kind, name: &str, id: Option<u64>) -> Holder {
        Holder {
            kind,
            name: name.to_string(),
            id,
            prio: None,
        }
    }

    /// As a culprit that held the CPU for `ns`, with the remedy of its kind.
    pub fn culprit(self, ns: u64) -> Culprit {
        Culprit {
            remedy: match self.kind {
                Kind::Thread => cause::for_task(&self.name),
                Kind::Irq => cause::for_irq(),
                Kind::Softirq => cause::for_softirq(&self.name),
                Kind::Interrupt => cause::for_arch(&self.name),
                Kind::Timer if self.name.starts_with("tick") => cause::for_arch("tick"),
                Kind::Timer => cause::for_arch(&self.name),
            },
            kind: self.kind,
            name: self.name,
            id: self.id,
            prio: self.prio,
            ran_us: ns as f64 / 1000.0,
            cpu: None,
        }
    }
}

pub(crate) fn prio_text(kernel_prio: i64) -> String {
    match kernel_prio {
        p if p < 0 => "DEADLINE".into(),
        p if p < 100 => format!("FIFO/RR {}", 99 - p),
        _ => "normal".into(),
    }
}

pub(crate) struct Walk {
    stack: Vec<Holder>,
    /// Priorities seen in wakeups and switches, for a task whose switch-in was lost.
    prios: HashMap<u64, String>,
    last_t: u64,
}

impl Walk {
    /// Starts with the task of the CPU's first line.
    pub fn new(first: &Line) -> Walk {
        Walk {
            stack: vec![Holder::new(
                Kind::Thread,
                first.comm,
                Some(u64::from(first.pid)),
            )],
            prios: HashMap::new(),
            last_t: first.ts_ns,
        }
    }

    /// The task (bottom of the stack).
    pub fn task(&self) -> &Holder {
        &self.stack[0]
    }

    /// Before line `l`: resyncs the task from its task column (interrupt lines name the task they interrupted;
    /// when it is not the one the last sched_switch named, events were lost and the line is the truth), then
    /// returns who held the CPU from the previous line to this one.
    pub fn span(&mut self, l: &Line) -> (Holder, u64, u64) {
        if self.stack[0].id != Some(u64::from(l.pid)) && l.event != "sched_switch" {
            let id = u64::from(l.pid);
            self.stack.truncate(1);
            self.stack[0] = Holder {
                prio: self.prios.get(&id).cloned(),
                ..Holder::new(Kind::Thread, l.comm, Some(id))
            };
        }
        let from = self.last_t;
        self.last_t = l.ts_ns;
        let top = self.stack.last().expect("the task is never popped").clone();
        (top, from, l.ts_ns)
    }

    /// Applies line `l`'s event (its fields `f`) to the stack.
    pub fn apply(&mut self, l: &Line, f: &[(&str, String)]) {
        let push = |s: &mut Vec<Holder>, h| s.push(h);
        match l.event {
            "sched_switch" => {
                let pid = ftrace::num(f, "next_pid");
                let prio = ftrace::get(f, "next_prio").and_then(|p| p.parse::<i64>().ok());
                self.stack.truncate(1);
                self.stack[0] = Holder {
                    prio: prio.map(prio_text),
                    ..Holder::new(
                        Kind::Thread,
                        ftrace::get(f, "next_comm").unwrap_or("?"),
                        pid,
                    )
                };
            }
            "sched_wakeup" | "sched_waking" => {
                if let (Some(pid), Some(p)) = (
                    ftrace::num(f, "pid"),
                    ftrace::get(f, "prio").and_then(|p| p.parse::<i64>().ok()),
                ) {
                    self.prios.insert(pid, prio_text(p));
                }
            }
            "irq_handler_entry" => push(
                &mut self.stack,
                Holder::new(
                    Kind::Irq,
                    ftrace::get(f, "name").unwrap_or("?"),
                    ftrace::num(f, "irq"),
                ),
            ),
            "softirq_entry" => push(
                &mut self.stack,
                Holder::new(Kind::Softirq, ftrace::get(f, "action").unwrap_or("?"), None),
            ),
            "hrtimer_expire_entry" => push(
                &mut self.stack,
                Holder::new(Kind::Timer, ftrace::get(f, "function").unwrap_or("?"), None),
            ),
            "ipi_entry" => push(
                &mut self.stack,
                Holder::new(
                    Kind::Interrupt,
                    l.body.trim_matches(|c| c == '(' || c == ')'),
                    None,
                ),
            ),
            ev if ev.ends_with("_entry") && !ev.starts_with("tasklet") => push(
                &mut self.stack,
                Holder::new(Kind::Interrupt, ev.trim_end_matches("_entry"), None),
            ),
            ev if ev.ends_with("_exit") => {
                let kind = match ev {
                    "irq_handler_exit" => Kind::Irq,
                    "softirq_exit" => Kind::Softirq,
                    "hrtimer_expire_exit" => Kind::Timer,
                    _ => Kind::Interrupt,
                };
                if self.stack.len() > 1 && self.stack.last().is_some_and(|h| h.kind == kind) {
                    self.stack.pop();
                }
            }
            _ => {}
        }
    }
}
