//! The sender thread of NIC mode: the cyclic loop (`sampler`) sends one probe a period, and reads the transmit
//! stamps of the frames already sent back from its socket's error queue for the receiver to match.

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::time::Duration;

use super::frame::{self, Probe};
use super::port::TxPort;
use super::shared::Shared;
use crate::error::Result;
use crate::measure::cyclic::sampler::{self, Ended, Limits};
use crate::measure::cyclic::series::Series;
use crate::measure::interference::smi::LocalSmi;
use crate::measure::session::rt::{self, RtThread};
use crate::measure::spec::Mode;
use crate::sys::clock;
use crate::sys::xsk::Sent;
use crate::trace::marker::Marker;

/// Everything the sender thread takes with it.
pub(super) struct Sender {
    /// AF_PACKET (its error queue has the transmit stamps) or the AF_XDP socket's transmit half.
    pub(super) port: TxPort,
    /// Patched with each frame's sequence number, from `shared.first_seq` (the one after the preflight's).
    pub(super) probe: Probe,
    pub(super) mode: Mode,
    pub(super) shared: Arc<Shared>,
    pub(super) series: Series,
    pub(super) limits: Limits,
    /// --trace: each frame is marked before send(), so that a request with no reply is found in the trace.
    pub(super) marker: Option<Marker>,
    /// The core's SMI counter, read between cycles (see measure::interference::smi).
    pub(super) smi: Option<LocalSmi>,
}

impl Sender {
    /// Starts the loop on `core` at SCHED_FIFO `priority`; the thread returns its series and how the loop ended.
    pub(super) fn spawn(self, core: usize, priority: u8) -> Result<RtThread<(Series, Ended)>> {
        // The core's first SMI reading, on the core (see measure::smi).
        let first_smi = move || {
            if let Some(smi) = &self.smi {
                smi.read();
            }
            self
        };
        rt::spawn_rt_ready("rmp-eval-send", core, priority, first_smi, Sender::run)
    }

    fn run(self) -> (Series, Ended) {
        let Sender {
            mut port,
            mut probe,
            mode,
            shared: sh,
            mut series,
            limits,
            marker,
            mut smi,
        } = self;
        let first_seq = sh.first_seq;
        let stamped = port.stamped();
        let delay = test_seam_send_delay();
        let mut buf = [0u8; frame::MAX_FRAME + 64];
        // Software stamps are queued during send(), hardware ones a little later: each cycle takes what is there.
        // AF_XDP has none: its round trips are timed in user space (see `RxPort::user_stamps`).
        let take_stamps = |buf: &mut [u8]| {
            let Some(txs) = &stamped else { return };
            while let Ok(r) = txs.recv(buf, true, true) {
                if let (true, Some(seq)) =
                    (r.stamps.tx, frame::probe_seq(mode, &buf[..r.len], sh.tag))
                {
                    sh.publish_tx(seq, r.stamps);
                }
            }
        };
        let ended = sampler::run(&limits, &mut series, &sh.halt, smi.as_mut(), |w| {
            let i = w.index;
            // The stamps of the frames already sent first: after send() the CPU belongs to whatever answers (a
            // reflector woken on this core), so nothing else is done there.
            take_stamps(&mut buf);
            let seq = first_seq.wrapping_add(i as u32);
            probe.set_seq(seq);
            sh.set_deadline(seq, w.deadline_ns);
            if let Some((every, ns)) = delay
                && seq % every == 0
            {
                clock::sleep_until_monotonic(w.deadline_ns + ns);
            }
            sh.user_tx[i as usize % sh.user_tx.len()].store(clock::realtime_ns(), Relaxed);
            // Counted before send(): the receiver (higher priority, same core) may take the TX stamp or even the
            // reply before send() returns here.
            sh.sent.store(i + 1, Relaxed);
            if let Some(mk) = &marker {
                mk.mark_send(i);
            }
            match port.send(probe.frame()) {
                Ok(Sent::Out) => {}
                // On the ring: it goes out with a later kick (its reply then comes late) or is counted at the end.
                Ok(Sent::Waiting(errno)) => {
                    sh.waited.fetch_add(1, Relaxed);
                    sh.send_errno.store(errno, Relaxed);
                }
                Ok(Sent::RingFull) => {
                    sh.ring_full.fetch_add(1, Relaxed);
                }
                Err(e) => {
                    sh.send_errors.fetch_add(1, Relaxed);
                    sh.send_errno.store(e.raw_os_error().unwrap_or(0), Relaxed);
                }
            }
        });
        std::thread::sleep(Duration::from_millis(1));
        take_stamps(&mut buf);
        // What never left the AF_XDP ring was not sent: the kernel refused every kick after it.
        let unsent = u64::from(port.unsent());
        sh.unsent_at_end.store(unsent, Relaxed);
        sh.send_errors.fetch_add(unsent, Relaxed);
        sh.sender_done.store(true, Release);
        (series, ended)
    }
}

/// A test seam (`test-seams` only): with RMP_EVAL_TEST_SEND_DELAY=N:US, each frame whose sequence number is a
/// multiple of N leaves US µs after its cycle's start, not at once — departure jitter the sender's wakeup does not
/// see and the round trip, which starts at the transmit stamp, does not carry (tests/nic/arrival.rs).
#[cfg(feature = "test-seams")]
fn test_seam_send_delay() -> Option<(u32, u64)> {
    let v = std::env::var("RMP_EVAL_TEST_SEND_DELAY").ok()?;
    let (n, us) = v.split_once(':')?;
    let n: u32 = n.parse().ok().filter(|&n| n > 0)?;
    Some((n, us.parse::<u64>().ok()? * 1000))
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_send_delay() -> Option<(u32, u64)> {
    None
}
