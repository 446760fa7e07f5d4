//! What an explanation is made of (the `explained` entries of a `--trace` result), the loop's marker, and the
//! verdict line built from the culprits.

use serde::{Deserialize, Serialize};

use crate::measure::interference::cause::Remedy;
use crate::parse::ftrace;

/// What held the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Thread,
    Irq,
    Softirq,
    /// An architecture interrupt (x86 irq_vectors: local_timer, reschedule, call_function …; arm64 IPIs).
    Interrupt,
    /// An hrtimer callback (the tick, a thread's timer).
    Timer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Culprit {
    pub(crate) kind: Kind,
    /// Thread name, IRQ action, softirq type, interrupt or timer function.
    pub(crate) name: String,
    /// PID or IRQ number.
    pub(crate) id: Option<u64>,
    /// "FIFO 90", "normal" — threads only.
    pub(crate) prio: Option<String>,
    /// Time it held the CPU between the deadline and the RT thread running.
    pub(crate) ran_us: f64,
    pub(crate) remedy: Remedy,
    /// The CPU it ran on, when the trace covers more than one (NIC mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cpu: Option<usize>,
}

impl Culprit {
    pub(crate) fn describe(&self) -> String {
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
pub(crate) struct TimelineStep {
    pub(crate) at_us: f64,
    pub(crate) what: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Explanation {
    /// The cycle's index among recorded periods (the series' max_index counts the same way).
    pub(crate) cycle: u64,
    pub(crate) late_us: f64,
    pub(crate) cpu: usize,
    /// When the RT thread's timer fired, was woken, ran (µs after the deadline), as far as the trace shows.
    pub(crate) timer_us: Option<f64>,
    pub(crate) woken_us: Option<f64>,
    pub(crate) running_us: Option<f64>,
    /// Time the CPU sat idle between the deadline and the timer (timer / idle-exit latency, or the host in a VM).
    pub(crate) idle_us: f64,
    pub(crate) culprits: Vec<Culprit>,
    pub(crate) timeline: Vec<TimelineStep>,
    pub(crate) verdict: String,
    /// NIC mode: the reply's way from the NIC to the receiver thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<ReceivePath>,
    /// NIC mode: a request with no reply (`cycle` = its frame; `late_us` 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lost: Option<LostFrame>,
}

/// What the trace shows of a request that got no reply, from the sender's marker (µs from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LostFrame {
    pub(crate) nic: String,
    /// The frame leaving: the sender's net_dev_xmit on `nic` ("net_dev_xmit rc=N"); None: not in the trace.
    pub(crate) sent: Option<PathEvent>,
    /// When more frames arrived on `nic` than replies were matched, from the transmit until the reply to a later
    /// frame was marked: the first arrival (netif_receive_skb, or netif_rx).
    pub(crate) arrived: Option<PathEvent>,
    /// Frames that arrived on `nic` and replies matched over that time.
    pub(crate) arrivals: u64,
    pub(crate) replies: u64,
    /// How long after the send the trace was followed (to that marker, or the end of the trace).
    pub(crate) watched_us: f64,
    pub(crate) remedy: Remedy,
}

/// One event on a reply's receive path, at µs from the send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PathEvent {
    pub(crate) cpu: usize,
    pub(crate) at_us: f64,
    /// How long it ran (an IRQ handler, a softirq), when it has an end.
    pub(crate) ran_us: Option<f64>,
    /// IRQ action, the task a softirq ran in (ksoftirqd/N or the task it interrupted), the waker's name.
    pub(crate) name: String,
    /// IRQ number, or the waker's pid.
    pub(crate) id: Option<u64>,
}

/// A stretch of the round trip and what would shorten it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RoundTripPhase {
    /// "wire_and_peer", "kernel_receive", "wakeup", "receiver".
    pub(crate) name: String,
    pub(crate) us: f64,
    pub(crate) remedy: Remedy,
}

/// NIC mode: what the trace shows of one reply from the send to the receiver thread's marker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReceivePath {
    pub(crate) nic: String,
    /// The NIC's interrupt that started the receive (none on a veth: the peer's send delivers it).
    pub(crate) irq: Option<PathEvent>,
    /// Whether `irq` is one of the NIC's own IRQs as /sys (device/msi_irqs) and /proc/interrupts name them; None
    /// when none are known (a veth) or no IRQ was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) irq_of_nic: Option<bool>,
    /// The frame handed to the stack (netif_rx: a veth, RPS) before NET_RX.
    pub(crate) netif_rx: Option<PathEvent>,
    /// The NET_RX softirq that delivered the frame (netif_receive_skb on `nic` inside it).
    pub(crate) net_rx: Option<PathEvent>,
    /// netif_receive_skb of the frame on `nic`.
    pub(crate) received: Option<PathEvent>,
    /// The receiver thread woken (sched_waking): the waker's CPU and name; `woken_cpu` is where it was sent.
    pub(crate) woken: Option<PathEvent>,
    pub(crate) woken_cpu: Option<usize>,
    /// The receiver thread switched in.
    pub(crate) running: Option<PathEvent>,
    pub(crate) phases: Vec<RoundTripPhase>,
}

/// The marker the RT loop writes at each wakeup: "rmp-eval c=CYCLE dl=DEADLINE_NS lat=LATENCY_NS".
pub(crate) struct Mark {
    pub(crate) cycle: u64,
    pub(crate) deadline_ns: u64,
    pub(crate) lat_ns: u64,
}

/// The marker of a trace_marker write's text, when it is one.
pub(crate) fn mark(text: &str) -> Option<Mark> {
    if !text.starts_with("rmp-eval ") {
        return None;
    }
    let f = ftrace::fields(text);
    Some(Mark {
        cycle: ftrace::num(&f, "c")?,
        deadline_ns: ftrace::num(&f, "dl")?,
        lat_ns: ftrace::num(&f, "lat")?,
    })
}

/// A culprit counts when it took at least this share of the lateness.
const SIGNIFICANT: f64 = 0.2;

/// The verdict line. `holder`: the task that had the CPU at the deadline.
pub(crate) fn verdict(
    core: usize,
    late: f64,
    idle: f64,
    c: &[Culprit],
    timer: Option<f64>,
    holder: Option<&Culprit>,
) -> String {
    let big: Vec<&Culprit> = c
        .iter()
        .filter(|x| x.ran_us >= SIGNIFICANT * late && x.ran_us >= 1.0)
        .collect();
    let also = |from: usize, min: f64| -> String {
        c.iter()
            .filter(|x| x.ran_us >= min * late && x.ran_us >= 1.0)
            .skip(from)
            .take(2)
            .map(|o| {
                format!(
                    "; also {} {:.0} µs → {}",
                    o.describe(),
                    o.ran_us,
                    o.remedy.command(core)
                )
            })
            .collect()
    };
    if let Some(top) = big.first() {
        return format!(
            "late by {late:.0} µs: {} ran {:.0} µs on CPU {core} → {}{}",
            top.describe(),
            top.ran_us,
            top.remedy.command(core),
            also(1, SIGNIFICANT)
        );
    }
    if idle >= SIGNIFICANT * late {
        let t = timer
            .map(|t| format!(", its timer fired {t:.0} µs after the deadline"))
            .unwrap_or_default();
        return format!(
            "late by {late:.0} µs: CPU {core} was idle{t} — nothing on the CPU was in the way (timer or \
             idle-exit latency; in a VM, the host) → {}{}",
            crate::measure::interference::cause::for_idle_exit().command(core),
            also(0, 0.1)
        );
    }
    if let Some(t) = timer.filter(|&t| t >= SIGNIFICANT * late) {
        let who = holder
            .map(|h| format!(" ({} had it)", h.describe()))
            .unwrap_or_default();
        return format!(
            "late by {late:.0} µs: the timer interrupt came {t:.0} µs after the deadline while CPU {core} was busy{who} \
             and no handler ran in between (interrupts off in the kernel, an SMI, or in a VM the host){}",
            also(0, 0.1)
        );
    }
    format!(
        "late by {late:.0} µs: nothing traced on CPU {core} accounts for it (the delay is outside this CPU's events)"
    )
}
