//! A raw event into the event model (trace::event), field by field through its format (the events trace::raw
//! reads).

use super::Symbols;
use crate::parse::ringbuf::{Format, uint};
use crate::trace::event::{Net, Softirq, Task, What};

/// sched_switch's prev_state letters, bit by bit (TASK_REPORT), and the preempted bit ("+").
const STATES: [&str; 8] = ["S", "D", "T", "t", "X", "Z", "P", "I"];
const PREEMPTED: i64 = 0x100;
/// common_flags of an event in interrupt context: TRACE_FLAG_HARDIRQ, _SOFTIRQ, _NMI.
const IN_IRQ: i64 = 0x08 | 0x10 | 0x40;

/// One record read through its format.
pub(super) struct Rec<'a> {
    pub(super) f: &'a Format,
    pub(super) d: &'a [u8],
}

impl Rec<'_> {
    pub(super) fn int(&self, name: &str) -> Option<i64> {
        let x = self.f.fields.iter().find(|x| x.name == name)?;
        let v = uint(self.d, x.offset, x.size)?;
        Some(match (x.signed, x.size) {
            (true, 1) => i64::from(v as u8 as i8),
            (true, 2) => i64::from(v as u16 as i16),
            (true, 4) => i64::from(v as u32 as i32),
            _ => v as i64,
        })
    }

    /// A char array, or a `__data_loc` / `__rel_loc` string (offset and length packed in a u32), to its NUL.
    pub(super) fn str(&self, name: &str) -> Option<String> {
        let x = self.f.fields.iter().find(|x| x.name == name)?;
        let bytes = if x.ty.starts_with("__data_loc") || x.ty.starts_with("__rel_loc") {
            let loc = uint(self.d, x.offset, 4)? as usize;
            let base = if x.ty.starts_with("__rel_loc") {
                x.offset + x.size
            } else {
                0
            };
            let at = base + (loc & 0xffff);
            self.d.get(at..at + (loc >> 16))?
        } else if x.ty.starts_with("char") {
            self.d.get(x.offset..x.offset + x.size)?
        } else {
            return None;
        };
        let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }

    /// A `__data_loc cpumask_t`: the CPUs whose bits are set (unsigned longs, little-endian as the machine).
    fn cpus(&self, name: &str) -> Option<Vec<usize>> {
        let x = self.f.fields.iter().find(|x| x.name == name)?;
        let loc = uint(self.d, x.offset, 4)? as usize;
        let bytes = self.d.get(loc & 0xffff..(loc & 0xffff) + (loc >> 16))?;
        Some(
            (0..bytes.len() * 8)
                .filter(|b| bytes[b / 8] & (1 << (b % 8)) != 0)
                .collect(),
        )
    }

    fn task(&self, prefix: &str) -> Option<Task> {
        Some(Task {
            comm: self.str(&format!("{prefix}comm"))?,
            pid: u32::try_from(self.int(&format!("{prefix}pid"))?).ok()?,
            prio: self.int(&format!("{prefix}prio"))?,
        })
    }

    /// The event through its format; None when a field is missing (Schema::new refuses such formats).
    pub(super) fn what(&self, syms: &Symbols) -> Option<What> {
        let i = |n| self.int(n);
        let u = |n| self.int(n).and_then(|v| u32::try_from(v).ok());
        let p = |n| self.int(n).map(|v| v as u64);
        let name = self.f.name.as_str();
        Some(match name {
            "sched_switch" => What::Switch {
                prev: self.task("prev_")?,
                prev_state: state(i("prev_state")?),
                next: self.task("next_")?,
            },
            "sched_wakeup" | "sched_waking" => What::Wakeup {
                waking: name == "sched_waking",
                task: self.task("")?,
                target_cpu: usize::try_from(i("target_cpu")?).ok()?,
            },
            "irq_handler_entry" => What::IrqEntry {
                irq: u("irq")?,
                name: self.str("name")?,
            },
            "irq_handler_exit" => What::IrqExit {
                irq: u("irq")?,
                handled: i("ret")? != 0,
            },
            "softirq_entry" | "softirq_exit" | "softirq_raise" => What::Softirq {
                at: match name {
                    "softirq_raise" => Softirq::Raise,
                    "softirq_entry" => Softirq::Entry,
                    _ => Softirq::Exit,
                },
                vec: u("vec")?,
            },
            "hrtimer_expire_entry" => What::TimerEntry {
                hrtimer: p("hrtimer")?,
                function: syms.name(p("function")?),
                now: p("now")?,
            },
            "hrtimer_expire_exit" => What::TimerExit {
                hrtimer: p("hrtimer")?,
            },
            "napi_poll" => What::NapiPoll {
                napi: p("napi")?,
                dev: self.str("dev_name")?,
                work: i("work")?,
                budget: i("budget")?,
            },
            "netif_receive_skb" | "netif_rx" | "net_dev_xmit" => What::Net {
                at: match name {
                    "netif_rx" => Net::Rx,
                    "netif_receive_skb" => Net::Receive,
                    _ => Net::Xmit { rc: i("rc")? },
                },
                dev: self.str("name")?,
                skbaddr: p("skbaddr")?,
                len: p("len")?,
            },
            "ipi_send_cpu" | "ipi_send_cpumask" => What::IpiSend {
                mask: name == "ipi_send_cpumask",
                target: match name {
                    "ipi_send_cpumask" => self.cpus("cpumask")?,
                    _ => vec![usize::try_from(i("cpu")?).ok()?],
                },
                callsite: syms.name(p("callsite")?),
                callback: syms.name(p("callback")?),
                irq: i("common_flags")? & IN_IRQ != 0,
                tgid: None,
            },
            ev => What::vector(ev, i("vector"))?,
        })
    }
}

/// sched_switch's prev_state as the kernel prints it: the TASK_REPORT letters joined by "|" ("R" for none), "+"
/// when preempted.
fn state(st: i64) -> String {
    let letters: Vec<&str> = (0..8)
        .filter(|b| st & (1 << b) != 0)
        .map(|b| STATES[b])
        .collect();
    let mut s = if letters.is_empty() {
        "R".to_string()
    } else {
        letters.join("|")
    };
    if st & PREEMPTED != 0 {
        s.push('+');
    }
    s
}
