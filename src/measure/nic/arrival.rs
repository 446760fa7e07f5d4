//! When each frame reached the first SubDevice, from its distributed clock (EtherCAT probes `with_arrival`): the
//! reply to frame k carries the latch of the frame before it (the read comes before the latching write, see
//! frame/mod.rs), so a latch is frame k−1's only when replies k−1 and k both came back and k−1's write latched.
//! Consecutive latches give the arrival interval, recorded as its own series. The SubDevice clock's rate comes
//! from the latches against their frames' scheduled send times (CLOCK_MONOTONIC): in each block of `BLOCK`
//! frames the one that arrived soonest after its schedule (the least delayed: delays only ever add, so the
//! minimum follows the clocks and not the jitter, as a PTP servo's minimum filter does) is a point of a
//! least-squares line; its slope − 1 is the drift.
//! In the receiver thread: arithmetic and relaxed stores only.

use std::sync::atomic::Ordering::Relaxed;

use super::shared::Shared;
use crate::measure::frame::DcRead;
use crate::measure::series::Series;

/// The least-squares line latch = a + b × deadline, over sums from the first point (f64: a run of days at 1 kHz
/// keeps the slope to far below 0.01 ppm).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fit {
    origin: Option<(u64, u64)>,
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl Fit {
    pub(crate) fn add(&mut self, x_ns: u64, y_ns: u64) {
        let (x0, y0) = *self.origin.get_or_insert((x_ns, y_ns));
        let x = x_ns.wrapping_sub(x0) as i64 as f64;
        let y = y_ns.wrapping_sub(y0) as i64 as f64;
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }

    /// The SubDevice clock's rate against CLOCK_MONOTONIC, in ppm (None below 2 points or over no time).
    pub(crate) fn drift_ppm(&self) -> Option<f64> {
        let var = self.n * self.sxx - self.sx * self.sx;
        if self.n < 2.0 || var <= 0.0 {
            return None;
        }
        let slope = (self.n * self.sxy - self.sx * self.sy) / var;
        Some((slope - 1.0) * 1e6)
    }
}

/// Frames per block of the minimum filter.
const BLOCK: u32 = 128;

/// The least delayed frame of the current block: (latch − deadline, deadline, latch).
#[derive(Debug, Clone, Copy, Default)]
struct Block {
    n: u32,
    best: Option<(i64, u64, u64)>,
}

impl Block {
    /// One frame; the block's best point when it is full.
    fn add(&mut self, deadline: u64, latch: u64) -> Option<(u64, u64)> {
        let d = latch.wrapping_sub(deadline) as i64;
        if self.best.is_none_or(|b| d < b.0) {
            self.best = Some((d, deadline, latch));
        }
        self.n += 1;
        if self.n < BLOCK {
            return None;
        }
        let b = self.best.take();
        self.n = 0;
        b.map(|(_, x, y)| (x, y))
    }
}

/// The receiver's side.
pub(super) struct Arrival {
    pub(super) series: Series,
    /// The sequence of the last reply whose frame latched (its latch comes with the next reply).
    latched: Option<u32>,
    /// The last frame whose latch is known, and that latch.
    last: Option<(u32, u64)>,
    block: Block,
    pub(super) fit: Fit,
}

impl Arrival {
    pub(super) fn new(series: Series) -> Arrival {
        Arrival {
            series,
            latched: None,
            last: None,
            block: Block::default(),
            fit: Fit::default(),
        }
    }

    /// A matched reply to frame `seq` with the arrival datagrams' answer.
    #[inline]
    pub(super) fn on_reply(&mut self, seq: u32, dc: DcRead, sh: &Shared) {
        let c = &sh.arrival;
        if dc.read_wkc == 0 {
            c.unanswered.fetch_add(1, Relaxed);
        } else if dc.latch == 0 {
            c.zero.fetch_add(1, Relaxed);
        } else if self.latched == Some(seq.wrapping_sub(1)) {
            let frame = seq.wrapping_sub(1);
            c.latches.fetch_add(1, Relaxed);
            if let Some((x, y)) = self.block.add(sh.deadline(frame), dc.latch) {
                self.fit.add(x, y);
            }
            if let Some((prev, at)) = self.last
                && prev == frame.wrapping_sub(1)
                && dc.latch > at
            {
                self.series.record(dc.latch - at, None);
            }
            self.last = Some((frame, dc.latch));
        }
        if dc.latch_wkc == 0 {
            c.unlatched.fetch_add(1, Relaxed);
        }
        self.latched = (dc.latch_wkc > 0).then_some(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_filter_finds_the_drift_under_one_sided_delays() {
        // A clock 40 ppm fast; each frame late by 0 to 300 us (a pattern, never negative), one in 128 on time.
        let mut b = Block::default();
        let mut f = Fit::default();
        let mut naive = Fit::default();
        for k in 0..20_000u64 {
            let x = 1_000_000_000 + k * 1_000_000;
            let delay = if k % 128 == 7 {
                0
            } else {
                (k * 7919) % 300_000 + (k / 5_000) * 50_000
            };
            let y = 5_000 + x + x / 25_000 + delay;
            naive.add(x, y);
            if let Some((x, y)) = b.add(x, y) {
                f.add(x, y);
            }
        }
        let d = f.drift_ppm().unwrap();
        assert!((d - 40.0).abs() < 0.01, "{d}");
        let n = naive.drift_ppm().unwrap();
        assert!(
            (n - 40.0).abs() > 1.0,
            "delays that grow pull a plain fit off: {n}"
        );
    }
}
