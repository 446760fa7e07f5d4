//! The receiver thread of NIC mode and the state it shares with the sender and the live view.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

use super::ANSWER_TIMEOUT;
use crate::error::Result;
use crate::measure::frame::{self, MAX_FRAME, Reject};
use crate::measure::rawsock::RawSocket;
use crate::measure::rt::{self, RtThread};
use crate::measure::rtt::{Matcher, RING};
use crate::measure::rtt_collect::Handover;
use crate::measure::series::Series;
use crate::measure::spec::Mode;
use crate::measure::tstamp::Stamps;
use crate::sys::clock::{monotonic_ns as now_ns, realtime_ns};
use crate::trace::marker::Marker;

/// How long the receiver waits after the last frame was sent for the replies still in flight.
const DRAIN_NS: u64 = 200_000_000;

/// Written by the sender (one writer per field), read by the receiver and the live view; all relaxed.
pub(crate) struct Shared {
    pub(crate) first_seq: u32,
    /// Frames sent so far.
    pub(crate) sent: AtomicU64,
    pub(crate) send_errors: AtomicU64,
    /// CLOCK_REALTIME just before each send(), by sequence (for a reply whose TX stamp never came).
    pub(crate) user_tx: Box<[AtomicU64]>,
    /// Transmit stamps the sender read back from its socket's error queue, by sequence; `tx_seq` says whose
    /// stamps a slot holds (written last, with Release).
    tx_seq: Box<[AtomicU32]>,
    tx_sw: Box<[AtomicU64]>,
    tx_hw: Box<[AtomicU64]>,
    /// Ends the sender's loop: a signal (set by the main thread) or replies stopping (set by the receiver).
    pub(crate) halt: AtomicBool,
    pub(crate) sender_done: AtomicBool,
    /// Replies stopped for ANSWER_TIMEOUT while frames were being sent.
    pub(crate) dead: AtomicBool,
    pub(crate) matched: AtomicU64,
    pub(crate) unmatched: AtomicU64,
    pub(crate) max_rtt_ns: AtomicU64,
}

impl Shared {
    pub(crate) fn new(first_seq: u32) -> Shared {
        Shared {
            first_seq,
            sent: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            user_tx: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            tx_seq: (0..RING)
                .map(|_| AtomicU32::new(first_seq.wrapping_sub(1)))
                .collect(),
            tx_sw: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            tx_hw: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            halt: AtomicBool::new(false),
            sender_done: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            matched: AtomicU64::new(0),
            unmatched: AtomicU64::new(0),
            max_rtt_ns: AtomicU64::new(0),
        }
    }

    fn slot(&self, seq: u32) -> usize {
        seq.wrapping_sub(self.first_seq) as usize % RING
    }

    /// The sender's side: the transmit stamp of frame `seq`.
    pub(crate) fn publish_tx(&self, seq: u32, st: Stamps) {
        let i = self.slot(seq);
        self.tx_sw[i].store(st.sw_ns, Relaxed);
        self.tx_hw[i].store(st.hw_ns, Relaxed);
        self.tx_seq[i].store(seq, Release);
    }

    /// The receiver's side: the transmit stamp of frame `seq`, once published.
    pub(crate) fn tx_stamp(&self, seq: u32) -> Option<Stamps> {
        let i = self.slot(seq);
        (self.tx_seq[i].load(Acquire) == seq).then(|| Stamps {
            sw_ns: self.tx_sw[i].load(Relaxed),
            hw_ns: self.tx_hw[i].load(Relaxed),
            tx: true,
        })
    }

    fn send_time(&self, seq: u32) -> u64 {
        let rel = seq.wrapping_sub(self.first_seq) as usize;
        self.user_tx[rel % self.user_tx.len()].load(Relaxed)
    }

    /// The round-trip line under the live table.
    pub(crate) fn live_line(&self) -> String {
        format!(
            "Round trips: {} sent, {} not sent, {} answered, {} unmatched, max RTT {:.1} us",
            self.sent.load(Relaxed),
            self.send_errors.load(Relaxed),
            self.matched.load(Relaxed),
            self.unmatched.load(Relaxed),
            self.max_rtt_ns.load(Relaxed) as f64 / 1000.0
        )
    }
}

/// Replies still waiting for their transmit stamp (a hardware TX stamp can come after the reply).
const PENDING: usize = 32;

/// Everything the receiver thread takes with it.
pub(super) struct Receiver {
    /// Must have a receive timeout: the loop looks at the flags, and hands its round trips to the main thread,
    /// between frames.
    pub(super) sock: Arc<RawSocket>,
    pub(super) mode: Mode,
    /// A reply later than this after its request is late.
    pub(super) budget_ns: u64,
    pub(super) expect_wkc: Option<u16>,
    pub(super) shared: Arc<Shared>,
    /// The inter-arrival period of the replies (the original's Receiver row).
    pub(super) series: Series,
    pub(super) hand: Handover,
    /// --trace: each matched reply is marked in the trace, with its frame index, its send time and its round trip
    /// as this thread saw them.
    pub(super) marker: Option<Marker>,
}

impl Receiver {
    /// Starts the receiver on `cpu` at SCHED_FIFO `priority` (above the sender's); the thread returns its series,
    /// the matcher with the last interval of round trips, and that interval's reset generation.
    pub(super) fn spawn(
        self,
        cpu: usize,
        priority: u8,
    ) -> Result<RtThread<(Series, Matcher, u64)>> {
        rt::spawn_rt("rmp-eval-recv", cpu, priority, move || self.run())
    }

    /// Takes replies until the sender is done and the last ones had time to come back, or until replies stop.
    fn run(self) -> (Series, Matcher, u64) {
        let Receiver {
            sock,
            mode,
            budget_ns,
            expect_wkc,
            shared,
            mut series,
            mut hand,
            marker,
        } = self;
        let (sock, sh): (&RawSocket, &Shared) = (&sock, &shared);
        let mut m = Matcher::new(sh.first_seq, budget_ns, expect_wkc);
        // The run's totals for the live line and the end of the drain (the matcher's are per interval and reset).
        let mut matched = 0u64;
        let mut max_rtt = 0u64;
        let (mut unmatched, mut unmatched_seen) = (0u64, 0u64);
        let mut epoch = hand.epoch();
        let mut buf = [0u8; MAX_FRAME + 64];
        let mut pending = [0u32; PENDING];
        let mut npending = 0usize;
        let mut last_reply = now_ns();
        let mut prev_rx = 0u64;
        let mut done_at = 0u64;
        let send_time = |seq| sh.send_time(seq);
        loop {
            // One blocking system call per reply: no poll, no wakeup for transmit stamps (the sender reads those).
            match sock.recv(&mut buf, false, false) {
                Ok(r) => {
                    let now = now_ns();
                    match frame::parse_reply(mode, &buf[..r.len]) {
                        Ok(reply) => {
                            let sent = sh.sent.load(Relaxed);
                            if let Some(st) = sh.tx_stamp(reply.seq) {
                                m.on_tx(reply.seq, st, sent, send_time);
                            }
                            let before = m.counts.matched;
                            let wkc = (mode == Mode::Ecat).then_some(reply.wkc);
                            let real = realtime_ns();
                            m.on_reply(reply.seq, wkc, r.stamps, real, sent, send_time);
                            if m.counts.matched > before {
                                matched += 1;
                                // One write(2) from a stack buffer: the send in CLOCK_MONOTONIC (the trace clock) is
                                // now less the round trip this thread saw (send()'s realtime stamp to now).
                                if let Some(mk) = &marker {
                                    let rtt = real.saturating_sub(send_time(reply.seq));
                                    let frame = u64::from(reply.seq.wrapping_sub(sh.first_seq));
                                    mk.mark(frame, now.saturating_sub(rtt), rtt);
                                }
                                last_reply = now;
                                if prev_rx != 0 {
                                    series.record(now - prev_rx, None);
                                }
                                prev_rx = now;
                                if sh.tx_stamp(reply.seq).is_none() && npending < PENDING {
                                    pending[npending] = reply.seq;
                                    npending += 1;
                                }
                            }
                        }
                        Err(Reject::Foreign) => {}
                        Err(_) => m.on_unmatched(),
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
            // Transmit stamps that came after their reply.
            let mut k = 0;
            while k < npending {
                if let Some(st) = sh.tx_stamp(pending[k]) {
                    m.on_tx(pending[k], st, sh.sent.load(Relaxed), send_time);
                    npending -= 1;
                    pending[k] = pending[npending];
                } else {
                    k += 1;
                }
            }
            max_rtt = max_rtt.max(m.dist.max_ns());
            unmatched += m.counts.unmatched.saturating_sub(unmatched_seen);
            hand.poll(&mut m, sh.sent.load(Relaxed));
            unmatched_seen = m.counts.unmatched;
            if hand.epoch() != epoch {
                // Reset: the live line's maximum restarts with the statistics.
                epoch = hand.epoch();
                max_rtt = 0;
            }
            sh.matched.store(matched, Relaxed);
            sh.unmatched.store(unmatched, Relaxed);
            sh.max_rtt_ns.store(max_rtt, Relaxed);
            let now = now_ns();
            if sh.sender_done.load(Acquire) {
                if done_at == 0 {
                    done_at = now;
                }
                if matched >= sh.sent.load(Relaxed) || now - done_at > DRAIN_NS {
                    break;
                }
            } else if sh.sent.load(Relaxed) > 0
                && now.saturating_sub(last_reply) > ANSWER_TIMEOUT.as_nanos() as u64
            {
                sh.dead.store(true, Relaxed);
                sh.halt.store(true, Relaxed);
            }
        }
        for &seq in &pending[..npending] {
            if let Some(st) = sh.tx_stamp(seq) {
                m.on_tx(seq, st, sh.sent.load(Relaxed), send_time);
            }
        }
        m.finish(send_time);
        let epoch = hand.epoch();
        (series, m, epoch)
    }
}
