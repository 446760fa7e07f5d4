//! A raw event's text as the kernel's print fmt for it writes it (the events trace::raw reads), field by field
//! through its format.

use super::Symbols;
use crate::parse::ringbuf::{Format, uint};

const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];
/// sched_switch's prev_state letters, bit by bit (TASK_REPORT), and the preempted bit ("+").
const STATES: [&str; 8] = ["S", "D", "T", "t", "X", "Z", "P", "I"];
const PREEMPTED: i64 = 0x100;

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

    fn hex(&self, name: &str) -> Option<String> {
        Some(format!("{:016x}", self.int(name)? as u64))
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

    pub(super) fn body(&self, syms: &Symbols) -> Option<String> {
        let i = |n| self.int(n);
        let s = |n| self.str(n);
        Some(match self.f.name.as_str() {
            "sched_switch" => {
                let st = i("prev_state")?;
                let letters: Vec<&str> = (0..8)
                    .filter(|b| st & (1 << b) != 0)
                    .map(|b| STATES[b])
                    .collect();
                format!(
                    "prev_comm={} prev_pid={} prev_prio={} prev_state={}{} ==> next_comm={} next_pid={} next_prio={}",
                    s("prev_comm")?,
                    i("prev_pid")?,
                    i("prev_prio")?,
                    if letters.is_empty() {
                        "R".to_string()
                    } else {
                        letters.join("|")
                    },
                    if st & PREEMPTED != 0 { "+" } else { "" },
                    s("next_comm")?,
                    i("next_pid")?,
                    i("next_prio")?
                )
            }
            "sched_wakeup" | "sched_waking" => format!(
                "comm={} pid={} prio={} target_cpu={:03}",
                s("comm")?,
                i("pid")?,
                i("prio")?,
                i("target_cpu")?
            ),
            "irq_handler_entry" => format!("irq={} name={}", i("irq")?, s("name")?),
            "irq_handler_exit" => format!(
                "irq={} ret={}",
                i("irq")?,
                if i("ret")? != 0 {
                    "handled"
                } else {
                    "unhandled"
                }
            ),
            "softirq_entry" | "softirq_exit" | "softirq_raise" => {
                let v = i("vec")?;
                let name = usize::try_from(v)
                    .ok()
                    .and_then(|v| SOFTIRQS.get(v))
                    .unwrap_or(&"?");
                format!("vec={v} [action={name}]")
            }
            "hrtimer_expire_entry" => format!(
                "hrtimer={} function={} now={}",
                self.hex("hrtimer")?,
                syms.name(i("function")? as u64),
                i("now")?
            ),
            "hrtimer_expire_exit" => format!("hrtimer={}", self.hex("hrtimer")?),
            "napi_poll" => format!(
                "napi poll on napi struct {} for device {} work {} budget {}",
                self.hex("napi")?,
                s("dev_name")?,
                i("work")?,
                i("budget")?
            ),
            "netif_receive_skb" | "netif_rx" => {
                format!(
                    "dev={} skbaddr={} len={}",
                    s("name")?,
                    self.hex("skbaddr")?,
                    i("len")?
                )
            }
            "net_dev_xmit" => format!(
                "dev={} skbaddr={} len={} rc={}",
                s("name")?,
                self.hex("skbaddr")?,
                i("len")?,
                i("rc")?
            ),
            _ => format!("vector={}", i("vector")?),
        })
    }
}
