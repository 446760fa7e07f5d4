//! The reader of the RT CPU's trace_pipe, on its own thread off the RT CPU: it consumes the events every few
//! milliseconds (so the ring buffer never wraps and nothing stops the run), keeps the lines since the previous
//! cycle's marker, and when a marker says the cycle was late — over `--break-us`, or worse than any before when no
//! threshold is given — keeps that window's text for the analysis (window.rs). It also counts the tick on the CPU.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::raw::Event;
use super::raw::read::RawPipes;
use super::tracefs::drain;
use super::window::Window;

/// How often the pipe is emptied.
const POLL: Duration = Duration::from_millis(20);
/// Windows kept when a threshold is given: the worst ones (the rest are only counted).
pub const MAX_WINDOWS: usize = 20;

/// Which late cycles to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The worst of the run only.
    Worst,
    /// Every cycle later than this (ns); the worst MAX_WINDOWS of them.
    Over(u64),
}

/// One event of a window: a trace_pipe line, or a raw event (rendered to its line only if the window is kept).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Text(String),
    Raw(Event),
}

/// One kept window: the trace from the previous cycle's marker to this cycle's.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub cycle: u64,
    pub lat_ns: u64,
    pub(crate) items: Vec<Item>,
    /// NIC mode: the window of a request with no reply (`cycle` = its frame), not of a late one; `tail`: the
    /// trace after the last reply, where `cycle` is the first frame that may be in it.
    pub lost: bool,
    pub tail: bool,
}

impl Kept {
    /// The window's text; raw events through `line` (None: the text reader's lines only).
    pub(crate) fn text(&self, mut line: impl FnMut(&Event) -> Option<String>) -> String {
        let mut out = String::new();
        for i in &self.items {
            match i {
                Item::Text(t) => out.push_str(t),
                Item::Raw(e) => match line(e) {
                    Some(l) => out.push_str(&l),
                    None => continue,
                },
            }
            out.push('\n');
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Collected {
    /// Worst first.
    pub windows: Vec<Kept>,
    /// NIC mode: the windows of requests with no reply (lost_track), and how many such frames were between replies.
    pub lost_windows: Vec<Kept>,
    pub unanswered: u64,
    /// Cycles over the threshold (kept or not).
    pub over: u64,
    pub marks: u64,
    pub lines: u64,
    /// Events the kernel dropped ("[LOST N EVENTS]"): a window may then be incomplete.
    pub lost: u64,
    /// Tick hrtimer expiries on the CPU (tick_nohz_handler, tick_sched_timer).
    pub ticks: u64,
    /// Trace time of the first and last event (ns), for rates.
    pub first_ns: u64,
    pub last_ns: u64,
}

/// What the reader reads: trace_pipe's text, or the per-CPU binary pages.
pub(crate) enum Source {
    Text(File),
    Raw(RawPipes),
}

pub struct Collector {
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
    pub fn finish(self) -> Collected {
        self.stop.store(true, Ordering::Release);
        self.handle.join().unwrap_or_default()
    }
}
