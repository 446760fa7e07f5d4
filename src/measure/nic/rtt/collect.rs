//! The round trips as the main thread sees them while a NIC run goes on: the receiver (an RT thread) hands its
//! statistics over in intervals, as the series do (`collect`): two preallocated boxes circulate through bounded
//! channels used with try_send/try_recv only, a swap of two `Dist`s is a pointer swap, and a reset is a new epoch
//! the receiver applies itself. So a checkpoint carries the round trips so far, and `r`/SIGUSR1 restart them.
//! What the result says of them is summary.rs's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

mod summary;

use crate::measure::nic::rtt::{Counts, Matcher};
use crate::measure::result::RttSummary;
use crate::measure::result::dist::Dist;
use crate::measure::session::Extra;
pub(crate) use summary::Context;
use summary::summarize;

/// One interval of round trips: the matcher's distribution and counts.
pub(crate) struct RttStats {
    pub(crate) dist: Dist,
    pub(crate) counts: Counts,
    /// The reset generation it was recorded in (stale intervals are dropped).
    epoch: u64,
    /// The matcher's `answered_through` when it was handed over.
    through: u64,
    /// The first frame it counts (`Matcher::counts_from`).
    from: u64,
}

impl RttStats {
    fn new() -> Self {
        RttStats {
            dist: Dist::new(),
            counts: Counts::default(),
            epoch: 0,
            through: 0,
            from: 0,
        }
    }

    fn reset(&mut self) {
        // Clearing a histogram writes all of it: skipped when already empty.
        if self.dist.count() > 0 {
            self.dist.reset();
        }
        self.counts = Counts::default();
    }

    fn merge(&mut self, o: &RttStats) {
        self.dist.add(&o.dist);
        self.counts.merge(&o.counts);
    }
}

/// The receiver's side: swaps the matcher's statistics for a fresh box when the main thread sent one, and empties
/// them when the main thread asked for a reset. No allocation, no lock, no system call.
pub(crate) struct Handover {
    fresh: Receiver<Box<RttStats>>,
    full: SyncSender<Box<RttStats>>,
    want: Arc<AtomicU64>,
    epoch: u64,
}

impl Handover {
    /// Called by the receiver between frames; `sent`: the frames sent so far (a reset counts from the next one).
    #[inline]
    pub(crate) fn poll(&mut self, m: &mut Matcher, sent: u64) {
        let want = self.want.load(Relaxed);
        if want != self.epoch {
            self.epoch = want;
            m.restart(sent);
        }
        if let Ok(mut b) = self.fresh.try_recv() {
            std::mem::swap(&mut b.dist, &mut m.dist);
            b.counts = std::mem::take(&mut m.counts);
            b.epoch = self.epoch;
            b.through = m.answered_through();
            b.from = m.counts_from();
            // Two boxes circulate: the channel (capacity 1) is never full here.
            let _ = self.full.try_send(b);
        }
    }

    /// The receiver has ended: what it holds is the last interval.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }
}

/// The main thread's side: merges the intervals handed back into the round trips since the start or last reset.
pub(crate) struct RttCollector {
    fresh: SyncSender<Box<RttStats>>,
    full: Receiver<Box<RttStats>>,
    want: Arc<AtomicU64>,
    spare: Option<Box<RttStats>>,
    total: Box<RttStats>,
    epoch: u64,
    /// Frames sent and refused before the last reset: read through `sent` at the reset, the first replaced by the
    /// receiver's own count (`RttStats::from`) once an interval of the new generation is back.
    base: (u64, u64),
    /// Frames whose reply was due by the last interval handed back (see `Matcher::answered_through`).
    through: u64,
    sent: Box<dyn Fn() -> (u64, u64)>,
}

/// A pair: the receiver's `Handover` and the main thread's `RttCollector`; `sent` reads (frames sent, not sent).
pub(crate) fn pair(sent: Box<dyn Fn() -> (u64, u64)>) -> (Handover, RttCollector) {
    let (fresh_tx, fresh) = sync_channel(1);
    let (full, full_rx) = sync_channel(1);
    let want = Arc::new(AtomicU64::new(0));
    (
        Handover {
            fresh,
            full,
            want: Arc::clone(&want),
            epoch: 0,
        },
        RttCollector {
            fresh: fresh_tx,
            full: full_rx,
            want,
            spare: Some(Box::new(RttStats::new())),
            total: Box::new(RttStats::new()),
            epoch: 0,
            base: (0, 0),
            through: 0,
            sent,
        },
    )
}

impl RttCollector {
    fn take(&mut self, st: &RttStats) {
        self.through = self.through.max(st.through);
        if st.epoch == self.epoch {
            self.base.0 = st.from;
            self.total.merge(st);
        }
    }

    /// The round trips since the start or the last reset, with the receiver's last interval when it has ended.
    pub(crate) fn summary(&self, ctx: &Context) -> RttSummary {
        summarize(&self.total, ctx)
    }

    /// Frames (sent, not sent) since the start or the last reset. While the receiver runs (`ended` false) only the
    /// frames whose reply was due by the last interval handed back count: the later ones may still be in flight,
    /// or answered in the interval the receiver holds, and are not lost yet.
    pub(crate) fn sent_since_reset(&self, ended: bool) -> (u64, u64) {
        let (mut s, n) = (self.sent)();
        if !ended {
            s = s.min(self.through);
        }
        (s.saturating_sub(self.base.0), n.saturating_sub(self.base.1))
    }

    /// The receiver has ended with `m` (its last interval, recorded in generation `epoch`).
    pub(crate) fn finish(&mut self, m: Matcher, epoch: u64) {
        self.gather();
        let last = RttStats {
            through: m.answered_through(),
            from: m.counts_from(),
            dist: m.dist,
            counts: m.counts,
            epoch,
        };
        self.take(&last);
    }
}

impl Extra for RttCollector {
    fn cut(&mut self, _now_s: f64) {
        let Some(s) = self.spare.take() else { return };
        match self.fresh.try_send(s) {
            Ok(()) => {}
            Err(TrySendError::Full(s) | TrySendError::Disconnected(s)) => self.spare = Some(s),
        }
    }

    fn gather(&mut self) {
        while let Ok(mut st) = self.full.try_recv() {
            self.take(&st);
            st.reset();
            self.spare = Some(st);
        }
    }

    fn reset(&mut self, _now_s: f64) {
        self.epoch += 1;
        self.want.store(self.epoch, Relaxed);
        self.total.reset();
        self.base = (self.sent)();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::nic::tstamp::Stamps;

    fn reply(m: &mut Matcher, seq: u32, rtt_ns: u64) {
        let st = Stamps {
            sw_ns: 1_000_000,
            hw_ns: 0,
            tx: true,
        };
        m.on_tx(seq, st, u64::from(seq) + 1, |_| 0);
        let rx = Stamps {
            sw_ns: 1_000_000 + rtt_ns,
            hw_ns: 0,
            tx: false,
        };
        m.on_reply(seq, Some(2), rx, 0, u64::from(seq) + 1, |_| 0);
    }

    fn ctx(sent: (u64, u64)) -> Context {
        Context {
            sent: sent.0,
            not_sent: sent.1,
            hardware: false,
            budget_ns: 1_000_000,
            expect_wkc: Some(2),
            esc: None,
        }
    }

    #[test]
    fn intervals_reach_the_main_thread_and_a_reset_restarts_the_round_trips() {
        let sent = Arc::new(AtomicU64::new(0));
        let s2 = Arc::clone(&sent);
        let (mut h, mut c) = pair(Box::new(move || (s2.load(Relaxed), 0)));
        let mut m = Matcher::new(0, 1_000_000, Some(2));
        for seq in 0..3 {
            reply(&mut m, seq, 50_000 + u64::from(seq));
        }
        sent.store(4, Relaxed);
        // A checkpoint: cut, the receiver swaps at its next frame, the main thread gathers.
        c.cut(1.0);
        h.poll(&mut m, 4);
        assert_eq!(
            m.dist.count(),
            0,
            "the receiver keeps recording into an empty one"
        );
        c.gather();
        // Frame 3 was sent but is not due yet (nothing newer answered): not lost at a checkpoint, lost at the end.
        let r = c.summary(&ctx(c.sent_since_reset(false)));
        assert_eq!((r.count, r.lost, r.max_us), (3, 0, 50.002));
        assert_eq!(c.summary(&ctx(c.sent_since_reset(true))).lost, 1);
        // A reset: the totals go at once, the receiver empties its own at its next poll, when 5 frames were sent.
        reply(&mut m, 3, 2_000_000);
        c.reset(2.0);
        assert_eq!(c.sent_since_reset(true), (0, 0));
        sent.store(5, Relaxed);
        h.poll(&mut m, 5);
        // Frame 4 went out before the receiver saw the reset: its reply is not counted, nor is it.
        reply(&mut m, 4, 3_000_000);
        reply(&mut m, 5, 70_000);
        sent.store(6, Relaxed);
        c.cut(3.0);
        c.gather();
        c.finish(m, h.epoch());
        let r = c.summary(&ctx(c.sent_since_reset(true)));
        assert_eq!((r.count, r.lost, r.late), (1, 0, 0), "{r:?}");
        assert_eq!(r.max_us, 70.0);
    }

    #[test]
    fn a_stale_interval_is_dropped() {
        let (mut h, mut c) = pair(Box::new(|| (0, 0)));
        let mut m = Matcher::new(0, 1_000_000, None);
        reply(&mut m, 0, 10_000);
        c.cut(1.0);
        h.poll(&mut m, 1); // handed over in generation 0
        c.reset(1.5);
        c.gather();
        assert_eq!(c.summary(&ctx((1, 0))).count, 0);
    }
}
