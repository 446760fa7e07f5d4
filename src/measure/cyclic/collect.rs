//! The main thread's side of a series: it asks the RT thread for the interval recorded so far (`cut`), merges the
//! intervals handed back into the run's statistics (`gather`), keeps the maximum per interval for the plots, and
//! resets the statistics on request (the RT thread empties its own at its next period). Memory stays flat: two
//! interval `SeriesStats` circulate, the run's total is one more, and the maxima are bounded (`MaxSeries`).

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

use super::series::{Live, Series};
use super::stats::SeriesStats;
use crate::measure::result::dist::round3;
use crate::measure::result::{MaxPerInterval, SeriesSummary};

/// One interval as the RT thread recorded it, with its place in the run (seconds since the start).
pub(crate) struct Interval<'a> {
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
    pub(crate) stats: &'a SeriesStats,
}

pub(crate) struct SeriesCollector {
    label: String,
    live: Arc<Live>,
    fresh: SyncSender<Box<SeriesStats>>,
    full: Receiver<Box<SeriesStats>>,
    spare: Option<Box<SeriesStats>>,
    total: Box<SeriesStats>,
    epoch: u64,
    /// Where the interval the RT thread records began, and the bounds of the one handed over but not yet back.
    open_since: f64,
    in_flight: Option<(f64, f64)>,
    maxes: MaxSeries,
}

impl SeriesCollector {
    pub(crate) fn new(
        label: &str,
        live: Arc<Live>,
        fresh: SyncSender<Box<SeriesStats>>,
        full: Receiver<Box<SeriesStats>>,
    ) -> Self {
        SeriesCollector {
            label: label.to_string(),
            live,
            fresh,
            full,
            spare: Some(Box::new(SeriesStats::new())),
            total: Box::new(SeriesStats::new()),
            epoch: 0,
            open_since: 0.0,
            in_flight: None,
            maxes: MaxSeries::new(1.0),
        }
    }

    /// The length of one interval (what `cut` is called every), for the max-per-interval series.
    pub(crate) fn set_interval(&mut self, secs: f64) {
        self.maxes = MaxSeries::new(secs);
    }

    /// Ends the interval being recorded at `now_s` (the RT thread swaps at its next period). Nothing while the
    /// previous one is not back yet: the interval then just lasts longer.
    pub(crate) fn cut(&mut self, now_s: f64) {
        let Some(s) = self.spare.take() else { return };
        match self.fresh.try_send(s) {
            Ok(()) => {
                self.in_flight = Some((self.open_since, now_s));
                self.open_since = now_s;
            }
            Err(TrySendError::Full(s) | TrySendError::Disconnected(s)) => self.spare = Some(s),
        }
    }

    /// Merges what the RT thread handed back; `each` sees every interval of the current reset generation.
    pub(crate) fn gather(&mut self, mut each: impl FnMut(&str, &Interval)) {
        while let Ok(mut st) = self.full.try_recv() {
            let (start_s, end_s) = self
                .in_flight
                .take()
                .unwrap_or((self.open_since, self.open_since));
            self.take(&st, start_s, end_s, &mut each);
            st.reset();
            self.spare = Some(st);
        }
    }

    fn take(
        &mut self,
        st: &SeriesStats,
        start_s: f64,
        end_s: f64,
        each: &mut impl FnMut(&str, &Interval),
    ) {
        if st.epoch != self.epoch {
            return;
        }
        self.total.merge(st);
        self.maxes.push(st.max_abs_dev_ns, end_s - start_s);
        each(
            &self.label,
            &Interval {
                start_s,
                end_s,
                stats: st,
            },
        );
    }

    /// Empties the run's statistics here and, at its next period, on the RT thread.
    pub(crate) fn reset(&mut self, now_s: f64) {
        self.epoch += 1;
        self.live.epoch.store(self.epoch, Relaxed);
        self.total.reset();
        self.maxes.clear();
        self.open_since = now_s;
    }

    /// The run so far (a checkpoint): every interval handed back since the start or the last reset.
    pub(crate) fn summary(&self) -> SeriesSummary {
        let mut s = self.total.summary(&self.label);
        s.max_per_interval = Some(self.maxes.summary());
        s
    }

    /// The run's statistics once the RT thread has ended: what it handed back plus the interval it was in.
    pub(crate) fn finish(
        mut self,
        series: Series,
        end_s: f64,
        mut each: impl FnMut(&str, &Interval),
    ) -> SeriesSummary {
        self.gather(&mut each);
        let cur = series.into_current();
        let start_s = self.open_since;
        self.take(&cur, start_s, end_s, &mut each);
        self.summary()
    }
}

/// The maximum deviation per interval over the whole run, in at most `CAP` points: when full, neighbours are
/// merged (max of the two) and each point covers twice as long — a day at 1 s intervals ends at ~47 s per point.
struct MaxSeries {
    interval_s: f64,
    per: u64,
    pending: Option<u64>,
    pending_n: u64,
    points: Vec<u64>,
}

const CAP: usize = 2048;

impl MaxSeries {
    fn new(interval_s: f64) -> Self {
        MaxSeries {
            interval_s,
            per: 1,
            pending: None,
            pending_n: 0,
            points: Vec::with_capacity(CAP),
        }
    }

    fn clear(&mut self) {
        *self = MaxSeries::new(self.interval_s);
    }

    /// One interval's maximum; `secs`: how long it lasted. The run's end falls inside an interval: a last one
    /// shorter than half an interval is folded into the point before it, since the noise test takes each point
    /// as one interval's sample and a sliver's few periods would count as a quiet second.
    fn push(&mut self, max_ns: u64, secs: f64) {
        if self.per == 1
            && secs < self.interval_s / 2.0
            && let Some(last) = self.points.last_mut()
        {
            *last = (*last).max(max_ns);
            return;
        }
        self.pending = Some(self.pending.map_or(max_ns, |p| p.max(max_ns)));
        self.pending_n += 1;
        if self.pending_n < self.per {
            return;
        }
        self.points.push(self.pending.take().unwrap_or(0));
        self.pending_n = 0;
        if self.points.len() >= CAP {
            self.points = self
                .points
                .chunks(2)
                .map(|c| c.iter().copied().max().unwrap_or(0))
                .collect();
            self.per *= 2;
        }
    }

    fn summary(&self) -> MaxPerInterval {
        let mut max_us: Vec<f64> = self
            .points
            .iter()
            .map(|&ns| round3(ns as f64 / 1000.0))
            .collect();
        if let Some(p) = self.pending {
            max_us.push(round3(p as f64 / 1000.0));
        }
        MaxPerInterval {
            interval_s: self.interval_s * self.per as f64,
            max_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_series_stays_bounded_and_keeps_the_peak() {
        let mut m = MaxSeries::new(1.0);
        for i in 0..100_000u64 {
            m.push(
                if i == 54_321 {
                    9_000_000
                } else {
                    1_000 + i % 7
                },
                1.0,
            );
        }
        let s = m.summary();
        assert!(s.max_us.len() <= CAP, "{}", s.max_us.len());
        assert_eq!(s.max_us.iter().cloned().fold(0.0, f64::max), 9000.0);
        // Points × seconds per point covers the run.
        let covered = s.max_us.len() as f64 * s.interval_s;
        assert!(
            (100_000.0..100_000.0 + 2.0 * s.interval_s).contains(&covered),
            "{covered}"
        );
    }

    #[test]
    fn the_sliver_the_run_ends_in_is_folded_into_the_last_whole_interval() {
        let mut m = MaxSeries::new(1.0);
        for (max_ns, secs) in [(3_000, 1.0), (5_000, 1.0), (7_000, 0.04)] {
            m.push(max_ns, secs);
        }
        assert_eq!(m.summary().max_us, [3.0, 7.0]);
        // Half an interval or more is a sample of its own.
        m.push(1_000, 0.6);
        assert_eq!(m.summary().max_us, [3.0, 7.0, 1.0]);
        // A short interval with nothing before it (the first after a reset) is kept.
        let mut m = MaxSeries::new(1.0);
        m.push(2_000, 0.3);
        assert_eq!(m.summary().max_us, [2.0]);
    }

    #[test]
    fn intervals_handed_over_merge_into_the_run_and_a_reset_drops_the_old_ones() {
        let mut s = Series::new("Cyclic", 1000, None);
        let mut c = s.collector().unwrap();
        s.record(1_000_100, Some(100));
        c.cut(1.0);
        s.record(1_200_000, Some(200_000)); // swaps first: this one is in the second interval
        let mut seen = Vec::new();
        c.gather(|_, iv| seen.push((iv.start_s, iv.end_s, iv.stats.count())));
        assert_eq!(seen, [(0.0, 1.0, 1)]);
        assert_eq!(c.summary().count, 1);
        c.cut(2.0);
        c.reset(2.5);
        // Swaps (the interval with the 1.2 ms period goes back, stale), then applies the reset.
        s.record(1_000_000, Some(0));
        c.gather(|_, _| panic!("a stale interval was passed on"));
        assert_eq!(c.summary().count, 0);
        s.record(1_000_050, Some(50));
        let sum = c.finish(s, 3.0, |_, iv| assert_eq!(iv.stats.count(), 2));
        assert_eq!((sum.count, sum.max_index, sum.max_us), (2, 1, 0.05));
        assert_eq!(sum.max_per_interval.unwrap().max_us, [0.05]);
    }
}
