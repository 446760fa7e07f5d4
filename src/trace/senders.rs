//! Who sent the IPIs the RT CPUs received: the ipi_send events of the run's own tracefs instance
//! (tracefs/senders.rs), read once the run is over and counted by sender. A send is not always one interrupt
//! received: function calls queued while one is pending ride on the same interrupt, and a reschedule to a CPU
//! polling in idle sends none; the counts are what the kernel sent.

use serde::{Deserialize, Serialize};

use super::event::{TraceEntry, What, text};

/// Senders listed; the rest are counted in `others`.
const MAX_SENDERS: usize = 12;

/// One sender: a task (or the kernel in an interrupt that came while it ran), a kernel function, a kind of IPI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IpiSender {
    /// The /proc/interrupts row it arrives as: RES (no function: a reschedule), CAL (a function call; x86 counts a
    /// TLB shootdown in both CAL and TLB), IWI (irq_work).
    pub(crate) row: String,
    pub(crate) comm: String,
    pub(crate) pid: u32,
    pub(crate) tgid: Option<u32>,
    /// The sender is rmp-eval itself (a thread of this process).
    pub(crate) own: bool,
    /// Sent in interrupt context: `comm` and `pid` are the task it interrupted, not the sender.
    pub(crate) in_irq: bool,
    /// The kernel function that sent it (`generic_exec_single`, `on_each_cpu_cond_mask`, `wakeup_preempt`).
    pub(crate) callsite: String,
    pub(crate) count: u64,
}

#[cfg(test)]
impl IpiSender {
    /// `count` function calls sent by `comm` (a process of its own) from generic_exec_single.
    pub(crate) fn call(comm: &str, pid: u32, own: bool, count: u64) -> Self {
        IpiSender {
            row: "CAL".into(),
            comm: comm.into(),
            pid,
            tgid: Some(pid),
            own,
            in_irq: false,
            callsite: "generic_exec_single".into(),
            count,
        }
    }
}

/// The `trace.ipi_senders` key of a run's JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct IpiSenders {
    /// The events recorded ("ipi_send_cpu/ipi_send_cpumask"), or why the senders are unknown ("sender unknown: …").
    pub(crate) source: String,
    /// The RT CPUs the sends were aimed at.
    pub(crate) cpus: Vec<usize>,
    /// Most sends first.
    pub(crate) senders: Vec<IpiSender>,
    /// Sends by senders not listed.
    pub(crate) others: u64,
    /// Sends the instance's buffer dropped (overwritten when full): the counts above miss them.
    pub(crate) dropped: u64,
}

impl IpiSenders {
    /// `why` starts "sender unknown".
    pub(crate) fn unknown(why: String, cpus: &[usize]) -> Self {
        IpiSenders {
            source: why,
            cpus: cpus.to_vec(),
            ..Default::default()
        }
    }

    /// Whether the senders were recorded.
    pub(crate) fn known(&self) -> bool {
        !self.source.starts_with(UNKNOWN)
    }

    /// Sends that arrive as `row` (TLB: the function calls, which a TLB shootdown is on x86).
    pub(crate) fn of_row<'a>(&'a self, row: &'a str) -> impl Iterator<Item = &'a IpiSender> + 'a {
        let row = if row == "TLB" { "CAL" } else { row };
        self.senders.iter().filter(move |s| s.row == row)
    }
}

const SOURCE: &str = "ipi_send_cpu/ipi_send_cpumask";
/// How every reason the senders are unknown begins.
pub(crate) const UNKNOWN: &str = "sender unknown";

/// The row an IPI that runs `callback` arrives as.
fn row(callback: &str) -> &'static str {
    if callback == "0x0" {
        "RES"
    } else if callback.contains("irq_work") {
        "IWI"
    } else {
        "CAL"
    }
}

/// Counts the sends in the instance's `trace` text aimed at `cpus`; `own` is this process's id.
pub(crate) fn count(trace: &str, cpus: &[usize], own: u32) -> IpiSenders {
    let mut all = tally(trace, cpus, own);
    let others = all.iter().skip(MAX_SENDERS).map(|s| s.count).sum();
    all.truncate(MAX_SENDERS);
    IpiSenders {
        source: SOURCE.into(),
        cpus: cpus.to_vec(),
        senders: all,
        others,
        dropped: dropped(trace),
    }
}

/// Every sender of the sends aimed at `cpus`, most sends first.
fn tally(trace: &str, cpus: &[usize], own: u32) -> Vec<IpiSender> {
    let mut all: Vec<IpiSender> = Vec::new();
    for e in trace.lines().filter_map(text::entry) {
        let TraceEntry::Event(e) = e else { continue };
        let What::IpiSend {
            target,
            callsite,
            callback,
            irq,
            tgid,
            ..
        } = &e.what
        else {
            continue;
        };
        if !target.iter().any(|t| cpus.contains(t)) {
            continue;
        }
        let s = IpiSender {
            row: row(callback).to_string(),
            comm: e.comm.clone(),
            pid: e.pid,
            tgid: *tgid,
            own: !irq && (*tgid == Some(own) || e.pid == own),
            in_irq: *irq,
            callsite: callsite.split('+').next().unwrap_or(callsite).to_string(),
            count: 1,
        };
        let same = |x: &IpiSender| {
            (x.pid, x.in_irq, &x.row, &x.callsite, &x.comm)
                == (s.pid, s.in_irq, &s.row, &s.callsite, &s.comm)
        };
        match all.iter_mut().find(|x| same(x)) {
            Some(x) => x.count += 1,
            None => all.push(s),
        }
    }
    all.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)));
    all
}

/// "# entries-in-buffer/entries-written: 19/25   #P:2": the events written but no longer in the buffer.
fn dropped(trace: &str) -> u64 {
    trace
        .lines()
        .take(10)
        .find_map(|l| {
            let (kept, written) = l
                .strip_prefix("# entries-in-buffer/entries-written: ")?
                .split_whitespace()
                .next()?
                .split_once('/')?;
            Some(
                written
                    .parse::<u64>()
                    .ok()?
                    .saturating_sub(kept.parse().ok()?),
            )
        })
        .unwrap_or(0)
}

/// "3 from python3 (pid 812, generic_exec_single)", "2 from rmp-eval itself (…)", "1 from an interrupt while
/// bash ran (pid 9, …)".
pub(crate) fn describe(s: &IpiSender) -> String {
    let who = if s.own {
        format!("rmp-eval itself ({}, tid {})", s.comm, s.pid)
    } else {
        let pid = match s.tgid {
            Some(g) if g != s.pid => format!("pid {g}, tid {}", s.pid),
            _ => format!("pid {}", s.pid),
        };
        match s.in_irq {
            true => format!("an interrupt while {} ran ({pid})", s.comm),
            false => format!("{} ({pid})", s.comm),
        }
    };
    format!("{} from {who} via {}", s.count, s.callsite)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record-tgid capture of the development VM (tests/fixtures/samples/ringbuf-firecracker-vm-6.18-ipi-send).
    const SAMPLE: &str = include_str!(
        "../../tests/fixtures/samples/ringbuf-firecracker-vm-6.18-ipi-send/cpu0-tgid.txt"
    );

    #[test]
    fn sends_are_counted_by_sender_and_the_own_process_is_named() {
        // As if this process were cargo-fmt 21191: its thread tokio-runtime-w 21194 sent one too.
        let all = tally(SAMPLE, &[1], 21191);
        assert_eq!(all.iter().map(|x| x.count).sum::<u64>(), 54);
        let first = &all[0];
        assert_eq!(
            (
                first.row.as_str(),
                first.comm.as_str(),
                first.callsite.as_str(),
                first.count
            ),
            ("CAL", "python3", "ttwu_queue_wakelist", 8)
        );
        assert_eq!(
            describe(first),
            "8 from python3 (pid 21108) via ttwu_queue_wakelist"
        );
        let own: Vec<u32> = all.iter().filter(|x| x.own).map(|x| x.pid).collect();
        assert!(own.iter().all(|p| [21191, 21194].contains(p)), "{own:?}");
        let tokio = all.iter().find(|x| x.pid == 21194).unwrap();
        assert!(tokio.own && tokio.row == "RES");
        assert_eq!(
            describe(tokio),
            "1 from rmp-eval itself (tokio-runtime-w, tid 21194) via wakeup_preempt"
        );
        // Sent from a hard interrupt while rustc (a thread of 20109) ran: the interrupt's, never the task's, even
        // when the task is this process.
        let irq = tally(SAMPLE, &[1], 20109);
        let rustc = irq.iter().find(|x| x.pid == 20111).unwrap();
        assert!(rustc.in_irq && !rustc.own);
        assert_eq!(
            describe(rustc),
            "2 from an interrupt while rustc ran (pid 20109, tid 20111) via generic_exec_single"
        );
        // Listed up to MAX_SENDERS, the rest counted.
        let s = count(SAMPLE, &[1], 21191);
        assert!(s.known());
        assert_eq!(s.senders.len(), MAX_SENDERS);
        assert_eq!(
            s.senders.iter().map(|x| x.count).sum::<u64>() + s.others,
            54
        );
        // None aimed at CPU 0.
        assert!(count(SAMPLE, &[0], 21191).senders.is_empty());
    }

    #[test]
    fn sends_the_buffer_dropped_are_counted() {
        let head = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 19/25   #P:2\n";
        assert_eq!(count(head, &[1], 1).dropped, 6);
        assert_eq!(count(SAMPLE, &[1], 1).dropped, 0);
        let unknown = IpiSenders::unknown("sender unknown: no ipi_send events".into(), &[1]);
        assert!(!unknown.known() && unknown.of_row("CAL").next().is_none());
    }
}
