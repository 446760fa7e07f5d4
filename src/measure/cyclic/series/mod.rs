//! The per-cycle recorder. Everything is allocated in `new`; `record` only does arithmetic, writes into the
//! preallocated HdrHistograms, stores relaxed atomics that another thread reads for the live view and polls two
//! preallocated channels — it never allocates, locks, blocks or makes a system call, so it may run inside the RT
//! loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

pub(crate) use crate::measure::cyclic::collect::Collector;
use crate::measure::cyclic::stats::Stats;
use crate::measure::result::SeriesSummary;
pub(crate) use crate::measure::result::dist::round3;

/// The original's bands: width W = period/8 unless given; Great < W, Good < 2W, Poor < 4W, Bad < 8W, else Pathetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bands {
    width_ns: u64,
}

impl Bands {
    pub(crate) fn new(period_us: u32, width_us: Option<u32>) -> Self {
        let width_ns = match width_us {
            Some(w) => u64::from(w) * 1000,
            None => u64::from(period_us) * 1000 / 8,
        };
        Bands {
            width_ns: width_ns.max(1),
        }
    }

    pub(crate) fn width_ns(&self) -> u64 {
        self.width_ns
    }

    /// The band index (0 = Great … 4 = Pathetic) of an absolute deviation.
    #[inline]
    pub(crate) fn classify(&self, abs_dev_ns: u64) -> usize {
        let w = self.width_ns;
        if abs_dev_ns < w {
            0
        } else if abs_dev_ns < 2 * w {
            1
        } else if abs_dev_ns < 4 * w {
            2
        } else if abs_dev_ns < 8 * w {
            3
        } else {
            4
        }
    }

    pub(crate) const NAMES: [&'static str; 5] = ["Great", "Good", "Poor", "Bad", "Pathetic"];
}

/// Counters the RT thread stores (relaxed, single writer) and the live view loads.
#[derive(Default)]
pub(crate) struct Live {
    pub(crate) count: AtomicU64,
    pub(crate) bands: [AtomicU64; 5],
    pub(crate) max_dev_ns: AtomicU64,
    pub(crate) max_index: AtomicU64,
    pub(crate) max_wakeup_ns: AtomicU64,
    pub(crate) missed: AtomicU64,
    /// Reset generation the main thread asks for; the RT thread empties its series when it differs from its own.
    pub(crate) epoch: AtomicU64,
}

/// What the live view shows, loaded from `Live`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LiveSnapshot {
    pub(crate) count: u64,
    pub(crate) bands: [u64; 5],
    pub(crate) max_dev_ns: u64,
    pub(crate) max_index: u64,
    pub(crate) max_wakeup_ns: u64,
    pub(crate) missed: u64,
}

impl Live {
    pub(crate) fn snapshot(&self) -> LiveSnapshot {
        LiveSnapshot {
            count: self.count.load(Relaxed),
            bands: std::array::from_fn(|i| self.bands[i].load(Relaxed)),
            max_dev_ns: self.max_dev_ns.load(Relaxed),
            max_index: self.max_index.load(Relaxed),
            max_wakeup_ns: self.max_wakeup_ns.load(Relaxed),
            missed: self.missed.load(Relaxed),
        }
    }
}

/// One row of the report (Cyclic, Sender, Receiver), as the RT thread records it: the current interval's `Stats`
/// and the channels that pass intervals to the main thread's `Collector` (`collect.rs`) and fresh ones back.
/// Both channels are bounded and preallocated, used with try_send/try_recv only (never blocking, never allocating);
/// exactly two `Stats` circulate, so a try_send never finds its channel full.
pub struct Series {
    label: String,
    period_ns: u64,
    bands: Bands,
    cur: Box<Stats>,
    /// Periods recorded since the start or the last reset.
    n: u64,
    epoch: u64,
    live: Arc<Live>,
    fresh: Receiver<Box<Stats>>,
    full: SyncSender<Box<Stats>>,
    collector: Option<Collector>,
}

impl Series {
    pub fn new(label: &str, period_us: u32, bucket_width_us: Option<u32>) -> Self {
        let (fresh_tx, fresh) = sync_channel(1);
        let (full, full_rx) = sync_channel(1);
        let bands = Bands::new(period_us, bucket_width_us);
        let live = Arc::new(Live::default());
        let collector = Collector::new(label, Arc::clone(&live), fresh_tx, full_rx);
        Series {
            label: label.to_string(),
            period_ns: u64::from(period_us) * 1000,
            bands,
            cur: Box::new(Stats::new()),
            n: 0,
            epoch: 0,
            live,
            fresh,
            full,
            collector: Some(collector),
        }
    }

    /// The counters for the live view (clone the Arc before the RT thread takes the series).
    pub(crate) fn live(&self) -> Arc<Live> {
        Arc::clone(&self.live)
    }

    /// The main thread's side (take it before the RT thread takes the series). Without it, `summary` is the run's.
    pub(crate) fn collector(&mut self) -> Option<Collector> {
        self.collector.take()
    }

    pub(crate) fn bands(&self) -> Bands {
        self.bands
    }

    /// Periods outside the Great band since the start or the last reset.
    #[inline]
    pub(crate) fn not_great(&self) -> u64 {
        self.n - self.live.bands[0].load(Relaxed)
    }

    /// Records one period (this wakeup − the previous one) and, for scheduled wakeups, the wakeup latency. Hands
    /// the interval over when the collector has sent a fresh one, and applies a reset it asked for.
    #[inline]
    pub fn record(&mut self, period_ns: u64, wakeup_ns: Option<u64>) {
        self.exchange();
        self.record_here(period_ns, wakeup_ns);
    }

    #[inline]
    fn record_here(&mut self, period_ns: u64, wakeup_ns: Option<u64>) {
        let index = self.n;
        let dev = period_ns as i64 - self.period_ns as i64;
        let abs = dev.unsigned_abs();
        let band = self.bands.classify(abs);
        self.cur.record(index, dev, band, period_ns, wakeup_ns);
        if index == 0 || abs > self.live.max_dev_ns.load(Relaxed) {
            self.live.max_dev_ns.store(abs, Relaxed);
            self.live.max_index.store(index, Relaxed);
        }
        if let Some(w) = wakeup_ns
            && w >= self.live.max_wakeup_ns.load(Relaxed)
        {
            self.live.max_wakeup_ns.store(w, Relaxed);
        }
        let b = &self.live.bands[band];
        b.store(b.load(Relaxed) + 1, Relaxed);
        self.n = index + 1;
        self.live.count.store(self.n, Relaxed);
    }

    /// An interval swap when a fresh `Stats` is waiting, then a reset when the collector asked for one.
    #[inline]
    fn exchange(&mut self) {
        // Swap first: an interval from before a reset then goes back whole and is dropped there as stale.
        if let Ok(mut fresh) = self.fresh.try_recv() {
            fresh.epoch = self.epoch;
            let full = std::mem::replace(&mut self.cur, fresh);
            // Cannot be full (see the type's comment); a failure would only drop this interval.
            let _ = self.full.try_send(full);
        }
        let want = self.live.epoch.load(Relaxed);
        if want != self.epoch {
            self.epoch = want;
            self.clear();
            self.cur.epoch = want;
        }
    }

    /// Empties the current interval and the live counters.
    fn clear(&mut self) {
        self.cur.reset();
        self.n = 0;
        let l = &self.live;
        for a in [
            &l.count,
            &l.max_dev_ns,
            &l.max_index,
            &l.max_wakeup_ns,
            &l.missed,
        ]
        .into_iter()
        .chain(l.bands.iter())
        {
            a.store(0, Relaxed);
        }
    }

    /// Counts periods skipped because the thread woke too late to keep them.
    #[inline]
    pub(crate) fn add_missed(&mut self, n: u64) {
        self.cur.missed += n;
        self.live.missed.fetch_add(n, Relaxed);
    }

    /// The current interval: the whole run when no collector took intervals away.
    pub fn summary(&self) -> SeriesSummary {
        self.cur.summary(&self.label)
    }

    /// The interval still being recorded, with its reset generation.
    pub(crate) fn into_current(self) -> Box<Stats> {
        self.cur
    }
}

#[cfg(test)]
mod tests;
