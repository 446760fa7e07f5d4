//! The binary events of trace_pipe_raw (parse::ringbuf decodes the pages): which record is which event (the
//! formats of the events we enabled), the two things the reader needs from every event (is it the loop's marker,
//! is it the tick), and an event in the event model (trace::event) — decoded only for the kept windows, which the
//! analysis reads and the saved file is rendered from. The kernel formats nothing.

mod decode;
pub(super) mod read;

use std::collections::HashMap;

use super::event::{self, What};
use super::model::{Mark, mark};
use crate::parse::ringbuf::{Format, PageHeader, uint};
use decode::Rec;

/// One event as read: its CPU, time (trace clock, ns) and bytes (common_type first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawEvent {
    pub(crate) cpu: usize,
    pub(crate) ts: u64,
    pub(crate) data: Box<[u8]>,
}

/// Kernel symbols (`/proc/kallsyms`), to name hrtimer functions as `%ps` does.
#[derive(Debug, Clone, Default)]
pub(crate) struct Symbols(Vec<(u64, String)>);

impl Symbols {
    /// Parses `/proc/kallsyms` ("ADDR TYPE NAME [module]"); text symbols only. All-zero addresses (kptr_restrict)
    /// give an empty table.
    pub(crate) fn parse(text: &str) -> Self {
        let mut v: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let addr = u64::from_str_radix(w.next()?, 16).ok()?;
                let ty = w.next()?;
                let name = w.next()?;
                (addr != 0 && matches!(ty, "t" | "T")).then(|| (addr, name.to_string()))
            })
            .collect();
        v.sort();
        Symbols(v)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `name`, or `name+0xOFF` inside a function, or the address.
    pub(crate) fn name(&self, addr: u64) -> String {
        match self.0.partition_point(|(a, _)| *a <= addr) {
            0 => format!("0x{addr:x}"),
            i => match &self.0[i - 1] {
                (a, n) if *a == addr => n.clone(),
                (a, n) => format!("{n}+0x{:x}", addr - a),
            },
        }
    }

    /// Addresses of the tick's hrtimer functions (tick_nohz_handler, tick_sched_timer …).
    fn ticks(&self) -> Vec<u64> {
        self.0
            .iter()
            .filter(|(_, n)| n.starts_with("tick_"))
            .map(|(a, _)| *a)
            .collect()
    }
}

/// The fields each event's line needs; an event missing one (or not listed) cannot be read raw.
fn needs(event: &str) -> Option<&'static [&'static str]> {
    Some(match event {
        "sched_switch" => &[
            "prev_comm",
            "prev_pid",
            "prev_prio",
            "prev_state",
            "next_comm",
            "next_pid",
            "next_prio",
        ],
        "sched_wakeup" | "sched_waking" => &["comm", "pid", "prio", "target_cpu"],
        "irq_handler_entry" => &["irq", "name"],
        "irq_handler_exit" => &["irq", "ret"],
        "softirq_entry" | "softirq_exit" | "softirq_raise" => &["vec"],
        "hrtimer_expire_entry" => &["hrtimer", "function", "now"],
        "hrtimer_expire_exit" => &["hrtimer"],
        "napi_poll" => &["napi", "dev_name", "work", "budget"],
        "netif_receive_skb" | "netif_rx" => &["name", "skbaddr", "len"],
        "net_dev_xmit" => &["name", "skbaddr", "len", "rc"],
        "print" => &["buf"],
        "ipi_send_cpu" => &["cpu", "callsite", "callback"],
        "ipi_send_cpumask" => &["cpumask", "callsite", "callback"],
        e if e.ends_with("_entry") || e.ends_with("_exit") => {
            // irq_vectors/*; ipi_entry's reason is a pointer to a kernel string: not readable raw.
            if e.starts_with("ipi_") {
                return None;
            }
            &["vector"]
        }
        _ => return None,
    })
}

/// What the reader knows of the enabled events.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    pub(crate) header: PageHeader,
    by_id: HashMap<u16, Format>,
    print_id: u16,
    hrtimer: Option<(u16, usize)>,
    tick_fns: Vec<u64>,
    pub(crate) syms: Symbols,
}

/// Why the binary reader cannot be used: the text reader (trace_pipe) is used instead, and the result says why.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoRaw {
    #[error("RMP_EVAL_TRACE_READER=text")]
    Asked,
    #[error("{path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("events/header_page unreadable")]
    HeaderPage,
    #[error(transparent)]
    Tracefs(#[from] super::tracefs::TraceError),
    #[error("events/{0}/format unreadable")]
    Format(String),
    #[error("no kernel symbols (kallsyms unreadable or hidden)")]
    NoSymbols,
    #[error("event {0} has no raw reading")]
    UnknownEvent(String),
    #[error("event {event} lacks the field {field}")]
    LacksField { event: String, field: String },
    #[error("no ftrace/print format")]
    NoPrint,
}

impl Schema {
    /// From the page header, the formats of the enabled events and of ftrace/print (the marker), and the
    /// kernel's symbols. Err: why the raw reader cannot be used (the text reader is then used).
    pub(crate) fn new(
        header: PageHeader,
        formats: Vec<Format>,
        syms: Symbols,
    ) -> Result<Self, NoRaw> {
        if syms.is_empty() {
            return Err(NoRaw::NoSymbols);
        }
        let mut by_id = HashMap::new();
        let (mut print_id, mut hrtimer) = (None, None);
        for f in formats {
            let need = needs(&f.name).ok_or_else(|| NoRaw::UnknownEvent(f.name.clone()))?;
            if let Some(n) = need
                .iter()
                .find(|n| !f.fields.iter().any(|x| x.name == **n))
            {
                return Err(NoRaw::LacksField {
                    event: f.name.clone(),
                    field: n.to_string(),
                });
            }
            if f.name == "print" {
                print_id = Some(f.id);
            }
            if f.name == "hrtimer_expire_entry" {
                hrtimer = f
                    .fields
                    .iter()
                    .find(|x| x.name == "function")
                    .map(|x| (f.id, x.offset));
            }
            by_id.insert(f.id, f);
        }
        Ok(Schema {
            header,
            by_id,
            print_id: print_id.ok_or(NoRaw::NoPrint)?,
            hrtimer,
            tick_fns: syms.ticks(),
            syms,
        })
    }

    fn id(data: &[u8]) -> u16 {
        uint(data, 0, 2).unwrap_or(0) as u16
    }

    /// The loop's marker, when this is one.
    pub(crate) fn mark(&self, data: &[u8]) -> Option<Mark> {
        if Self::id(data) != self.print_id {
            return None;
        }
        mark(&print_buf(&self.by_id[&self.print_id], data)?)
    }

    /// The tick's hrtimer firing.
    pub(crate) fn is_tick(&self, data: &[u8]) -> bool {
        self.hrtimer.is_some_and(|(id, off)| {
            Self::id(data) == id && uint(data, off, 8).is_some_and(|f| self.tick_fns.contains(&f))
        })
    }

    /// The event in the event model, its task named by `comm` (by pid); None for an unknown record.
    pub(crate) fn event<'a>(
        &self,
        e: &RawEvent,
        comm: impl Fn(i64) -> Option<&'a str>,
    ) -> Option<event::Event> {
        let f = self.by_id.get(&Self::id(&e.data))?;
        let r = Rec { f, d: &e.data };
        let pid = r.int("common_pid").unwrap_or(0);
        let comm = match pid {
            0 => "<idle>",
            p => comm(p).unwrap_or("<...>"),
        };
        let what = match f.name.as_str() {
            "print" => What::Mark(print_buf(f, &e.data)?),
            _ => r.what(&self.syms)?,
        };
        Some(event::Event {
            cpu: e.cpu,
            ts_ns: e.ts,
            pid: u32::try_from(pid).ok()?,
            comm: comm.to_string(),
            what,
        })
    }

    /// The task names the events themselves carry (sched_switch, sched_waking/wakeup), by pid.
    pub(crate) fn comms<'a>(
        &self,
        events: impl Iterator<Item = &'a RawEvent>,
        into: &mut HashMap<i64, String>,
    ) {
        for e in events {
            let Some(f) = self.by_id.get(&Self::id(&e.data)) else {
                continue;
            };
            let r = Rec { f, d: &e.data };
            for (c, p) in [
                ("prev_comm", "prev_pid"),
                ("next_comm", "next_pid"),
                ("comm", "pid"),
            ] {
                if let (Some(c), Some(p)) = (r.str(c), r.int(p)) {
                    into.insert(p, c);
                }
            }
        }
    }
}

/// Parses tracefs `saved_cmdlines` ("PID COMM" per line).
pub(crate) fn saved_cmdlines(text: &str) -> HashMap<i64, String> {
    text.lines()
        .filter_map(|l| {
            let (p, c) = l.split_once(' ')?;
            Some((p.parse().ok()?, c.to_string()))
        })
        .collect()
}

fn print_buf(f: &Format, data: &[u8]) -> Option<String> {
    let off = f.fields.iter().find(|x| x.name == "buf")?.offset;
    let b = data.get(off..)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Some(
        String::from_utf8_lossy(&b[..end])
            .trim_end_matches('\n')
            .to_string(),
    )
}

#[cfg(test)]
pub(crate) mod tests;
