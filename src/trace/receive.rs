//! NIC mode: one reply's receive path explained from the trace of every CPU — from the send (the marker's `dl`)
//! to the receiver thread's marker: the NIC's IRQ (which IRQ, which CPU), the frame handed to the stack (netif_rx),
//! the NET_RX softirq that delivered it (which CPU, in which task), the receiver's wakeup (by whom, from which
//! CPU) and what held the receiver's CPU until it ran. The round trip is cut into phases, each with the fix step
//! that would shorten it.

mod judge;
pub(crate) mod lost;

use super::event::{Event, Net, Softirq, TraceEntry, What, events};
use super::model::{Culprit, Explanation, Kind, Mark, PathEvent, ReceivePath, TimelineStep};
use super::walk::Walk;
use judge::judge;

/// The NET_RX softirq's vector.
const NET_RX: u32 = 3;

fn ev(l: &Event, d: u64, name: &str, id: Option<u64>) -> PathEvent {
    PathEvent {
        cpu: l.cpu,
        at_us: (l.ts_ns as f64 - d as f64) / 1000.0,
        ran_us: None,
        name: name.to_string(),
        id,
    }
}

/// The first event after `from` on `cpu` that `is` accepts, and its time.
fn next_on(lines: &[&Event], from: usize, cpu: usize, is: impl Fn(&Event) -> bool) -> Option<u64> {
    lines[from..]
        .iter()
        .find(|l| l.cpu == cpu && is(l))
        .map(|l| l.ts_ns)
}

fn is_net_rx(l: &Event, at: Softirq) -> bool {
    matches!(l.what, What::Softirq { at: a, vec: NET_RX } if a == at)
}

/// A netif_rx (`Net::Rx`) or netif_receive_skb (`Net::Receive`) on `nic`.
fn dev_is(l: &Event, at: Net, nic: &str) -> bool {
    matches!(&l.what, What::Net { at: a, dev, .. } if *a == at && dev == nic)
}

/// The trace around one reply: its events in time order, the marker its receiver wrote, and the send.
struct Reply<'t> {
    lines: Vec<&'t Event>,
    /// The marker's line and what it says.
    mi: usize,
    m: Mark,
    /// The receiver thread (the marker's writer).
    me: u64,
    /// The send in trace time (ns).
    d: u64,
    /// The first line that may be after the send.
    lo: usize,
}

impl<'t> Reply<'t> {
    /// The last marker of a window and the send it stamps; None without a marker.
    fn last_marker(entries: &'t [TraceEntry]) -> Option<Self> {
        let mut lines: Vec<&Event> = events(entries).collect();
        lines.sort_by_key(|l| l.ts_ns);
        let (mi, m) = lines
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, l)| l.mark().map(|m| (i, m)))?;
        let (w, me) = (lines[mi].ts_ns, u64::from(lines[mi].pid));
        // The send in trace time: the marker's dl when the trace clock is CLOCK_MONOTONIC (as set), else W − RTT.
        let d = if m.deadline_ns <= w && w - m.deadline_ns < m.lat_ns + 1_000_000 {
            m.deadline_ns
        } else {
            w.saturating_sub(m.lat_ns)
        };
        // µs resolution of the text: a line stamped 1 µs before the send may still be after it.
        let lo = lines.partition_point(|l| l.ts_ns + 1000 < d);
        Some(Reply {
            lines,
            mi,
            m,
            me,
            d,
            lo,
        })
    }

    fn marker(&self) -> &'t Event {
        self.lines[self.mi]
    }

    /// µs after the send.
    fn rel(&self, t: u64) -> f64 {
        (t as f64 - self.d as f64) / 1000.0
    }

    /// The last line after the send and before `before` (and the marker) that `is` accepts.
    fn last(&self, is: &dyn Fn(&Event) -> bool, before: usize) -> Option<usize> {
        (self.lo..before.min(self.mi))
            .rev()
            .find(|&i| is(self.lines[i]))
    }

    /// The receiver's wakeup since the send.
    fn waking(&self) -> Option<usize> {
        [true, false].into_iter().find_map(|waking| {
            self.last(
                &|l: &Event| {
                    matches!(&l.what, What::Wakeup { waking: w, task, .. }
                        if *w == waking && u64::from(task.pid) == self.me)
                },
                self.mi,
            )
        })
    }

    /// The NET_RX that delivered frame `ri` (the one open on that CPU at netif_receive_skb) and the netif_rx
    /// before it, into `path`; where the receive path began (NET_RX's entry, else `ri`).
    fn net_rx(&self, ri: usize, nic: &str, path: &mut ReceivePath) -> usize {
        let (lines, d) = (&self.lines, self.d);
        let cpu = lines[ri].cpu;
        let mut start = ri;
        if let Some(si) = self.last(
            &|l: &Event| l.cpu == cpu && is_net_rx(l, Softirq::Entry),
            ri,
        ) {
            let s = lines[si];
            let end = next_on(lines, ri, cpu, |l| is_net_rx(l, Softirq::Exit));
            path.net_rx = Some(PathEvent {
                ran_us: end.map(|e| (e - s.ts_ns) as f64 / 1000.0),
                ..ev(s, d, &s.comm, Some(u64::from(s.pid)))
            });
            start = si;
        }
        path.netif_rx = self
            .last(&|l: &Event| dev_is(l, Net::Rx, nic), ri)
            .map(|i| ev(lines[i], d, &lines[i].comm, None));
        start
    }

    /// The NIC's IRQ before the receive path began at `before`, into `path`: one of its own (by /sys) that raised
    /// NET_RX on its CPU; on PREEMPT_RT (and `threadirqs`) the handler runs in its thread `irq/N-NAME`, which raises
    /// and runs NET_RX itself — the hard IRQ only woke it — so the thread's N names it (its last hard entry); else
    /// the NIC's last IRQ before NET_RX; without a list from /sys, one named after the interface or one that raised
    /// NET_RX.
    fn irq(&self, before: usize, nic: &str, nic_irqs: &[u32], path: &mut ReceivePath) {
        let (lines, d, lo) = (&self.lines, self.d, self.lo);
        let raised_rx = |i: usize| {
            let cpu = lines[i].cpu;
            lines[i..before]
                .iter()
                .filter(|l| l.cpu == cpu)
                .take_while(|l| !matches!(l.what, What::IrqExit { .. }))
                .any(|l| is_net_rx(l, Softirq::Raise))
        };
        let entry_of = |l: &Event, is: &dyn Fn(u64) -> bool| matches!(l.what, What::IrqEntry { irq, .. } if is(u64::from(irq)));
        let of_nic = |n: u64| nic_irqs.iter().any(|&x| u64::from(x) == n);
        let thread_irq: Option<u64> = lines[before]
            .comm
            .strip_prefix("irq/")
            .and_then(|r| r.split('-').next()?.parse().ok());
        let irq = (lo..before)
            .rev()
            .find(|&i| entry_of(lines[i], &of_nic) && raised_rx(i))
            .or_else(|| {
                let n = thread_irq?;
                self.last(&|l: &Event| entry_of(l, &|x| x == n), before)
            })
            .or_else(|| self.last(&|l: &Event| entry_of(l, &of_nic), before))
            .or_else(|| {
                self.last(
                    &|l: &Event| matches!(&l.what, What::IrqEntry { name, .. } if name.contains(nic)),
                    before,
                )
            })
            .or_else(|| {
                (lo..before)
                    .rev()
                    .find(|&i| matches!(lines[i].what, What::IrqEntry { .. }) && raised_rx(i))
            });
        path.irq = irq.and_then(|i| {
            let l = lines[i];
            let What::IrqEntry { irq, name } = &l.what else {
                return None;
            };
            let end = next_on(lines, i, l.cpu, |x| matches!(x.what, What::IrqExit { .. }));
            Some(PathEvent {
                ran_us: end.map(|e| (e - l.ts_ns) as f64 / 1000.0),
                ..ev(l, d, name, Some(u64::from(*irq)))
            })
        });
        if path.irq.is_none() {
            let s = lines[before];
            path.irq = thread_irq.map(|n| ev(s, d, &s.comm, Some(n)));
        }
        path.irq_of_nic = match (&path.irq, nic_irqs.is_empty()) {
            (Some(e), false) => Some(e.id.is_some_and(of_nic)),
            _ => None,
        };
    }

    /// The receiver's wakeup at `wi` and its switch-in, into `path`; what held its CPU in between (largest first)
    /// and how long that CPU was idle (ns).
    fn wait(&self, wi: usize, path: &mut ReceivePath) -> (Vec<Culprit>, u64) {
        let (lines, d, mk, me) = (&self.lines, self.d, self.marker(), self.me);
        let l = lines[wi];
        path.woken = Some(ev(l, d, &l.comm, Some(u64::from(l.pid))));
        path.woken_cpu = match &l.what {
            What::Wakeup { target_cpu, .. } => Some(*target_cpu),
            _ => None,
        };
        // Switched in, or (the switch lost) the first event of its own: at the latest, its marker.
        let Some(r) = lines[wi + 1..=self.mi].iter().find(|l| {
            l.pid == mk.pid
                || matches!(&l.what, What::Switch { next, .. } if u64::from(next.pid) == me)
        }) else {
            return (Vec::new(), 0);
        };
        path.running = Some(ev(r, d, &mk.comm, Some(me)));
        let on: Vec<&Event> = lines[..self.mi]
            .iter()
            .copied()
            .filter(|x| x.cpu == r.cpu)
            .collect();
        let Some(first) = on.first() else {
            return (Vec::new(), 0);
        };
        let mut idle_ns = 0;
        let mut walk = Walk::new(first);
        let mut ran: std::collections::BTreeMap<_, u64> = Default::default();
        for x in on.iter().take_while(|x| x.ts_ns <= r.ts_ns) {
            let (h, a, b) = walk.span(x);
            let (a, b) = (a.max(l.ts_ns), b.min(r.ts_ns));
            if b > a {
                match h.id {
                    Some(0) if h.kind == Kind::Thread => idle_ns += b - a,
                    id if id == Some(me) && h.kind == Kind::Thread => {}
                    _ => *ran.entry(h).or_default() += b - a,
                }
            }
            walk.apply(x);
        }
        let mut wait: Vec<Culprit> = ran
            .into_iter()
            .map(|(h, ns)| Culprit {
                cpu: Some(r.cpu),
                ..h.culprit(ns)
            })
            .collect();
        wait.sort_by(|a, b| b.ran_us.total_cmp(&a.ran_us));
        (wait, idle_ns)
    }

    /// The reply's steps from the send to the marker, in time order.
    fn timeline(&self, path: &ReceivePath, nic: &str) -> Vec<TimelineStep> {
        let (mk, m, me) = (self.marker(), &self.m, self.me);
        let mut timeline: Vec<TimelineStep> = vec![TimelineStep {
            at_us: 0.0,
            what: format!("frame {} sent", m.cycle),
        }];
        let step = |e: &Option<PathEvent>, what: &dyn Fn(&PathEvent) -> String| {
            e.as_ref().map(|e| TimelineStep {
                at_us: e.at_us,
                what: format!("CPU {}: {}", e.cpu, what(e)),
            })
        };
        timeline.extend(
            [
                step(&path.irq, &|e| {
                    format!("IRQ {} ({}) enters", e.id.unwrap_or(0), e.name)
                }),
                step(&path.netif_rx, &|e| {
                    format!("netif_rx on {nic} (in {})", e.name)
                }),
                step(&path.net_rx, &|e| {
                    format!("softirq NET_RX enters (in {})", e.name)
                }),
                step(&path.received, &|_| format!("netif_receive_skb on {nic}")),
                step(&path.woken, &|e| format!("{} wakes {}", e.name, mk.comm)),
                step(&path.running, &|e| format!("switch → {} ({})", e.name, me)),
            ]
            .into_iter()
            .flatten(),
        );
        timeline.push(TimelineStep {
            at_us: self.rel(mk.ts_ns),
            what: format!(
                "CPU {}: {} marks frame {} (RTT {:.1} µs)",
                mk.cpu,
                mk.comm,
                m.cycle,
                m.lat_ns as f64 / 1000.0
            ),
        });
        timeline.sort_by(|a, b| a.at_us.total_cmp(&b.at_us));
        timeline
    }
}

/// Explains the last marker of a window (all CPUs): the reply whose receiver wrote it, on `nic`.
/// `rt_cpus`: the sender's and the receiver's CPUs (work there is interference; elsewhere it is housekeeping).
/// `nic_irqs`: the NIC's IRQs as /sys and /proc/interrupts name them (empty: none known, e.g. a veth).
pub(crate) fn explain(
    entries: &[TraceEntry],
    nic: &str,
    rt_cpus: &[usize],
    nic_irqs: &[u32],
) -> Option<Explanation> {
    let r = Reply::last_marker(entries)?;
    let (lines, d, m) = (&r.lines, r.d, &r.m);
    let waking = r.waking();
    // Without a wakeup since the previous reply, this one was already queued when the receiver asked for it: the
    // frames received in this window are later ones, so none of them is taken for it.
    let ri = waking.and_then(|wi| r.last(&|l: &Event| dev_is(l, Net::Receive, nic), wi));
    let mut path = ReceivePath {
        nic: nic.to_string(),
        irq: None,
        irq_of_nic: None,
        netif_rx: None,
        net_rx: None,
        received: ri.map(|i| ev(lines[i], d, &lines[i].comm, Some(u64::from(lines[i].pid)))),
        woken: None,
        woken_cpu: None,
        running: None,
        phases: Vec::new(),
    };
    if let Some(ri) = ri {
        let start = r.net_rx(ri, nic, &mut path);
        r.irq(start, nic, nic_irqs, &mut path);
    }
    let (wait, idle_ns) = waking.map_or((Vec::new(), 0), |wi| r.wait(wi, &mut path));
    let (woken_us, running_us) = (
        path.woken.as_ref().map(|e| e.at_us),
        path.running.as_ref().map(|e| e.at_us),
    );
    let marked_us = r.rel(r.marker().ts_ns);
    let (culprits, verdict) = judge(&mut path, wait, rt_cpus, marked_us, m.cycle, m.lat_ns);
    let timeline = r.timeline(&path, nic);
    Some(Explanation {
        cycle: m.cycle,
        late_us: m.lat_ns as f64 / 1000.0,
        cpu: path.running.as_ref().map_or(r.marker().cpu, |p| p.cpu),
        timer_us: None,
        woken_us,
        running_us,
        idle_us: idle_ns as f64 / 1000.0,
        culprits,
        timeline,
        verdict,
        path: Some(path),
        lost: None,
    })
}

#[cfg(test)]
mod tests;
