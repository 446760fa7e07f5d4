//! The statistics of one series over a stretch of time, mergeable: the RT thread records into one `Stats` per
//! interval and hands it to the main thread (see `series` and `collect`), which merges the intervals into the
//! run's. `record` only does arithmetic and writes into preallocated histograms.

use crate::measure::result::dist::{Dist, round3};
use crate::measure::result::{Buckets, SeriesSummary};

pub(crate) struct Stats {
    pub(crate) counts: [u64; 5],
    /// |period − target|: the band metric and the deviation percentiles.
    pub(crate) deviation: Dist,
    /// now − scheduled wakeup (cyclictest's metric); empty for series without a schedule (the receiver).
    pub(crate) wakeup: Dist,
    pub(crate) min_dev_ns: i64,
    pub(crate) max_abs_dev_ns: u64,
    /// Index (among the periods recorded since the start or the last reset) of `max_abs_dev_ns`.
    pub(crate) max_index: u64,
    pub(crate) min_period_ns: u64,
    pub(crate) max_period_ns: u64,
    pub(crate) early: u64,
    pub(crate) missed: u64,
    /// The reset generation it was recorded in (stale intervals are dropped by the collector).
    pub(crate) epoch: u64,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Stats {
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
            epoch: 0,
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.deviation.count()
    }

    /// Empties it (two histograms cleared: tens of µs, so never per period).
    pub(crate) fn reset(&mut self) {
        self.counts = [0; 5];
        // Empty histograms are left alone: clearing one writes all of it.
        if self.deviation.count() > 0 {
            self.deviation.reset();
        }
        if self.wakeup.count() > 0 {
            self.wakeup.reset();
        }
        self.min_dev_ns = 0;
        self.max_abs_dev_ns = 0;
        self.max_index = 0;
        self.min_period_ns = u64::MAX;
        self.max_period_ns = 0;
        self.early = 0;
        self.missed = 0;
    }

    /// One period: `index` among the run's periods, `dev` its signed deviation, `band` the band of |dev|.
    #[inline]
    pub(crate) fn record(
        &mut self,
        index: u64,
        dev: i64,
        band: usize,
        period_ns: u64,
        wakeup: Option<u64>,
    ) {
        let abs = dev.unsigned_abs();
        let first = self.deviation.count() == 0;
        self.counts[band] += 1;
        if band > 0 && dev < 0 {
            self.early += 1;
        }
        self.deviation.record(abs);
        if first || dev < self.min_dev_ns {
            self.min_dev_ns = dev;
        }
        if first || abs > self.max_abs_dev_ns {
            self.max_abs_dev_ns = abs;
            self.max_index = index;
        }
        self.min_period_ns = self.min_period_ns.min(period_ns);
        self.max_period_ns = self.max_period_ns.max(period_ns);
        if let Some(w) = wakeup {
            self.wakeup.record(w);
        }
    }

    /// Adds a later interval into this one.
    pub(crate) fn merge(&mut self, o: &Stats) {
        let empty = self.count() == 0;
        if o.count() > 0 {
            for (a, b) in self.counts.iter_mut().zip(o.counts) {
                *a += b;
            }
            if empty || o.min_dev_ns < self.min_dev_ns {
                self.min_dev_ns = o.min_dev_ns;
            }
            if empty || o.max_abs_dev_ns > self.max_abs_dev_ns {
                self.max_abs_dev_ns = o.max_abs_dev_ns;
                self.max_index = o.max_index;
            }
            self.min_period_ns = self.min_period_ns.min(o.min_period_ns);
            self.max_period_ns = self.max_period_ns.max(o.max_period_ns);
            self.early += o.early;
            self.deviation.add(&o.deviation);
            self.wakeup.add(&o.wakeup);
        }
        self.missed += o.missed;
    }

    pub(crate) fn summary(&self, label: &str) -> SeriesSummary {
        let d = self.deviation.summary();
        let us = |ns: u64| round3(ns as f64 / 1000.0);
        let n = self.count();
        SeriesSummary {
            label: label.to_string(),
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
            max_per_interval: None,
            tail: Vec::new(),
            thread: None,
        }
    }
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}
