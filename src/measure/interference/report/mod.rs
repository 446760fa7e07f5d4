//! The interference counters' result (the `interference` key of a run's JSON): sources on the RT core over the
//! whole run and in the window of the worst wakeup, each with its remedy, and the tick truth (ticks.rs) — local
//! timer interrupts per second on the core, less the loop's own wakeups, read against `check`'s nohz_full verdict.

use serde::{Deserialize, Serialize};

use crate::measure::interference::cause::{self, Remedy};

mod ticks;

pub(crate) use ticks::Ticks;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SourceKind {
    Irq,
    Softirq,
    /// A non-device row of /proc/interrupts (RES, CAL, TLB, …).
    Interrupt,
    Thread,
    /// Local timer interrupts beyond the loop's own wakeups.
    Tick,
    /// System Management Interrupts (MSR_SMI_COUNT): the firmware.
    Smi,
    /// Interrupts of a /proc/interrupts row (`name`: CAL) that rmp-eval itself sent to the core, counted where
    /// it sends them: the instrument's, taken out of the row's count.
    Own,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Interferer {
    pub(crate) kind: SourceKind,
    /// IRQ action, softirq type, interrupt row, thread name.
    pub(crate) name: String,
    /// IRQ number or thread id.
    pub(crate) id: Option<u64>,
    /// The thread's process, for threads.
    #[serde(default)]
    pub(crate) pid: Option<u32>,
    /// Interrupts, softirqs, or times a thread was switched in.
    pub(crate) count: u64,
    pub(crate) per_s: f64,
    /// CPU time of a thread on the core.
    #[serde(default)]
    pub(crate) ran_ms: Option<f64>,
    /// SCHED_FIFO/RR priority of a thread (None: a normal thread, or not a thread).
    #[serde(default)]
    pub(crate) rt_priority: Option<u32>,
    pub(crate) remedy: Remedy,
    /// An IPI row's senders as the trace recorded them (`run --trace`), or why they are unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sent_by: Option<String>,
}

impl Interferer {
    pub(crate) fn new(
        kind: SourceKind,
        name: String,
        id: Option<u64>,
        count: u64,
        secs: f64,
    ) -> Self {
        let remedy = match kind {
            SourceKind::Irq => cause::for_irq(),
            SourceKind::Softirq => cause::for_softirq(&name),
            SourceKind::Interrupt => cause::for_arch(&name),
            SourceKind::Tick => cause::for_arch("tick"),
            SourceKind::Thread => cause::for_task(&name),
            SourceKind::Smi => cause::for_smi(),
            SourceKind::Own => cause::for_own(&name),
        };
        Interferer {
            kind,
            name,
            id,
            pid: None,
            count,
            per_s: rate(count, secs),
            ran_ms: None,
            rt_priority: None,
            remedy,
            sent_by: None,
        }
    }

    pub(crate) fn describe(&self) -> String {
        match (self.kind, self.id) {
            (SourceKind::Irq, Some(n)) => format!("IRQ {n} ({})", self.name),
            (SourceKind::Softirq, _) => format!("softirq {}", self.name),
            (SourceKind::Thread, Some(tid)) => {
                let prio = self
                    .rt_priority
                    .map(|p| format!(", FIFO/RR {p}"))
                    .unwrap_or_default();
                match self.pid {
                    Some(p) if u64::from(p) != tid => {
                        format!("{} (pid {p}, tid {tid}{prio})", self.name)
                    }
                    _ => format!("{} (pid {tid}{prio})", self.name),
                }
            }
            (SourceKind::Tick, _) => "local timer ticks".into(),
            (SourceKind::Smi, _) => "SMIs (firmware)".into(),
            (SourceKind::Own, _) => format!("{} interrupts sent by rmp-eval itself", self.name),
            _ => format!("{} interrupts", self.name),
        }
    }
}

/// Report order: RT threads first (only they can keep a FIFO loop from running), then by count.
pub(crate) fn rank(v: &mut [Interferer]) {
    v.sort_by(|a, b| {
        b.rt_priority
            .is_some()
            .cmp(&a.rt_priority.is_some())
            .then(b.count.cmp(&a.count))
            .then(a.kind.cmp(&b.kind))
    });
}

/// The likeliest causes of a late wakeup among a window's sources, from counts alone: RT threads at or above the
/// loop's priority (they run while the loop waits), then device IRQs and network/block softirqs (they run in
/// front of any thread), then the rest by how often they came. The trace (`--trace`) shows which one it was.
pub(crate) fn suspects(sources: &[Interferer], loop_prio: u32) -> Vec<&Interferer> {
    let score = |s: &Interferer| -> f64 {
        match s.kind {
            // By CPU time: a millisecond of a higher-priority thread outweighs any interrupt count; a migration
            // thread's few microseconds do not.
            SourceKind::Thread if s.rt_priority.is_some_and(|p| p >= loop_prio) => {
                1e6 * s.ran_ms.unwrap_or(1.0)
            }
            // The firmware stopped the CPU: nothing on Linux's side outranks that.
            SourceKind::Smi => 1e9 + s.per_s,
            SourceKind::Irq => 1e6 + s.per_s,
            SourceKind::Softirq if s.name.starts_with("NET_") || s.name == "BLOCK" => 1e6 + s.per_s,
            _ => s.per_s,
        }
    };
    let mut v: Vec<&Interferer> = sources.iter().collect();
    v.sort_by(|a, b| score(b).total_cmp(&score(a)));
    v.truncate(3);
    v
}

fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        (n as f64 / secs * 10.0).round() / 10.0
    } else {
        0.0
    }
}

/// One window (1 s) of counters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct CounterWindow {
    pub(crate) index: u64,
    /// Seconds from the start of the loop.
    pub(crate) start_s: f64,
    pub(crate) seconds: f64,
    pub(crate) sources: Vec<Interferer>,
    /// LOC (x86) or arch_timer (arm64) interrupts on the core, the loop's own timer wakeups included.
    pub(crate) local_timer: u64,
    pub(crate) loop_wakeups: u64,
    /// Times the RT thread was preempted (involuntary context switches).
    pub(crate) rt_preempted: u64,
    /// The worst wakeup latency so far, set on the window where it grew.
    #[serde(default)]
    pub(crate) worst_wakeup_us: Option<f64>,
    /// SMIs on the RT core in this window (None: not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) smi: Option<u64>,
    /// SMIs on the housekeeping CPU counted beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) smi_housekeeping: Option<u64>,
}

impl CounterWindow {
    /// The window's SMIs per CPU counted (the RT core first); those on the RT core become a source.
    pub(crate) fn add_smi(&mut self, deltas: &[u64]) {
        self.smi = deltas.first().copied();
        self.smi_housekeeping = deltas.get(1).copied();
        if let Some(&n) = deltas.first().filter(|&&n| n > 0) {
            self.sources.push(Interferer::new(
                SourceKind::Smi,
                "SMI".into(),
                None,
                n,
                self.seconds,
            ));
            rank(&mut self.sources);
        }
    }
}

/// The most sources a run's result keeps (about 200 bytes each in the JSON).
pub(crate) const MAX_SOURCES: usize = 128;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Interference {
    pub(crate) cpu: usize,
    pub(crate) windows: u64,
    pub(crate) seconds: f64,
    /// Over the whole run, most frequent first; at most `MAX_SOURCES` (the rest counted in `omitted_*`).
    pub(crate) sources: Vec<Interferer>,
    /// Sources dropped to keep the result bounded however long the run, and their events.
    #[serde(default)]
    pub(crate) omitted_sources: u64,
    #[serde(default)]
    pub(crate) omitted_count: u64,
    pub(crate) rt_preempted: u64,
    /// The window that held the worst wakeup.
    pub(crate) worst_window: Option<CounterWindow>,
    pub(crate) ticks: Ticks,
    /// The likeliest causes of the worst wakeup, from the counters of its window (see `suspects`).
    #[serde(default)]
    pub(crate) suspects: Vec<Interferer>,
    /// SMIs on the RT core and a housekeeping CPU, or why they were not counted (None: counters off or a tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) smi: Option<crate::measure::interference::smi::Smi>,
    /// The worst wakeup attributed to the firmware, when its window held SMIs on the RT core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) firmware: Option<String>,
    /// A thread set's other RT CPUs (its threads not on the counted core): the IPIs each received over the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) other_cpus: Vec<OtherCpu>,
    /// Per-window local timer rates (all, the loop's own), for the medians: a bounded sample, however long the run.
    #[serde(skip)]
    pub(crate) timer_rates: crate::measure::interference::thin::Thinned<(f64, f64)>,
}

/// The IPIs one of a thread set's other RT CPUs received over the run: /proc/interrupts' RES, CAL, TLB and IWI
/// rows, from the first snapshot to the last (these CPUs get no windows: only the counted core does).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct OtherCpu {
    pub(crate) cpu: usize,
    pub(crate) ipis: std::collections::BTreeMap<String, u64>,
}

impl Interference {
    /// Names, in the remedy of each IPI row (CAL, TLB, RES, IWI) of the run, of its worst window and of the
    /// suspects, who sent them as the trace recorded (or why it could not).
    pub(crate) fn name_senders(&mut self, s: &crate::trace::senders::IpiSenders) {
        let window = self
            .worst_window
            .iter_mut()
            .flat_map(|w| w.sources.iter_mut());
        for x in self
            .sources
            .iter_mut()
            .chain(window)
            .chain(self.suspects.iter_mut())
            .filter(|x| x.kind == SourceKind::Interrupt)
            .filter(|x| matches!(x.name.as_str(), "CAL" | "TLB" | "RES" | "IWI"))
        {
            let (remedy, sent_by) = cause::with_senders(&x.remedy, &x.name, x.count, s);
            x.remedy = remedy;
            x.sent_by = Some(sent_by);
        }
    }

    /// Adds a window's counts to the run's.
    pub(crate) fn add(&mut self, w: &CounterWindow) {
        self.windows += 1;
        self.seconds += w.seconds;
        self.rt_preempted += w.rt_preempted;
        for s in &w.sources {
            match self
                .sources
                .iter_mut()
                .find(|x| x.kind == s.kind && x.name == s.name && x.id == s.id)
            {
                Some(x) => {
                    x.count += s.count;
                    x.ran_ms = match (x.ran_ms, s.ran_ms) {
                        (None, None) => None,
                        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
                    };
                }
                None => self.sources.push(s.clone()),
            }
        }
        for x in &mut self.sources {
            x.per_s = rate(x.count, self.seconds);
        }
        rank(&mut self.sources);
        // A day-long run meets thousands of short-lived threads: keep the result (and the merge) bounded.
        if self.sources.len() > MAX_SOURCES {
            for x in self.sources.split_off(MAX_SOURCES) {
                self.omitted_sources += 1;
                self.omitted_count += x.count;
            }
        }
        // The last window (cut short when the loop ends) is too short for a rate.
        if w.seconds >= 0.5 {
            self.timer_rates.push((
                w.local_timer as f64 / w.seconds,
                w.loop_wakeups as f64 / w.seconds,
            ));
        }
    }

    /// Blames the firmware for the worst wakeup when its window held SMIs on the RT core.
    pub(crate) fn settle_firmware(&mut self) {
        self.firmware = self.worst_window.as_ref().and_then(|w| {
            let n = w.smi.filter(|&n| n > 0)?;
            Some(crate::measure::interference::smi::blame(
                w.worst_wakeup_us.unwrap_or(0.0),
                n,
                self.cpu,
            ))
        });
    }

    /// Every source the result shows: the run's, the worst window's and the suspects.
    fn shown_mut(&mut self) -> impl Iterator<Item = &mut Interferer> {
        let window = self
            .worst_window
            .iter_mut()
            .flat_map(|w| w.sources.iter_mut());
        self.sources
            .iter_mut()
            .chain(window)
            .chain(self.suspects.iter_mut())
    }

    /// The command line already isolates the core (isolcpus=, nohz_full= in force): a cross-CPU call's remedy says
    /// that no boot parameter stops it instead of naming the step that set them (after `settle_suspects`).
    pub(crate) fn settle_isolated(&mut self) {
        for s in self.shown_mut() {
            if s.kind == SourceKind::Interrupt && cause::is_cross_cpu_call(&s.name) {
                s.remedy = cause::for_call_on_isolated(&s.name);
            }
        }
    }

    /// A NIC run whose receiver thread runs on the core: its wakeups from the CPU that took the reply come as RES
    /// or as function calls carrying the queued wakeup (CAL): the run's own, not another task's or the kernel's (after `settle_suspects`).
    pub(crate) fn settle_receiver(&mut self) {
        for s in self.shown_mut() {
            if s.kind == SourceKind::Interrupt && cause::is_wakeup(&s.name) {
                s.remedy = cause::for_receiver_wakeup(&s.name);
            }
        }
    }

    /// Picks the suspects of the worst window for a loop at `loop_prio`.
    pub(crate) fn settle_suspects(&mut self, loop_prio: u32) {
        self.suspects = self
            .worst_window
            .as_ref()
            .map(|w| {
                suspects(&w.sources, loop_prio)
                    .into_iter()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
    }
}

#[cfg(test)]
mod tests;
