//! The reader of the traced CPUs' ring buffers (the binary pages, or trace_pipe's text when they cannot be read),
//! on its own thread off the RT CPU: it consumes the events every few milliseconds (so the ring buffer never wraps
//! and nothing stops the run), keeps the events since the previous cycle's marker, and when a marker says the cycle
//! was late — over `--break-us`, or worse than any before when no threshold is given — keeps that window for the
//! analysis (window.rs). It also counts the tick on the CPU.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::event::{Event, TraceEntry};
use super::raw::RawEvent;
use super::raw::read::RawPipes;
use super::tracefs::drain;
use super::window::Window;

/// How often the pipe is emptied.
const POLL: Duration = Duration::from_millis(20);
/// Windows kept when a threshold is given: the worst ones (the rest are only counted).
pub(crate) const MAX_WINDOWS: usize = 20;

/// Which late cycles to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The worst of the run only.
    Worst,
    /// Every cycle later than this (ns); the worst MAX_WINDOWS of them.
    Over(u64),
}

/// One entry of a window: as the text reader parsed it, or a raw event (decoded only if the window is kept).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Entry(TraceEntry),
    Raw(RawEvent),
}

/// One kept window: the trace from the previous cycle's marker to this cycle's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Kept {
    pub(crate) cycle: u64,
    pub(crate) lat_ns: u64,
    pub(crate) items: Vec<Item>,
    /// NIC mode: the window of a request with no reply (`cycle` = its frame), not of a late one; `tail`: the
    /// trace after the last reply, where `cycle` is the first frame that may be in it.
    pub(crate) lost: bool,
    pub(crate) tail: bool,
}

impl Kept {
    /// The window's entries; raw events through `decode` (None: left out, an unknown record).
    pub(crate) fn entries(
        &self,
        mut decode: impl FnMut(&RawEvent) -> Option<Event>,
    ) -> Vec<TraceEntry> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Entry(e) => Some(e.clone()),
                Item::Raw(r) => decode(r).map(TraceEntry::Event),
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Collected {
    /// Worst first.
    pub(crate) windows: Vec<Kept>,
    /// NIC mode: the windows of requests with no reply (lost_track), and how many such frames were between replies.
    pub(crate) lost_windows: Vec<Kept>,
    pub(crate) unanswered: u64,
    /// Cycles over the threshold (kept or not).
    pub(crate) over: u64,
    pub(crate) marks: u64,
    pub(crate) lines: u64,
    /// Events the kernel dropped ("[LOST N EVENTS]"): a window may then be incomplete.
    pub(crate) lost: u64,
    /// Tick hrtimer expiries on the CPU (tick_nohz_handler, tick_sched_timer).
    pub(crate) ticks: u64,
    /// Trace time of the first and last event (ns), for rates.
    pub(crate) first_ns: u64,
    pub(crate) last_ns: u64,
}

/// What the reader reads: trace_pipe's text, or the per-CPU binary pages.
pub(crate) enum Source {
    Text(File),
    Raw(RawPipes),
}

pub(crate) struct Collector {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Collected>,
}

impl Collector {
    /// Starts the reader; it moves itself off `rt_cpus`.
    pub(crate) fn spawn(source: Source, w: Window, rt_cpus: Vec<usize>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("rmp-eval-trace".into())
            .spawn(move || {
                let _off = crate::measure::session::OffCore::apply(&rt_cpus);
                let mut w = w;
                let mut buf = Vec::with_capacity(64 * 1024);
                let mut source = source;
                loop {
                    let last = flag.load(Ordering::Acquire);
                    match &mut source {
                        Source::Text(pipe) => {
                            while drain(pipe, &mut buf) {
                                w.feed(&buf);
                                buf.clear();
                            }
                        }
                        Source::Raw(r) => r.poll(&mut w, last),
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(POLL);
                }
                w.finish()
            })?;
        Ok(Collector { stop, handle })
    }

    /// Reads what is left (call after tracing is stopped) and returns what was kept.
    pub(crate) fn finish(self) -> Collected {
        self.stop.store(true, Ordering::Release);
        self.handle.join().unwrap_or_default()
    }
}
