//! When each frame reached the first SubDevice, from its distributed clock (EtherCAT probes `with_arrival`): the
//! reply to frame k carries the latch of the frame before it (the read comes before the latching write, see
//! frame/mod.rs), so a latch is frame k−1's only when replies k−1 and k both came back and k−1's write latched.
//! Consecutive latches give the arrival interval, recorded as its own series. The SubDevice clock's rate comes
//! from the latches against their frames' scheduled send times (CLOCK_MONOTONIC): in each block of `BLOCK`
//! frames the one that arrived soonest after its schedule (the least delayed: delays only ever add, so the
//! minimum follows the clocks and not the jitter, as a PTP servo's minimum filter does) is a point of a
//! least-squares line; its slope − 1 is the drift.
//! The same line puts each arrival in this machine's time for the SYNC0 margin (`Sync0`).
//! In the receiver thread: arithmetic and relaxed stores only.

use std::sync::atomic::Ordering::Relaxed;

use super::frame::DcRead;
use super::shared::Shared;
use crate::measure::cyclic::series::Series;
use crate::measure::result::confidence::TailRate;
use crate::measure::result::dist::{Dist, HIGHEST_NS, round3};
use crate::measure::result::{DistSummary, Sync0Report};

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

    /// The latch the line expects for a frame scheduled at `x_ns` (None below 2 points or over no time).
    pub(crate) fn predict(&self, x_ns: u64) -> Option<u64> {
        let var = self.n * self.sxx - self.sx * self.sx;
        let (x0, y0) = self.origin?;
        if self.n < 2.0 || var <= 0.0 {
            return None;
        }
        let b = (self.n * self.sxy - self.sx * self.sy) / var;
        let a = (self.sy - b * self.sx) / self.n;
        let x = x_ns.wrapping_sub(x0) as i64 as f64;
        Some(y0.wrapping_add((a + b * x).round() as i64 as u64))
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
    pub(super) sync0: Sync0,
}

impl Arrival {
    pub(super) fn new(series: Series) -> Arrival {
        Arrival {
            series,
            latched: None,
            last: None,
            block: Block::default(),
            fit: Fit::default(),
            sync0: Sync0::new(),
        }
    }

    /// A matched reply to frame `seq`, received at `rx` (CLOCK_MONOTONIC), with the arrival datagrams' answer.
    #[inline]
    pub(super) fn on_reply(&mut self, seq: u32, dc: DcRead, sh: &Shared, rx: u64) {
        let c = &sh.arrival;
        if dc.read_wkc == 0 {
            c.unanswered.fetch_add(1, Relaxed);
        } else if dc.latch == 0 {
            c.zero.fetch_add(1, Relaxed);
        } else if self.latched == Some(seq.wrapping_sub(1)) {
            let frame = seq.wrapping_sub(1);
            c.latches.fetch_add(1, Relaxed);
            let deadline = sh.deadline(frame);
            self.sync0.on_latch(frame, deadline, dc.latch, &self.fit);
            if let Some((x, y)) = self.block.add(deadline, dc.latch) {
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
        self.sync0.on_reply(seq, rx);
    }
}

/// Blocks of the minimum filter before the clocks' line is trusted: a DC master too lets its drift compensation
/// settle before it starts SYNC0 (about 1 s at 1 kHz).
const SETTLE_BLOCKS: f64 = 8.0;
/// Deviations are recorded from −BIAS up: below the clocks' line by at most the scatter of the least delayed
/// frames, microseconds. Near BIAS the histogram resolves ~1 µs.
pub(crate) const BIAS_NS: i64 = 1_000_000;

/// When each frame reached the first SubDevice after its cycle's start (its scheduled send), in this machine's
/// time: the latch less the clocks' line (the drift removed as a DC master's drift compensation removes it,
/// continuously, from the line known so far), anchored by the earliest reply — a frame reached the SubDevice
/// before its reply came back, so the arrival is at most (its deviation − frame j's deviation) + j's round
/// trip from its schedule, for every frame j; the smallest such anchor is kept. What is recorded is the
/// deviation; the anchor is added at the end.
pub(crate) struct Sync0 {
    pub(crate) dev: Dist,
    /// min over frames of (reply received − scheduled send − deviation), ns.
    pub(crate) anchor: Option<i64>,
    /// Frames not judged: the clocks' line had not settled.
    pub(crate) settling: u64,
    /// The last reply: its sequence and when it came (CLOCK_MONOTONIC).
    last_rx: Option<(u32, u64)>,
}

impl Sync0 {
    pub(crate) fn new() -> Sync0 {
        Sync0 {
            dev: Dist::new(),
            anchor: None,
            settling: 0,
            last_rx: None,
        }
    }

    /// A reply to `seq` came at `rx`.
    #[inline]
    fn on_reply(&mut self, seq: u32, rx: u64) {
        self.last_rx = Some((seq, rx));
    }

    /// Frame `frame`, scheduled at `deadline`, latched `latch`; `fit` the clocks' line so far. Called before
    /// the reply that carried the latch is noted, so `last_rx` is still frame's own reply when it came.
    #[inline]
    fn on_latch(&mut self, frame: u32, deadline: u64, latch: u64, fit: &Fit) {
        let Some(on_line) = fit.predict(deadline).filter(|_| fit.n >= SETTLE_BLOCKS) else {
            self.settling += 1;
            return;
        };
        let dev = latch.wrapping_sub(on_line) as i64;
        self.dev.record((dev + BIAS_NS).max(0) as u64);
        if let Some((seq, rx)) = self.last_rx
            && seq == frame
        {
            let a = rx.wrapping_sub(deadline) as i64 - dev;
            self.anchor = Some(self.anchor.map_or(a, |x| x.min(a)));
        }
    }
}

impl Sync0 {
    /// What the run supports, judged at `shift_us` when given (None: no frame judged, or no reply anchored it).
    pub(crate) fn report(&self, shift_us: Option<u32>, period_us: u32) -> Option<Sync0Report> {
        let anchor = self.anchor?;
        let n = self.dev.count();
        if n == 0 {
            return None;
        }
        // From a recorded deviation to the arrival after the cycle's start, µs.
        let at = |v: f64| round3(v + (anchor - BIAS_NS) as f64 / 1000.0);
        let d = self.dev.summary();
        let after_start = DistSummary {
            count: d.count,
            min_us: at(d.min_us),
            avg_us: at(d.avg_us),
            p50_us: at(d.p50_us),
            p99_us: at(d.p99_us),
            p999_us: at(d.p999_us),
            p9999_us: at(d.p9999_us),
            max_us: at(d.max_us),
            hdr: String::new(),
        };
        let late = shift_us.map(|s| {
            // Arrivals after SYNC0: recorded deviations above shift − anchor (+ the bias), to the histogram's 0.1 %.
            let over = i64::from(s) * 1000 - anchor + BIAS_NS;
            match u64::try_from(over) {
                Ok(t) if t < self.dev.max_ns() => self.dev.hist().count_between(t + 1, HIGHEST_NS),
                Ok(_) => 0,
                Err(_) => n,
            }
        });
        let exposure_s = n as f64 * f64::from(period_us) / 1e6;
        Some(Sync0Report {
            frames: n,
            settling: self.settling,
            smallest_shift_us: after_start.max_us.ceil().max(0.0),
            shift_us,
            min_margin_us: shift_us.map(|s| round3(f64::from(s) - after_start.max_us)),
            late,
            late_rate: shift_us
                .zip(late)
                .map(|(s, k)| TailRate::of(f64::from(s), k, exposure_s)),
            after_start,
        })
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

    #[test]
    fn the_sync0_margin_follows_the_arrivals_with_the_drift_removed() {
        // A SubDevice clock 40 ppm fast; each frame reaches it 30 µs after its schedule plus 0–50 µs (one in 128
        // on time), and its reply comes back 10 µs later: what is said is an upper bound, 10 µs over the truth.
        let (mut s, mut b, mut f) = (Sync0::new(), Block::default(), Fit::default());
        let mut truth = Vec::new();
        for k in 0..20_000u32 {
            let x = 1_000_000_000 + u64::from(k) * 1_000_000;
            let jitter = if k % 128 == 7 {
                0
            } else {
                (u64::from(k) * 7919) % 50_001
            };
            let o = 30_000 + jitter;
            let latch = 777_000_000_000 + x + x / 25_000 + o;
            s.on_reply(k, x + o + 10_000);
            s.on_latch(k, x, latch, &f);
            if let Some((x, y)) = b.add(x, latch) {
                f.add(x, y);
            }
            if k >= 1024 {
                truth.push(o + 10_000);
            }
        }
        assert_eq!(
            s.settling, 1024,
            "the first 8 blocks settle the clocks' line"
        );
        let r = s.report(Some(85), 1000).unwrap();
        assert_eq!(r.frames, 20_000 - 1024);
        let max = *truth.iter().max().unwrap() as f64 / 1000.0;
        assert!(
            (r.after_start.max_us - max).abs() < 1.5,
            "{} vs {max}",
            r.after_start.max_us
        );
        assert_eq!(r.smallest_shift_us, r.after_start.max_us.ceil());
        assert_eq!(r.min_margin_us, Some(round3(85.0 - r.after_start.max_us)));
        // Late: arrivals after 85 µs, to the histogram's resolution (~1 µs here).
        let late = r.late.unwrap();
        let sure = truth.iter().filter(|&&a| a > 86_100).count() as u64;
        let maybe = truth.iter().filter(|&&a| a > 83_900).count() as u64;
        assert!(sure <= late && late <= maybe, "{sure} <= {late} <= {maybe}");
        assert_eq!(r.late_rate.as_ref().unwrap().cycles, late);
        // A shift past every arrival: none late, and the rate bound is the rule of three over the run.
        let r = s.report(Some(200), 1000).unwrap();
        assert_eq!((r.late, r.min_margin_us.unwrap() > 0.0), (Some(0), true));
        assert!(r.line().contains("none late"), "{}", r.line());
        // Without a shift: the smallest one the run supports, nothing judged.
        let r = s.report(None, 1000).unwrap();
        assert_eq!((r.late, r.shift_us), (None, None));
    }
}
