//! The one event model of a trace: what the analysis (analyse, walk, receive) reads, whichever reader produced it —
//! the binary pages of trace_pipe_raw decoded through the events' formats (raw), or trace_pipe's text when the
//! pages cannot be read (text.rs, also the parser of a saved trace). Text is rendered from it only for the file a
//! user reads, as trace_pipe prints an event with irq-info off and ns timestamps.
//!
//! A new kind of event is one variant of `What`, its decoding in raw/decode.rs and text.rs and its line in
//! `What::body`; until then its events arrive as `Other` (the text reader's lines, kept as printed).

pub(crate) mod text;

use std::borrow::Cow;
use std::fmt::Write;

/// The softirq vectors' names (the kernel's softirq_to_name), by vec.
const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// One event: where and when, the task it happened in (the line's task column) and what it was.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub(crate) cpu: usize,
    /// Trace clock, ns (the text reader's are µs, the raw reader's ns).
    pub(crate) ts_ns: u64,
    pub(crate) pid: u32,
    pub(crate) comm: String,
    pub(crate) what: What,
}

/// One task as sched_switch names it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Task {
    pub(crate) comm: String,
    pub(crate) pid: u32,
    /// The kernel's priority (0..99 RT, 100..139 normal, negative deadline).
    pub(crate) prio: i64,
}

/// Where a softirq is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Softirq {
    Raise,
    Entry,
    Exit,
}

/// A frame's event in the network stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Net {
    /// netif_rx: handed to the stack (a veth, RPS).
    Rx,
    /// netif_receive_skb: delivered.
    Receive,
    /// net_dev_xmit: sent, with the driver's answer.
    Xmit { rc: i64 },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum What {
    /// sched_switch; `prev_state` as the kernel prints it ("R+", "S", "D|W").
    Switch {
        prev: Task,
        prev_state: String,
        next: Task,
    },
    /// sched_waking (`waking`) or sched_wakeup of `task` onto `target_cpu`.
    Wakeup {
        waking: bool,
        task: Task,
        target_cpu: usize,
    },
    IrqEntry {
        irq: u32,
        name: String,
    },
    IrqExit {
        irq: u32,
        handled: bool,
    },
    Softirq {
        at: Softirq,
        vec: u32,
    },
    /// hrtimer_expire_entry; `function` by its symbol.
    TimerEntry {
        hrtimer: u64,
        function: String,
        now: u64,
    },
    TimerExit {
        hrtimer: u64,
    },
    NapiPoll {
        napi: u64,
        dev: String,
        work: i64,
        budget: i64,
    },
    Net {
        at: Net,
        dev: String,
        skbaddr: u64,
        len: u64,
    },
    /// A trace_marker write (ftrace print): its text.
    Mark(String),
    /// An architecture interrupt's entry or exit (x86 irq_vectors: `name` local_timer, reschedule …).
    Vector {
        name: String,
        entry: bool,
        vector: i64,
    },
    /// arm64's ipi_entry/exit, with its reason (only the text reader has it: a pointer to a kernel string).
    Ipi {
        entry: bool,
        reason: String,
    },
    /// ipi_send_cpu (one CPU in `target`) or ipi_send_cpumask (`mask`): an IPI sent from this event's CPU to
    /// `target`, by the kernel function `callsite`, to run `callback` there ("0x0": none, a reschedule). `irq`:
    /// sent in interrupt context, where the task named is only the one interrupted; `tgid`: the task's process,
    /// when the text carried it (record-tgid; the raw records do not).
    IpiSend {
        mask: bool,
        target: Vec<usize>,
        callsite: String,
        callback: String,
        irq: bool,
        tgid: Option<u32>,
    },
    /// Any other event, as printed.
    Other {
        event: String,
        body: String,
    },
}

/// One entry of a window: an event, or the kernel saying it dropped events on a CPU (0: how many is unknown).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TraceEntry {
    Event(Event),
    Lost { cpu: usize, n: u64 },
}

impl TraceEntry {
    pub(crate) fn event(&self) -> Option<&Event> {
        match self {
            TraceEntry::Event(e) => Some(e),
            TraceEntry::Lost { .. } => None,
        }
    }

    /// Its line as trace_pipe prints it (irq-info off, ns timestamps).
    pub(crate) fn line(&self) -> String {
        match self {
            TraceEntry::Event(e) => e.line(),
            TraceEntry::Lost { cpu, n } => format!("CPU:{cpu} [LOST {} EVENTS]", n.max(&1)),
        }
    }
}

/// The events of `entries`, in order.
pub(crate) fn events(entries: &[TraceEntry]) -> impl Iterator<Item = &Event> {
    entries.iter().filter_map(TraceEntry::event)
}

/// The text of a window: one line per entry.
pub(crate) fn render(entries: &[TraceEntry]) -> String {
    let mut out = String::new();
    for e in entries {
        out.push_str(&e.line());
        out.push('\n');
    }
    out
}

/// The name of softirq vector `vec`.
pub(crate) fn softirq_name(vec: u32) -> &'static str {
    usize::try_from(vec)
        .ok()
        .and_then(|v| SOFTIRQS.get(v))
        .unwrap_or(&"?")
}

/// The vector of a softirq name (the text reader's `[action=NET_RX]`).
fn softirq_vec(name: &str) -> Option<u32> {
    SOFTIRQS
        .iter()
        .position(|n| *n == name)
        .and_then(|v| u32::try_from(v).ok())
}

impl Event {
    /// The event's name as tracefs names it.
    pub(crate) fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(match &self.what {
            What::Switch { .. } => "sched_switch",
            What::Wakeup { waking: true, .. } => "sched_waking",
            What::Wakeup { .. } => "sched_wakeup",
            What::IrqEntry { .. } => "irq_handler_entry",
            What::IrqExit { .. } => "irq_handler_exit",
            What::Softirq { at, .. } => match at {
                Softirq::Raise => "softirq_raise",
                Softirq::Entry => "softirq_entry",
                Softirq::Exit => "softirq_exit",
            },
            What::TimerEntry { .. } => "hrtimer_expire_entry",
            What::TimerExit { .. } => "hrtimer_expire_exit",
            What::NapiPoll { .. } => "napi_poll",
            What::Net { at, .. } => match at {
                Net::Rx => "netif_rx",
                Net::Receive => "netif_receive_skb",
                Net::Xmit { .. } => "net_dev_xmit",
            },
            What::Mark(_) => "tracing_mark_write",
            What::Vector { name, entry, .. } => {
                let at = if *entry { "entry" } else { "exit" };
                return Cow::Owned(format!("{name}_{at}"));
            }
            What::Ipi { entry: true, .. } => "ipi_entry",
            What::Ipi { .. } => "ipi_exit",
            What::IpiSend { mask: true, .. } => "ipi_send_cpumask",
            What::IpiSend { .. } => "ipi_send_cpu",
            What::Other { event, .. } => event,
        })
    }

    /// The loop's or the receiver's marker, when this is one.
    pub(crate) fn mark(&self) -> Option<super::model::Mark> {
        match &self.what {
            What::Mark(text) => super::model::mark(text),
            _ => None,
        }
    }

    /// The line as trace_pipe prints it with irq-info off and ns timestamps.
    pub(crate) fn line(&self) -> String {
        let comm = match self.pid {
            0 => "<idle>",
            _ => self.comm.as_str(),
        };
        let mut out = format!(
            "{comm:>16}-{:<7} [{:03}] {}.{:09}: ",
            self.pid,
            self.cpu,
            self.ts_ns / 1_000_000_000,
            self.ts_ns % 1_000_000_000
        );
        let _ = write!(out, "{}: ", self.name());
        self.what.body(&mut out);
        out
    }
}

impl What {
    /// An architecture interrupt's event, `NAME_entry` or `NAME_exit`, with its vector; None for another event.
    pub(crate) fn vector(event: &str, vector: Option<i64>) -> Option<What> {
        let (name, entry) = match event.strip_suffix("_entry") {
            Some(n) => (n, true),
            None => (event.strip_suffix("_exit")?, false),
        };
        Some(What::Vector {
            name: name.to_string(),
            entry,
            vector: vector?,
        })
    }

    /// The body as the event's print fmt writes it.
    fn body(&self, out: &mut String) {
        let _ = match self {
            What::Switch {
                prev,
                prev_state,
                next,
            } => write!(
                out,
                "prev_comm={} prev_pid={} prev_prio={} prev_state={prev_state} ==> next_comm={} next_pid={} \
                 next_prio={}",
                prev.comm, prev.pid, prev.prio, next.comm, next.pid, next.prio
            ),
            What::Wakeup {
                task, target_cpu, ..
            } => write!(
                out,
                "comm={} pid={} prio={} target_cpu={target_cpu:03}",
                task.comm, task.pid, task.prio
            ),
            What::IrqEntry { irq, name } => write!(out, "irq={irq} name={name}"),
            What::IrqExit { irq, handled } => write!(
                out,
                "irq={irq} ret={}",
                if *handled { "handled" } else { "unhandled" }
            ),
            What::Softirq { vec, .. } => write!(out, "vec={vec} [action={}]", softirq_name(*vec)),
            What::TimerEntry {
                hrtimer,
                function,
                now,
            } => write!(out, "hrtimer={hrtimer:016x} function={function} now={now}"),
            What::TimerExit { hrtimer } => write!(out, "hrtimer={hrtimer:016x}"),
            What::NapiPoll {
                napi,
                dev,
                work,
                budget,
            } => write!(
                out,
                "napi poll on napi struct {napi:016x} for device {dev} work {work} budget {budget}"
            ),
            What::Net {
                at,
                dev,
                skbaddr,
                len,
            } => {
                let _ = write!(out, "dev={dev} skbaddr={skbaddr:016x} len={len}");
                match at {
                    Net::Xmit { rc } => write!(out, " rc={rc}"),
                    _ => Ok(()),
                }
            }
            What::Mark(text) => write!(out, "{text}"),
            What::Vector { vector, .. } => write!(out, "vector={vector}"),
            What::Ipi { reason, .. } => write!(out, "({reason})"),
            What::IpiSend {
                mask,
                target,
                callsite,
                callback,
                ..
            } => {
                let _ = match (mask, target.as_slice()) {
                    (false, [cpu]) => write!(out, "cpu={cpu}"),
                    _ => write!(out, "cpumask={}", crate::parse::mask::format(target, 0)),
                };
                write!(out, " callsite={callsite} callback={callback}")
            }
            What::Other { body, .. } => write!(out, "{body}"),
        };
    }
}

#[cfg(test)]
mod tests;
