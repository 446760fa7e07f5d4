//! Who held one CPU, event by event: the task at the bottom (from sched_switch, resynced from each event's task
//! when a switch was lost), interrupts, softirqs and timer callbacks nested on it the way the kernel nests
//! them. Shared by the cyclic analysis (analyse) and the NIC receive path (receive).

use std::collections::HashMap;

use super::event::{Event, Softirq, What, softirq_name};
use super::model::{Culprit, Kind};
use crate::measure::interference::cause;

/// Who holds the CPU: the task at the bottom, interrupts and softirqs nested on it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Holder {
    pub(crate) kind: Kind,
    pub(crate) name: String,
    pub(crate) id: Option<u64>,
    pub(crate) prio: Option<String>,
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
    pub(crate) fn culprit(self, ns: u64) -> Culprit {
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
    /// Starts with the task of the CPU's first event.
    pub(crate) fn new(first: &Event) -> Walk {
        Walk {
            stack: vec![Holder::new(
                Kind::Thread,
                &first.comm,
                Some(u64::from(first.pid)),
            )],
            prios: HashMap::new(),
            last_t: first.ts_ns,
        }
    }

    /// The task (bottom of the stack).
    pub(crate) fn task(&self) -> &Holder {
        &self.stack[0]
    }

    /// Before event `l`: resyncs the task from the event's (an interrupt's event names the task it interrupted;
    /// when it is not the one the last sched_switch named, events were lost and the event is the truth), then
    /// returns who held the CPU from the previous event to this one.
    pub(crate) fn span(&mut self, l: &Event) -> (Holder, u64, u64) {
        if self.stack[0].id != Some(u64::from(l.pid)) && !matches!(l.what, What::Switch { .. }) {
            let id = u64::from(l.pid);
            self.stack.truncate(1);
            self.stack[0] = Holder {
                prio: self.prios.get(&id).cloned(),
                ..Holder::new(Kind::Thread, &l.comm, Some(id))
            };
        }
        let from = self.last_t;
        self.last_t = l.ts_ns;
        let top = self.stack.last().expect("the task is never popped").clone();
        (top, from, l.ts_ns)
    }

    /// Applies event `l` to the stack.
    pub(crate) fn apply(&mut self, l: &Event) {
        let exit = match &l.what {
            What::Switch { next, .. } => {
                self.stack.truncate(1);
                self.stack[0] = Holder {
                    prio: Some(prio_text(next.prio)),
                    ..Holder::new(Kind::Thread, &next.comm, Some(u64::from(next.pid)))
                };
                None
            }
            What::Wakeup { task, .. } => {
                self.prios.insert(u64::from(task.pid), prio_text(task.prio));
                None
            }
            What::IrqEntry { irq, name } => {
                let h = Holder::new(Kind::Irq, name, Some(u64::from(*irq)));
                self.stack.push(h);
                None
            }
            What::Softirq {
                at: Softirq::Entry,
                vec,
            } => {
                let h = Holder::new(Kind::Softirq, softirq_name(*vec), None);
                self.stack.push(h);
                None
            }
            What::TimerEntry { function, .. } => {
                self.stack.push(Holder::new(Kind::Timer, function, None));
                None
            }
            What::Ipi {
                entry: true,
                reason,
            } => {
                self.stack.push(Holder::new(Kind::Interrupt, reason, None));
                None
            }
            What::Vector {
                name, entry: true, ..
            } => {
                self.stack.push(Holder::new(Kind::Interrupt, name, None));
                None
            }
            What::IrqExit { .. } => Some(Kind::Irq),
            What::Softirq {
                at: Softirq::Exit, ..
            } => Some(Kind::Softirq),
            What::TimerExit { .. } => Some(Kind::Timer),
            What::Ipi { .. } | What::Vector { .. } => Some(Kind::Interrupt),
            _ => None,
        };
        if let Some(kind) = exit
            && self.stack.len() > 1
            && self.stack.last().is_some_and(|h| h.kind == kind)
        {
            self.stack.pop();
        }
    }
}
