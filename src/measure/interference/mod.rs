//! Interference counters on the RT core, read from files by the supervising thread (never by the RT loop) once a
//! second: device IRQs and architecture interrupts (/proc/interrupts), softirqs (/proc/softirqs), and the other
//! threads that ran there (/proc/PID/task/TID/stat's last CPU and schedstat's run time and timeslices). Each
//! 1-s window is a difference of two snapshots; the run's totals and the window that held the worst wakeup are
//! reported, each source with its remedy (cause.rs). Works on any kernel, without tracefs.

pub(crate) mod cause;
pub(crate) mod report;
pub(crate) mod smi;
mod snap;
pub(crate) mod thin;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::result::RunResult;
use super::session::{Action, Gauges, Watch};
use crate::host::{Host, Kernel};
use crate::measure::cyclic::series::Live;
use report::{Interference, OtherCpu};
use smi::{LocalSmi, MsrDriver, Smi, SmiCounter};
use snap::{Snap, diff, snap};

/// The window length.
pub(crate) const WINDOW: Duration = Duration::from_secs(1);

/// The sampler the supervising thread ticks.
pub(crate) struct Counters {
    host: Host,
    cpu: usize,
    /// The series of the loops on the counted core: their wakeups are the loop's own timer interrupts, the
    /// first's worst wakeup names the worst window.
    live: Vec<Arc<Live>>,
    start: Instant,
    last: Option<(Instant, Snap)>,
    worst_seen: u64,
    /// Never samples (`run --no-counters`, to measure their cost).
    off: bool,
    /// The running kernel, whose counters move (none under --root: a tree's files stand still).
    kernel: Option<Kernel>,
    /// The SMI counters and their last reading; the msr driver while the run needs it.
    smi: Option<(SmiCounter, Vec<u64>)>,
    /// Reads of the counted core's SMI counter from another CPU (each a function-call IPI to it: CAL).
    remote_reads: u64,
    _driver: Option<MsrDriver>,
    /// The run's other RT CPUs (a thread set's), with their IPI rows at the first snapshot.
    others: Vec<(usize, BTreeMap<String, u64>)>,
    pub(crate) report: Interference,
}

impl Counters {
    pub(crate) fn new(host: &Host, cpu: usize) -> Self {
        Counters {
            host: host.clone(),
            cpu,
            live: Vec::new(),
            start: Instant::now(),
            last: None,
            worst_seen: 0,
            off: false,
            kernel: host.kernel(),
            smi: None,
            remote_reads: 0,
            _driver: None,
            others: Vec::new(),
            report: Interference {
                cpu,
                ..Default::default()
            },
        }
    }

    /// Counters that never sample.
    pub(crate) fn off(mut self) -> Self {
        self.off = true;
        self
    }

    /// The run's totals, when they were counted: on the running machine and not turned off.
    pub(crate) fn counted(self) -> Option<Interference> {
        (!self.off && self.kernel.is_some()).then_some(self.report)
    }

    /// The run's totals, counted or not.
    pub(crate) fn into_report(self) -> Interference {
        self.report
    }

    /// The counters of `cpu` (the RT loop's core) for a run whose RT threads run on `rt_cpus`, with the SMI
    /// counters opened; with `on` false they never sample. Made by the session's setup before any RT thread
    /// starts.
    pub(crate) fn open(host: &Host, cpu: usize, rt_cpus: &[usize], on: bool) -> Self {
        let c = Counters::new(host, cpu);
        let mut c = if on { c } else { c.off() };
        c.open_smi(rt_cpus);
        c.others = rt_cpus
            .iter()
            .filter(|&&r| r != cpu)
            .map(|&r| (r, BTreeMap::new()))
            .collect();
        c
    }

    /// The RT core's SMI counter for the RT thread that runs on it (see smi.rs), when SMIs are counted.
    pub(crate) fn smi_reader(&mut self, period_us: u32) -> Option<LocalSmi> {
        self.smi.as_mut()?.0.local_reader(period_us)
    }

    /// Starts counting SMIs (the live machine only: a tree's registers do not move), loading the msr driver
    /// when needed; before the RT loop starts, so that loading it does not fall into the measurement.
    fn open_smi(&mut self, rt_cpus: &[usize]) {
        if self.off || self.kernel.is_none() {
            return;
        }
        let (driver, said) = MsrDriver::ensure(&self.host, self.cpu);
        self.report.smi = Some(match SmiCounter::open(&self.host, self.cpu, rt_cpus) {
            Ok((c, first)) => {
                let smi = Smi::counting(c.cpus.clone(), said, WINDOW.as_secs_f64());
                self.smi = Some((c, first));
                self._driver = Some(driver);
                smi
            }
            Err(why) => Smi::not_counted(why.to_string(), said),
        });
    }

    /// This window's SMIs per CPU counted, or None (not counted, or the counter stopped being readable).
    fn smi_window(&mut self) -> Option<Vec<u64>> {
        let (c, last) = self.smi.as_mut()?;
        self.remote_reads += u64::from(!c.core_read_locally());
        match c.read() {
            Ok(now) => {
                let d = last
                    .iter()
                    .zip(&now)
                    .map(|(a, b)| crate::machine::msr::smi_delta(*a, *b))
                    .collect();
                *last = now;
                Some(d)
            }
            Err(why) => {
                if let Some(s) = &mut self.report.smi {
                    s.lost(why.to_string());
                }
                self.smi = None;
                None
            }
        }
    }

    /// The loops on the counted core, every thread of a set (the run's own wakeups); set before `begin`.
    pub(crate) fn own_loops(&mut self, live: Vec<Arc<Live>>) {
        self.live = live;
    }

    /// The loop started: take the first snapshot. `live` is the RT series' counters (worst wakeup, count), when
    /// `own_loops` did not name them.
    pub(crate) fn begin(&mut self, live: Option<Arc<Live>>) {
        if self.off {
            return;
        }
        if self.live.is_empty() {
            self.live.extend(live);
        }
        self.start = Instant::now();
        let mut first = snap(&self.host, self.cpu, &self.live);
        first.own.insert("CAL".into(), self.remote_reads);
        self.last = Some((self.start, first));
        self.smi_baseline();
        self.others_now();
    }

    /// The other RT CPUs' IPI rows now, as the first snapshot.
    fn others_now(&mut self) {
        let cpus: Vec<usize> = self.others.iter().map(|o| o.0).collect();
        for (o, now) in self.others.iter_mut().zip(snap::ipis(&self.host, &cpus)) {
            o.1 = now;
        }
    }

    /// The other RT CPUs' IPIs since the first snapshot, into the report (at the end).
    fn settle_others(&mut self) {
        if self.off || self.last.is_none() {
            return;
        }
        let cpus: Vec<usize> = self.others.iter().map(|o| o.0).collect();
        self.report.other_cpus = self
            .others
            .iter()
            .zip(snap::ipis(&self.host, &cpus))
            .map(|((cpu, first), now)| OtherCpu {
                cpu: *cpu,
                ipis: now
                    .into_iter()
                    .map(|(row, n)| {
                        let d = n.saturating_sub(first.get(&row).copied().unwrap_or(n));
                        (row, d)
                    })
                    .collect(),
            })
            .collect();
    }

    /// The SMI counts the windows start from, now that the RT thread on the core took that core's first reading
    /// there (or, with none there, read from here).
    fn smi_baseline(&mut self) {
        let Some((c, last)) = &mut self.smi else {
            return;
        };
        self.remote_reads += u64::from(!c.core_read_locally());
        match c.read() {
            Ok(now) => *last = now,
            Err(why) => {
                if let Some(s) = &mut self.report.smi {
                    s.lost(why.to_string());
                }
                self.smi = None;
            }
        }
    }

    /// `r`: the windows, the worst window and the SMIs start again from now, as the series do; the window in
    /// progress is dropped (it began before the reset) and window times count from the reset, as the table's do.
    pub(crate) fn restart(&mut self) {
        if self.off || self.last.is_none() {
            return;
        }
        let smi = self.report.smi.take().map(|s| match s.total {
            Some(_) => Smi::counting(s.cpus, s.driver, WINDOW.as_secs_f64()),
            None => s,
        });
        if let Some((c, last)) = &mut self.smi
            && let Ok(now) = c.read()
        {
            *last = now;
        }
        self.report = Interference {
            cpu: self.cpu,
            smi,
            ..Default::default()
        };
        self.worst_seen = 0;
        self.start = Instant::now();
        self.last = Some((self.start, snap(&self.host, self.cpu, &self.live)));
        self.others_now();
    }

    /// Closes a window when one has passed (or `force`, at the end).
    pub(crate) fn tick(&mut self, force: bool) {
        let Some((at, prev)) = &self.last else { return };
        let now = Instant::now();
        let secs = now.duration_since(*at).as_secs_f64();
        if !force && now.duration_since(*at) < WINDOW || secs <= 0.0 {
            return;
        }
        let mut next = snap(&self.host, self.cpu, &self.live);
        next.own.insert("CAL".into(), self.remote_reads);
        let mut w = diff(prev, &next, secs);
        w.index = self.report.windows;
        w.start_s = at.duration_since(self.start).as_secs_f64();
        let (start_s, secs) = (w.start_s, w.seconds);
        if let Some(d) = self.smi_window() {
            w.add_smi(&d);
            if let Some(s) = &mut self.report.smi {
                s.add(start_s, secs, &d);
            }
        }
        let worst = self
            .live
            .first()
            .map_or(0, |l| l.max_wakeup_ns.load(Relaxed));
        if worst > self.worst_seen {
            self.worst_seen = worst;
            w.worst_wakeup_us = Some(worst as f64 / 1000.0);
            self.report.worst_window = Some(w.clone());
        }
        self.report.add(&w);
        self.last = Some((now, next));
    }
}

/// A `Watch` that also closes the counters' windows: the supervising thread's ticks drive both.
pub(crate) struct Counting<'a> {
    pub(crate) inner: &'a mut dyn Watch,
    pub(crate) counters: &'a mut Counters,
}

impl Watch for Counting<'_> {
    fn note(&mut self, text: &str) {
        self.inner.note(text);
    }
    fn start(&mut self, gauges: Gauges) {
        self.counters
            .begin(gauges.series.first().map(|s| Arc::clone(&s.1)));
        self.inner.start(gauges);
    }
    fn interval(&self) -> Duration {
        self.inner.interval().min(WINDOW)
    }
    fn tick(&mut self, elapsed: Duration) -> Action {
        self.counters.tick(false);
        self.inner.tick(elapsed)
    }
    fn end(&mut self) {
        self.counters.tick(true);
        self.counters.settle_others();
        if let Some(s) = &mut self.counters.report.smi {
            s.close();
        }
        self.inner.end();
    }
    fn checkpoint(&mut self, partial: &RunResult) {
        self.inner.checkpoint(partial);
    }
    fn resets(&self) -> bool {
        self.inner.resets()
    }
    fn restarted(&mut self) {
        self.counters.restart();
        self.inner.restarted();
    }
}

#[cfg(test)]
mod tests;
