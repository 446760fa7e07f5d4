//! The receiver's bookkeeping: matches transmit stamps and replies to the frames sent (by sequence number) and
//! turns each pair of timestamps into a round-trip time. Everything is preallocated; no system call here, so it is
//! tested with made-up stamps.
//!
//! Clock domains are never mixed within one round trip: hardware TX with hardware RX (the NIC's clock), else
//! software TX with software RX (CLOCK_REALTIME in the kernel), else — when the kernel gave no TX stamp for that
//! frame, as happens for the first frames after transmit stamps are switched on — the sender's CLOCK_REALTIME
//! just before send() with the software RX stamp; those are counted apart (`send_time_pairs`).

pub(crate) mod collect;

use crate::measure::nic::tstamp::Stamps;
use crate::measure::result::dist::Dist;

/// Frames in flight that can still be matched; older replies count as unmatched (and their frames as lost).
pub(crate) const RING: usize = 4096;
/// Distinct working counter values kept apart in the distribution; rarer ones are counted together.
pub(crate) const WKC_VALUES: usize = 8;
/// A reply still waiting for its TX stamp is settled with the send() time once this many newer frames replied.
const TX_STAMP_PATIENCE: u32 = 16;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    seq: u32,
    used: bool,
    tx_sw: u64,
    tx_hw: u64,
    rx_sw: u64,
    rx_hw: u64,
    rx_user: u64,
    answered: bool,
    done: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RttCounts {
    pub(crate) matched: u64,
    /// Round trips longer than the budget (the period unless given): for a MainDevice a missed cycle.
    pub(crate) late: u64,
    /// Frames that were no reply to a frame of this run in flight: another run's (its tag), stale, malformed.
    pub(crate) unmatched: u64,
    /// Second (third, …) replies to a frame already answered: a loop, or two chains answering one frame.
    pub(crate) duplicates: u64,
    /// Replies whose working counter differs from the expected one (0 included: nobody processed the frame).
    pub(crate) wkc_errors: u64,
    /// Working counters seen: (value, replies); a zero count marks an unused slot.
    pub(crate) wkc_seen: [(u16, u64); WKC_VALUES],
    /// Replies whose working counter found no slot in `wkc_seen`.
    pub(crate) wkc_other: u64,
    pub(crate) hw_pairs: u64,
    pub(crate) sw_pairs: u64,
    pub(crate) send_time_pairs: u64,
    pub(crate) wkc_min: Option<u16>,
    pub(crate) wkc_max: Option<u16>,
}

impl RttCounts {
    /// Adds a later interval's counts.
    pub(crate) fn merge(&mut self, o: &RttCounts) {
        self.matched += o.matched;
        self.late += o.late;
        self.unmatched += o.unmatched;
        self.duplicates += o.duplicates;
        self.wkc_errors += o.wkc_errors;
        self.hw_pairs += o.hw_pairs;
        self.sw_pairs += o.sw_pairs;
        self.send_time_pairs += o.send_time_pairs;
        self.wkc_other += o.wkc_other;
        for &(w, n) in o.wkc_seen.iter().filter(|s| s.1 > 0) {
            match self.wkc_seen.iter_mut().find(|(v, k)| *k == 0 || *v == w) {
                Some(slot) => *slot = (w, slot.1 + n),
                None => self.wkc_other += n,
            }
        }
        self.wkc_min = match (self.wkc_min, o.wkc_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.wkc_max = match (self.wkc_max, o.wkc_max) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

pub(crate) struct Matcher {
    ring: Box<[Slot]>,
    first_seq: u32,
    budget_ns: u64,
    expect_wkc: Option<u16>,
    /// Frames up to the newest one answered (its sequence relative to the first, plus one).
    answered_through: u64,
    /// Frames before this one (relative sequence) were sent before the last reset: their replies are not counted.
    from: u64,
    pub(crate) dist: Dist,
    pub(crate) counts: RttCounts,
}

impl Matcher {
    /// `first_seq`: the sequence number of the first frame of the run (earlier ones are the preflight's);
    /// `budget_ns`: a longer round trip is late; `expect_wkc`: every EtherCAT reply must carry it.
    pub(crate) fn new(first_seq: u32, budget_ns: u64, expect_wkc: Option<u16>) -> Matcher {
        Matcher {
            ring: vec![Slot::default(); RING].into_boxed_slice(),
            first_seq,
            budget_ns,
            expect_wkc,
            answered_through: 0,
            from: 0,
            dist: Dist::new(),
            counts: RttCounts::default(),
        }
    }

    /// The slot of `seq` if it names a frame still in flight among the `sent` so far; `None` for anything else.
    fn slot(&mut self, seq: u32, sent: u64) -> Option<&mut Slot> {
        let rel = seq.wrapping_sub(self.first_seq);
        if u64::from(rel) >= sent || sent - u64::from(rel) > RING as u64 {
            return None;
        }
        let s = &mut self.ring[rel as usize % RING];
        if !s.used || s.seq != seq {
            *s = Slot {
                seq,
                used: true,
                ..Slot::default()
            };
        }
        Some(s)
    }

    /// Frames up to the newest one answered: the ones whose reply was due (later ones may still be in flight).
    pub(crate) fn answered_through(&self) -> u64 {
        self.answered_through
    }

    /// Restarts the statistics with the frames from the `sent`-th on (a reset: `r`, SIGUSR1); replies to earlier
    /// frames are then ignored, so that the frames counted and the replies counted are the same ones.
    pub(crate) fn restart(&mut self, sent: u64) {
        if self.dist.count() > 0 {
            self.dist.reset();
        }
        self.counts = RttCounts::default();
        self.from = sent;
    }

    /// The first frame (relative sequence) the statistics count.
    pub(crate) fn counts_from(&self) -> u64 {
        self.from
    }

    fn before_reset(&self, seq: u32) -> bool {
        u64::from(seq.wrapping_sub(self.first_seq)) < self.from
    }

    /// True for sequence numbers from before the run (the preflight's late replies): ignored, not counted.
    pub(crate) fn is_preflight(&self, seq: u32) -> bool {
        seq.wrapping_sub(self.first_seq) > u32::MAX / 2
    }

    /// The transmit stamp of our frame `seq`, read back from the error queue.
    pub(crate) fn on_tx(
        &mut self,
        seq: u32,
        st: Stamps,
        sent: u64,
        send_time: impl Fn(u32) -> u64,
    ) {
        let Some(s) = self.slot(seq, sent) else {
            return;
        };
        if s.done {
            return;
        }
        s.tx_sw = st.sw_ns;
        s.tx_hw = st.hw_ns;
        if s.answered {
            let s = *s;
            self.complete(s, &send_time);
        }
    }

    /// A valid reply to frame `seq`, stamped `st` by the kernel and `user_ns` (CLOCK_REALTIME) when read.
    pub(crate) fn on_reply(
        &mut self,
        seq: u32,
        wkc: Option<u16>,
        st: Stamps,
        user_ns: u64,
        sent: u64,
        send_time: impl Fn(u32) -> u64,
    ) {
        if self.is_preflight(seq) || self.before_reset(seq) {
            return;
        }
        let Some(s) = self.slot(seq, sent) else {
            self.counts.unmatched += 1;
            return;
        };
        if s.answered {
            self.counts.duplicates += 1;
            return;
        }
        s.answered = true;
        s.rx_sw = st.sw_ns;
        s.rx_hw = st.hw_ns;
        s.rx_user = user_ns;
        let s = *s;
        self.counts.matched += 1;
        if let Some(w) = wkc {
            self.count_wkc(w);
        }
        if s.tx_sw != 0 || s.tx_hw != 0 {
            self.complete(s, &send_time);
        }
        let rel = seq.wrapping_sub(self.first_seq);
        self.answered_through = self.answered_through.max(u64::from(rel) + 1);
        // Settle the reply that has waited too long for its TX stamp.
        if let Some(old) = rel.checked_sub(TX_STAMP_PATIENCE) {
            let o = self.ring[old as usize % RING];
            if o.used && o.answered && !o.done && o.seq == self.first_seq.wrapping_add(old) {
                self.complete(o, &send_time);
            }
        }
    }

    fn count_wkc(&mut self, w: u16) {
        let c = &mut self.counts;
        c.wkc_min = Some(c.wkc_min.map_or(w, |m| m.min(w)));
        c.wkc_max = Some(c.wkc_max.map_or(w, |m| m.max(w)));
        if self.expect_wkc.is_some_and(|e| e != w) {
            c.wkc_errors += 1;
        }
        match c.wkc_seen.iter_mut().find(|(v, n)| *n == 0 || *v == w) {
            Some(slot) => *slot = (w, slot.1 + 1),
            None => c.wkc_other += 1,
        }
    }

    /// A received frame that is no reply of this run (another run's, or a malformed EtherCAT frame).
    pub(crate) fn on_unmatched(&mut self) {
        self.counts.unmatched += 1;
    }

    /// Settles every reply still waiting for a TX stamp (end of run).
    pub(crate) fn finish(&mut self, send_time: impl Fn(u32) -> u64) {
        for i in 0..RING {
            let s = self.ring[i];
            if s.used && s.answered && !s.done {
                self.complete(s, &send_time);
            }
        }
    }

    fn complete(&mut self, s: Slot, send_time: &impl Fn(u32) -> u64) {
        if self.before_reset(s.seq) {
            // Answered before the reset, its TX stamp came after: not counted.
            let rel = s.seq.wrapping_sub(self.first_seq) as usize % RING;
            self.ring[rel].done = true;
            return;
        }
        let (tx, rx) = if s.tx_hw != 0 && s.rx_hw != 0 {
            self.counts.hw_pairs += 1;
            (s.tx_hw, s.rx_hw)
        } else if s.tx_sw != 0 && s.rx_sw != 0 {
            self.counts.sw_pairs += 1;
            (s.tx_sw, s.rx_sw)
        } else {
            self.counts.send_time_pairs += 1;
            (
                send_time(s.seq),
                if s.rx_sw != 0 { s.rx_sw } else { s.rx_user },
            )
        };
        let rel = s.seq.wrapping_sub(self.first_seq) as usize % RING;
        self.ring[rel].done = true;
        let rtt = rx.saturating_sub(tx);
        self.dist.record(rtt);
        if rtt > self.budget_ns {
            self.counts.late += 1;
        }
    }
}

#[cfg(test)]
mod tests;
