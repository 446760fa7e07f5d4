//! Text into the event model: trace_pipe's lines (the reader when the binary pages cannot be read) and captured
//! or saved traces (the file beside a result). Lines split by parse::ftrace; each event's body read by its print
//! fmt. A known event whose body does not read as its fmt is kept as `Other`, as printed.

use super::{Event, Net, Softirq, Task, TraceEntry, What, softirq_vec};
use crate::parse::ftrace::{self, Line};

/// Every entry of `text`, in order; headers ("# …") and anything else that is not an event are skipped. The run
/// reads trace_pipe line by line (`entry`); the tests read captured text whole.
#[cfg(test)]
pub(crate) fn parse(text: &str) -> Vec<TraceEntry> {
    text.lines().filter_map(entry).collect()
}

/// One line: an event, or "CPU:N [LOST M EVENTS]".
pub(crate) fn entry(l: &str) -> Option<TraceEntry> {
    if let Some(lost) = lost(l) {
        return Some(lost);
    }
    let line = ftrace::parse_line(l)?;
    Some(TraceEntry::Event(Event {
        cpu: line.cpu,
        ts_ns: line.ts_ns,
        pid: line.pid,
        comm: line.comm.to_string(),
        what: what(&line).unwrap_or_else(|| What::Other {
            event: line.event.to_string(),
            body: line.body.to_string(),
        }),
    }))
}

/// "CPU:1 [LOST 12 EVENTS]".
fn lost(l: &str) -> Option<TraceEntry> {
    let (cpu, rest) = l.strip_prefix("CPU:")?.split_once(" [LOST ")?;
    let n = rest.split_whitespace().next()?.parse().ok()?;
    Some(TraceEntry::Lost {
        cpu: cpu.trim().parse().ok()?,
        n,
    })
}

fn hex(f: &[(&str, String)], key: &str) -> Option<u64> {
    let v = ftrace::get(f, key)?;
    u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()
}

fn int(f: &[(&str, String)], key: &str) -> Option<i64> {
    ftrace::get(f, key)?.parse().ok()
}

fn task(f: &[(&str, String)], prefix: &str) -> Option<Task> {
    Some(Task {
        comm: ftrace::get(f, &format!("{prefix}comm"))?.to_string(),
        pid: ftrace::num(f, &format!("{prefix}pid"))?.try_into().ok()?,
        prio: int(f, &format!("{prefix}prio"))?,
    })
}

/// The event of a line by its print fmt; None when the body does not read as it.
fn what(l: &Line) -> Option<What> {
    let f = || ftrace::fields(l.body);
    Some(match l.event {
        "sched_switch" => {
            let f = f();
            What::Switch {
                prev: task(&f, "prev_")?,
                prev_state: ftrace::get(&f, "prev_state")?.to_string(),
                next: task(&f, "next_")?,
            }
        }
        "sched_wakeup" | "sched_waking" => {
            let f = f();
            What::Wakeup {
                waking: l.event == "sched_waking",
                task: task(&f, "")?,
                target_cpu: ftrace::num(&f, "target_cpu")?.try_into().ok()?,
            }
        }
        "irq_handler_entry" => {
            let f = f();
            What::IrqEntry {
                irq: ftrace::num(&f, "irq")?.try_into().ok()?,
                name: ftrace::get(&f, "name")?.to_string(),
            }
        }
        "irq_handler_exit" => {
            let f = f();
            What::IrqExit {
                irq: ftrace::num(&f, "irq")?.try_into().ok()?,
                handled: ftrace::get(&f, "ret")? == "handled",
            }
        }
        "softirq_raise" | "softirq_entry" | "softirq_exit" => {
            let f = f();
            let vec = ftrace::num(&f, "vec")
                .and_then(|v| u32::try_from(v).ok())
                .or_else(|| softirq_vec(ftrace::get(&f, "action")?))?;
            let at = match l.event {
                "softirq_raise" => Softirq::Raise,
                "softirq_entry" => Softirq::Entry,
                _ => Softirq::Exit,
            };
            What::Softirq { at, vec }
        }
        "hrtimer_expire_entry" => {
            let f = f();
            What::TimerEntry {
                hrtimer: hex(&f, "hrtimer")?,
                function: ftrace::get(&f, "function")?.to_string(),
                now: ftrace::num(&f, "now")?,
            }
        }
        "hrtimer_expire_exit" => What::TimerExit {
            hrtimer: hex(&f(), "hrtimer")?,
        },
        "napi_poll" => napi_poll(l.body)?,
        "netif_rx" | "netif_receive_skb" | "net_dev_xmit" => {
            let f = f();
            let at = match l.event {
                "netif_rx" => Net::Rx,
                "netif_receive_skb" => Net::Receive,
                _ => Net::Xmit { rc: int(&f, "rc")? },
            };
            What::Net {
                at,
                dev: ftrace::get(&f, "dev")?.to_string(),
                skbaddr: hex(&f, "skbaddr")?,
                len: ftrace::num(&f, "len")?,
            }
        }
        "tracing_mark_write" => What::Mark(l.body.to_string()),
        "ipi_entry" | "ipi_exit" => What::Ipi {
            entry: l.event == "ipi_entry",
            reason: l.body.trim_matches(|c| c == '(' || c == ')').to_string(),
        },
        "ipi_send_cpu" | "ipi_send_cpumask" => ipi_send(l)?,
        ev => What::vector(ev, int(&f(), "vector"))?,
    })
}

/// "cpu=1 callsite=generic_exec_single+0x36/0x150 callback=generic_smp_call_function_single_interrupt+0x0/0x10",
/// or "cpumask=3 …" (the kernel's hex mask). Symbols as the raw reader names them: without the function's size,
/// and a function's start by its name alone.
fn ipi_send(l: &Line) -> Option<What> {
    let f = ftrace::fields(l.body);
    let mask = l.event == "ipi_send_cpumask";
    let target = match mask {
        true => crate::parse::mask::parse(ftrace::get(&f, "cpumask")?).ok()?,
        false => vec![ftrace::num(&f, "cpu")?.try_into().ok()?],
    };
    let sym = |key| {
        let s = ftrace::get(&f, key)?;
        let s = s.split_once('/').map_or(s, |(s, _)| s);
        Some(s.strip_suffix("+0x0").unwrap_or(s).to_string())
    };
    Some(What::IpiSend {
        mask,
        target,
        callsite: sym("callsite")?,
        callback: sym("callback")?,
        irq: l.in_irq(),
        tgid: l.tgid,
    })
}

/// "napi poll on napi struct PTR for device DEV work N budget N".
fn napi_poll(body: &str) -> Option<What> {
    let rest = body.strip_prefix("napi poll on napi struct ")?;
    let (napi, rest) = rest.split_once(" for device ")?;
    let (dev, rest) = rest.split_once(" work ")?;
    let (work, budget) = rest.split_once(" budget ")?;
    Some(What::NapiPoll {
        napi: u64::from_str_radix(napi, 16).ok()?,
        dev: dev.to_string(),
        work: work.trim().parse().ok()?,
        budget: budget.trim().parse().ok()?,
    })
}
