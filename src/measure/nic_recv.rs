//! The receiver thread of NIC mode and the state it shares with the sender and the live view.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use super::frame::{self, MAX_FRAME, Reject};
use super::nic::ANSWER_TIMEOUT;
use super::rawsock::RawSocket;
use super::rtt::{Matcher, RING};
use super::sampler::now_ns;
use super::series::Series;
use crate::cli::Mode;

/// How long the receiver waits after the last frame was sent for the replies still in flight.
const DRAIN_NS: u64 = 200_000_000;
/// poll timeout: how often the receiver looks at the flags when nothing arrives.
const POLL_MS: i32 = 50;

/// Written by the sender (one writer per field), read by the receiver and the live view; all relaxed.
pub struct Shared {
    pub first_seq: u32,
    /// Frames sent so far.
    pub sent: AtomicU64,
    pub send_errors: AtomicU64,
    /// CLOCK_REALTIME just before each send(), by sequence (for a reply whose TX stamp never came).
    pub user_tx: Box<[AtomicU64]>,
    /// Ends the sender's loop: a signal (set by the main thread) or replies stopping (set by the receiver).
    pub halt: AtomicBool,
    pub sender_done: AtomicBool,
    /// Replies stopped for ANSWER_TIMEOUT while frames were being sent.
    pub dead: AtomicBool,
    pub matched: AtomicU64,
    pub unmatched: AtomicU64,
    pub max_rtt_ns: AtomicU64,
}

impl Shared {
    pub fn new(first_seq: u32) -> Shared {
        Shared {
            first_seq,
            sent: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            user_tx: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            halt: AtomicBool::new(false),
            sender_done: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            matched: AtomicU64::new(0),
            unmatched: AtomicU64::new(0),
            max_rtt_ns: AtomicU64::new(0),
        }
    }

    fn send_time(&self, seq: u32) -> u64 {
        let rel = seq.wrapping_sub(self.first_seq) as usize;
        self.user_tx[rel % self.user_tx.len()].load(Relaxed)
    }

    /// The round-trip line under the live table.
    pub fn live_line(&self) -> String {
        format!(
            "Round trips: {} sent, {} answered, {} unmatched, max RTT {:.1} us",
            self.sent.load(Relaxed),
            self.matched.load(Relaxed),
            self.unmatched.load(Relaxed),
            self.max_rtt_ns.load(Relaxed) as f64 / 1000.0
        )
    }
}

#[inline]
pub fn realtime_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live local (vDSO, no system call).
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Takes replies until the sender is done and the last ones had time to come back, or until replies stop.
/// Records the inter-arrival period of the replies in `series` (the original's Receiver row).
pub fn run(
    sock: &RawSocket,
    mode: Mode,
    period_ns: u64,
    sh: &Shared,
    mut series: Series,
) -> (Series, Matcher) {
    let mut m = Matcher::new(sh.first_seq, period_ns);
    let mut buf = [0u8; MAX_FRAME + 64];
    let mut last_reply = now_ns();
    let mut prev_rx = 0u64;
    let mut done_at = 0u64;
    let send_time = |seq| sh.send_time(seq);
    loop {
        let ready = sock.wait(POLL_MS).unwrap_or_default();
        if ready.errqueue {
            loop {
                match sock.recv(&mut buf, true, true) {
                    Ok(r) if r.stamps.tx => {
                        if let Some(seq) = frame::probe_seq(mode, &buf[..r.len]) {
                            m.on_tx(seq, r.stamps, sh.sent.load(Relaxed), send_time);
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        loop {
            let r = match sock.recv(&mut buf, false, true) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let now = now_ns();
            match frame::parse_reply(mode, &buf[..r.len]) {
                Ok(reply) => {
                    let before = m.counts.matched;
                    let wkc = (mode == Mode::Ecat).then_some(reply.wkc);
                    m.on_reply(
                        reply.seq,
                        wkc,
                        r.stamps,
                        realtime_ns(),
                        sh.sent.load(Relaxed),
                        send_time,
                    );
                    if m.counts.matched > before {
                        last_reply = now;
                        if prev_rx != 0 {
                            series.record(now - prev_rx, None);
                        }
                        prev_rx = now;
                    }
                }
                Err(Reject::Foreign) => {}
                Err(r) => m.on_unmatched(r == Reject::WkcZero),
            }
        }
        sh.matched.store(m.counts.matched, Relaxed);
        sh.unmatched.store(m.counts.unmatched, Relaxed);
        sh.max_rtt_ns.store(m.dist.max_ns(), Relaxed);
        let now = now_ns();
        if sh.sender_done.load(Relaxed) {
            if done_at == 0 {
                done_at = now;
            }
            if m.counts.matched >= sh.sent.load(Relaxed) || now - done_at > DRAIN_NS {
                break;
            }
        } else if sh.sent.load(Relaxed) > 0
            && now.saturating_sub(last_reply) > ANSWER_TIMEOUT.as_nanos() as u64
        {
            sh.dead.store(true, Relaxed);
            sh.halt.store(true, Relaxed);
        }
    }
    m.finish(send_time);
    (series, m)
}
