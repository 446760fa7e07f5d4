//! What the two RT threads of a NIC run and the live view share: counters and the transmit stamps, in atomics
//! preallocated before the threads start: nothing locks or allocates.

use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed,
    Ordering::Release,
};

use super::rtt::RING;
use super::tstamp::Stamps;
use crate::measure::result::ArrivalCounts;

/// Written by the sender (one writer per field), read by the receiver and the live view; all relaxed.
pub(crate) struct Shared {
    pub(crate) first_seq: u32,
    /// This run's tag in every frame's mark: a reply with another is not ours.
    pub(crate) tag: u32,
    /// Frames sent so far.
    pub(crate) sent: AtomicU64,
    /// Frames the kernel refused (AF_PACKET's send() failed; AF_XDP: left on the transmit ring at the end).
    pub(crate) send_errors: AtomicU64,
    /// AF_XDP: frames not put on the transmit ring because all of the socket's transmit frames were still waiting
    /// for the kernel (the tool's own ring full, not a refusal of the kernel's).
    pub(crate) ring_full: AtomicU64,
    /// AF_XDP: frames left on the transmit ring by a kick the kernel refused, sent with a later kick (or at the end
    /// counted in `send_errors`).
    pub(crate) waited: AtomicU64,
    /// AF_XDP: frames still on the transmit ring when the sender ended (also in `send_errors`).
    pub(crate) unsent_at_end: AtomicU64,
    /// errno of the last send the kernel refused (0: none): says whose fault a stop is (stop.rs).
    pub(crate) send_errno: AtomicI32,
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
    pub(crate) duplicates: AtomicU64,
    pub(crate) max_rtt_ns: AtomicU64,
    /// The scheduled send time (CLOCK_MONOTONIC) of each frame, by sequence, for the arrival line.
    deadlines: Box<[AtomicU64]>,
    /// What the arrival datagrams gave (written by the receiver).
    pub(crate) arrival: ArrivalAtomics,
}

/// `ArrivalCounts` as the receiver stores them.
#[derive(Default)]
pub(crate) struct ArrivalAtomics {
    pub(crate) latches: AtomicU64,
    pub(crate) unanswered: AtomicU64,
    pub(crate) zero: AtomicU64,
    pub(crate) unlatched: AtomicU64,
}

impl ArrivalAtomics {
    pub(crate) fn counts(&self, intervals: u64) -> ArrivalCounts {
        ArrivalCounts {
            latches: self.latches.load(Relaxed),
            unanswered: self.unanswered.load(Relaxed),
            zero: self.zero.load(Relaxed),
            unlatched: self.unlatched.load(Relaxed),
            intervals,
        }
    }
}

impl Shared {
    pub(crate) fn new(first_seq: u32, tag: u32) -> Shared {
        Shared {
            first_seq,
            tag,
            sent: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            ring_full: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            unsent_at_end: AtomicU64::new(0),
            send_errno: AtomicI32::new(0),
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
            duplicates: AtomicU64::new(0),
            max_rtt_ns: AtomicU64::new(0),
            deadlines: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            arrival: ArrivalAtomics::default(),
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

    /// The sender's CLOCK_REALTIME just before it sent frame `seq`.
    pub(super) fn send_time(&self, seq: u32) -> u64 {
        let rel = seq.wrapping_sub(self.first_seq) as usize;
        self.user_tx[rel % self.user_tx.len()].load(Relaxed)
    }

    /// Frames that did not go out: the kernel refused them, or the AF_XDP socket's own ring was full.
    pub(crate) fn not_sent(&self) -> u64 {
        self.send_errors.load(Relaxed) + self.ring_full.load(Relaxed)
    }

    /// The sender's side: frame `seq` is scheduled for `deadline_ns`.
    pub(crate) fn set_deadline(&self, seq: u32, deadline_ns: u64) {
        self.deadlines[self.slot(seq)].store(deadline_ns, Relaxed);
    }

    /// The scheduled send time of frame `seq` (within the last RING frames).
    pub(crate) fn deadline(&self, seq: u32) -> u64 {
        self.deadlines[self.slot(seq)].load(Relaxed)
    }

    /// The round-trip line under the live table.
    pub(crate) fn live_line(&self) -> String {
        format!(
            "Round trips: {} sent, {} not sent, {} answered, {} unmatched, {} duplicate(s), max RTT {:.1} us",
            self.sent.load(Relaxed),
            self.not_sent(),
            self.matched.load(Relaxed),
            self.unmatched.load(Relaxed),
            self.duplicates.load(Relaxed),
            self.max_rtt_ns.load(Relaxed) as f64 / 1000.0
        )
    }
}
