//! The per-cycle recorder. Everything is allocated in `new`; `record` only does arithmetic, writes into the
//! preallocated HdrHistograms and stores relaxed atomics that another thread reads for the live view — it never
//! allocates, locks or makes a system call, so it may run inside the RT loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub use super::dist::{Dist, HIGHEST_NS, round3};
use super::result::{Buckets, SeriesSummary};

/// The original's bands: width W = period/8 unless given; Great < W, Good < 2W, Poor < 4W, Bad < 8W, else Pathetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bands {
    width_ns: u64,
}

impl Bands {
    pub fn new(period_us: u32, width_us: Option<u32>) -> Self {
        let width_ns = match width_us {
            Some(w) => u64::from(w) * 1000,
            None => u64::from(period_us) * 1000 / 8,
        };
        Bands {
            width_ns: width_ns.max(1),
        }
    }

    pub fn width_ns(&self) -> u64 {
        self.width_ns
    }

    /// The band index (0 = Great … 4 = Pathetic) of an absolute deviation.
    #[inline]
    pub fn classify(&self, abs_dev_ns: u64) -> usize {
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

    pub const NAMES: [&'static str; 5] = ["Great", "Good", "Poor", "Bad", "Pathetic"];
}

/// Counters the RT thread stores (relaxed, single writer) and the live view loads.
#[derive(Default)]
pub struct Live {
    pub count: AtomicU64,
    pub bands: [AtomicU64; 5],
    pub max_dev_ns: AtomicU64,
    pub max_index: AtomicU64,
    pub max_wakeup_ns: AtomicU64,
    pub missed: AtomicU64,
}

/// What the live view shows, loaded from `Live`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LiveSnapshot {
    pub count: u64,
    pub bands: [u64; 5],
    pub max_dev_ns: u64,
    pub max_index: u64,
    pub max_wakeup_ns: u64,
    pub missed: u64,
}

impl Live {
    pub fn snapshot(&self) -> LiveSnapshot {
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

/// One row of the report (Cyclic, Sender, Receiver): period deviation in bands, wakeup latency when known.
pub struct Series {
    label: String,
    period_ns: u64,
    bands: Bands,
    counts: [u64; 5],
    /// |period − target|: the band metric and the deviation percentiles.
    deviation: Dist,
    /// now − scheduled wakeup (cyclictest's metric); empty for series without a schedule (the receiver).
    wakeup: Dist,
    min_dev_ns: i64,
    max_abs_dev_ns: u64,
    max_index: u64,
    min_period_ns: u64,
    max_period_ns: u64,
    early: u64,
    missed: u64,
    live: Arc<Live>,
}

impl Series {
    pub fn new(label: &str, period_us: u32, bucket_width_us: Option<u32>) -> Self {
        Series {
            label: label.to_string(),
            period_ns: u64::from(period_us) * 1000,
            bands: Bands::new(period_us, bucket_width_us),
            counts: [0; 5],
            deviation: Dist::new(),
            wakeup: Dist::new(),
            min_dev_ns: 0,
            max_abs_dev_ns: 0,
            max_index: 0,
            min_period_ns: u64::MAX,
            max_period_ns: 0,
            early: 0,
            missed: 0,
            live: Arc::new(Live::default()),
        }
    }

    /// The counters for the live view (clone the Arc before the RT thread takes the series).
    pub fn live(&self) -> Arc<Live> {
        Arc::clone(&self.live)
    }

    pub fn bands(&self) -> Bands {
        self.bands
    }

    pub fn count(&self) -> u64 {
        self.deviation.count()
    }

    /// Records one period (this wakeup − the previous one) and, for scheduled wakeups, the wakeup latency.
    #[inline]
    pub fn record(&mut self, period_ns: u64, wakeup_ns: Option<u64>) {
        let index = self.deviation.count();
        let dev = period_ns as i64 - self.period_ns as i64;
        let abs = dev.unsigned_abs();
        let band = self.bands.classify(abs);
        self.counts[band] += 1;
        if band > 0 && dev < 0 {
            self.early += 1;
        }
        self.deviation.record(abs);
        if index == 0 || dev < self.min_dev_ns {
            self.min_dev_ns = dev;
        }
        if index == 0 || abs > self.max_abs_dev_ns {
            self.max_abs_dev_ns = abs;
            self.max_index = index;
            self.live.max_dev_ns.store(abs, Relaxed);
            self.live.max_index.store(index, Relaxed);
        }
        self.min_period_ns = self.min_period_ns.min(period_ns);
        self.max_period_ns = self.max_period_ns.max(period_ns);
        if let Some(w) = wakeup_ns {
            self.wakeup.record(w);
            if w >= self.wakeup.max_ns() {
                self.live.max_wakeup_ns.store(w, Relaxed);
            }
        }
        self.live.bands[band].store(self.counts[band], Relaxed);
        self.live.count.store(index + 1, Relaxed);
    }

    /// Runs `record` once and empties the series again, on the RT thread before its loop: every page `record`
    /// uses (code, histograms, counters) is then resident and locked, and the first real period takes no fault.
    pub fn warm_up(&mut self) {
        self.record(self.period_ns, Some(0));
        self.add_missed(0);
        self.counts = [0; 5];
        self.deviation.reset();
        self.wakeup.reset();
        self.min_dev_ns = 0;
        self.max_abs_dev_ns = 0;
        self.max_index = 0;
        self.min_period_ns = u64::MAX;
        self.max_period_ns = 0;
        self.early = 0;
        self.missed = 0;
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
    pub fn add_missed(&mut self, n: u64) {
        self.missed += n;
        self.live.missed.store(self.missed, Relaxed);
    }

    pub fn wakeup(&self) -> &Dist {
        &self.wakeup
    }

    pub fn deviation(&self) -> &Dist {
        &self.deviation
    }

    pub fn summary(&self) -> SeriesSummary {
        let d = self.deviation.summary();
        let us = |ns: u64| round3(ns as f64 / 1000.0);
        let n = self.count();
        SeriesSummary {
            label: self.label.clone(),
            count: n,
            min_us: round3(self.min_dev_ns as f64 / 1000.0),
            max_us: us(self.max_abs_dev_ns),
            max_index: self.max_index,
            p50_us: d.p50_us,
            p99_us: d.p99_us,
            p999_us: d.p999_us,
            p9999_us: d.p9999_us,
            buckets: Buckets {
                great: self.counts[0],
                good: self.counts[1],
                poor: self.counts[2],
                bad: self.counts[3],
                pathetic: self.counts[4],
            },
            min_period_us: if n == 0 { 0.0 } else { us(self.min_period_ns) },
            max_period_us: us(self.max_period_ns),
            early: self.early,
            missed: self.missed,
            wakeup: (self.wakeup.count() > 0).then(|| self.wakeup.summary()),
            hdr: d.hdr,
        }
    }
}

#[cfg(test)]
#[path = "series_tests.rs"]
mod tests;
