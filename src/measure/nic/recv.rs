//! The receiver thread of NIC mode: takes the replies, matches them with their transmit stamps (rtt/), records
//! their inter-arrival period, and hands its round trips to the main thread between frames.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::arrival::Arrival;
use super::frame::{self, MAX_FRAME, Reject};
use super::port::RxPort;
use super::rtt::Matcher;
use super::rtt::collect::Handover;
use super::shared::Shared;
use super::tstamp::Stamps;
use super::{ANSWER_TIMEOUT, Received};
use crate::error::Result;
use crate::measure::cyclic::series::Series;
use crate::measure::session::rt::{self, RtThread};
use crate::measure::spec::Mode;
use crate::sys::clock::{monotonic_ns as now_ns, realtime_ns};
use crate::trace::marker::Marker;

/// How long the receiver waits after the last frame was sent for the replies still in flight.
const DRAIN_NS: u64 = 200_000_000;

/// Replies still waiting for their transmit stamp (a hardware TX stamp can come after the reply), at most.
const PENDING: usize = 32;

/// The replies still waiting for their transmit stamp, in a fixed array (nothing allocates).
struct Pending {
    seqs: [u32; PENDING],
    n: usize,
}

impl Pending {
    /// Keeps `seq` while there is room.
    fn push(&mut self, seq: u32) {
        if self.n < PENDING {
            self.seqs[self.n] = seq;
            self.n += 1;
        }
    }

    /// Transmit stamps that came after their reply: handed to the matcher, and those frames forgotten.
    fn sweep(&mut self, sh: &Shared, m: &mut Matcher) {
        let mut k = 0;
        while k < self.n {
            if let Some(st) = sh.tx_stamp(self.seqs[k]) {
                m.on_tx(self.seqs[k], st, sh.sent.load(Relaxed), |seq| {
                    sh.send_time(seq)
                });
                self.n -= 1;
                self.seqs[k] = self.seqs[self.n];
            } else {
                k += 1;
            }
        }
    }
}

/// The run's totals for the live line and the end of the drain (the matcher's are per interval and reset).
#[derive(Default)]
struct Totals {
    matched: u64,
    max_rtt: u64,
    unmatched: u64,
    duplicates: u64,
    /// The matcher's unmatched and duplicate counts already added.
    unmatched_seen: u64,
    duplicates_seen: u64,
    /// The reset generation the maximum belongs to.
    epoch: u64,
}

impl Totals {
    /// Between frames: hands an interval to the main thread when it asked (`hand`), then publishes the totals.
    fn publish(&mut self, m: &mut Matcher, hand: &mut Handover, sh: &Shared) {
        self.max_rtt = self.max_rtt.max(m.dist.max_ns());
        self.unmatched += m.counts.unmatched.saturating_sub(self.unmatched_seen);
        self.duplicates += m.counts.duplicates.saturating_sub(self.duplicates_seen);
        hand.poll(m, sh.sent.load(Relaxed));
        self.unmatched_seen = m.counts.unmatched;
        self.duplicates_seen = m.counts.duplicates;
        if hand.epoch() != self.epoch {
            // Reset: the live line's maximum restarts with the statistics.
            self.epoch = hand.epoch();
            self.max_rtt = 0;
        }
        sh.matched.store(self.matched, Relaxed);
        sh.unmatched.store(self.unmatched, Relaxed);
        sh.duplicates.store(self.duplicates, Relaxed);
        sh.max_rtt_ns.store(self.max_rtt, Relaxed);
    }
}

/// Everything the receiver thread takes with it.
pub(super) struct Receiver {
    /// Must have a receive timeout: the loop looks at the flags, and hands its round trips to the main thread,
    /// between frames.
    pub(super) port: RxPort,
    pub(super) mode: Mode,
    /// A reply later than this after its request is late.
    pub(super) budget_ns: u64,
    pub(super) expect_wkc: Option<u16>,
    pub(super) shared: Arc<Shared>,
    /// The inter-arrival period of the replies (the original's Receiver row).
    pub(super) series: Series,
    /// The frames' arrival at the first SubDevice, when the probe reads it.
    pub(super) arrival: Option<Arrival>,
    pub(super) hand: Handover,
    /// --trace: each matched reply is marked in the trace, with its frame index, its send time and its round trip
    /// as this thread saw them.
    pub(super) marker: Option<Marker>,
}

impl Receiver {
    /// Starts the receiver on `cpu` at SCHED_FIFO `priority` (above the sender's); the thread returns its series,
    /// the matcher with the last interval of round trips, and that interval's reset generation.
    pub(super) fn spawn(self, cpu: usize, priority: u8) -> Result<RtThread<Received>> {
        rt::spawn_rt("rmp-eval-recv", cpu, priority, move || self.run())
    }

    /// Takes replies until the sender is done and the last ones had time to come back, or until replies stop.
    fn run(self) -> Received {
        let Receiver {
            mut port,
            mode,
            budget_ns,
            expect_wkc,
            shared,
            mut series,
            mut arrival,
            mut hand,
            mut marker,
        } = self;
        let sh: &Shared = &shared;
        let user_stamps = port.user_stamps();
        let mut m = Matcher::new(sh.first_seq, budget_ns, expect_wkc);
        let mut totals = Totals {
            epoch: hand.epoch(),
            ..Totals::default()
        };
        let mut buf = [0u8; MAX_FRAME + 64];
        let mut pending = Pending {
            seqs: [0; PENDING],
            n: 0,
        };
        let mut last_reply = now_ns();
        let mut prev_rx = 0u64;
        let mut done_at = 0u64;
        let send_time = |seq| sh.send_time(seq);
        loop {
            // One blocking system call per reply: no poll, no wakeup for transmit stamps (the sender reads those).
            // AF_XDP: poll() on its socket, none when the ring already holds the reply.
            match port.recv(&mut buf) {
                Ok(r) => {
                    let now = now_ns();
                    match frame::parse_reply(mode, &buf[..r.len]) {
                        // Another run's reply (another tag): never taken for ours.
                        Ok(reply) if reply.tag != sh.tag => m.on_unmatched(),
                        Ok(reply) => {
                            let sent = sh.sent.load(Relaxed);
                            if let Some(st) = sh.tx_stamp(reply.seq) {
                                m.on_tx(reply.seq, st, sent, send_time);
                            }
                            let before = m.counts.matched;
                            let wkc = (mode == Mode::Ecat).then_some(reply.wkc);
                            let real = realtime_ns();
                            m.on_reply(reply.seq, wkc, r.stamps, real, sent, send_time);
                            if user_stamps {
                                // No transmit stamp will come: the send time stands in for it, now.
                                m.on_tx(reply.seq, Stamps::default(), sent, send_time);
                            }
                            if m.counts.matched > before {
                                totals.matched += 1;
                                // One write(2) from a stack buffer: the send in CLOCK_MONOTONIC (the trace clock) is
                                // now less the round trip this thread saw (send()'s realtime stamp to now).
                                if let Some(mk) = marker.as_mut() {
                                    let rtt = real.saturating_sub(send_time(reply.seq));
                                    let frame = u64::from(reply.seq.wrapping_sub(sh.first_seq));
                                    mk.mark(frame, now.saturating_sub(rtt), rtt);
                                }
                                last_reply = now;
                                if prev_rx != 0 {
                                    series.record(now - prev_rx, None);
                                }
                                if let (Some(a), Some(dc)) = (&mut arrival, reply.dc) {
                                    a.on_reply(reply.seq, dc, sh, now);
                                }
                                prev_rx = now;
                                if !user_stamps && sh.tx_stamp(reply.seq).is_none() {
                                    pending.push(reply.seq);
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
            pending.sweep(sh, &mut m);
            totals.publish(&mut m, &mut hand, sh);
            let now = now_ns();
            if sh.sender_done.load(Acquire) {
                if done_at == 0 {
                    done_at = now;
                }
                if totals.matched >= sh.sent.load(Relaxed) || now - done_at > DRAIN_NS {
                    break;
                }
            } else if sh.sent.load(Relaxed) > 0
                && now.saturating_sub(last_reply) > ANSWER_TIMEOUT.as_nanos() as u64
            {
                sh.dead.store(true, Relaxed);
                sh.halt.store(true, Relaxed);
            }
        }
        for &seq in &pending.seqs[..pending.n] {
            if let Some(st) = sh.tx_stamp(seq) {
                m.on_tx(seq, st, sh.sent.load(Relaxed), send_time);
            }
        }
        m.finish(send_time);
        let epoch = hand.epoch();
        (series, m, epoch, arrival)
    }
}
