//! The reader of the RT CPU's trace_pipe, on its own thread off the RT CPU: it consumes the events every few
//! milliseconds (so the ring buffer never wraps and nothing stops the run), keeps the lines since the previous
//! cycle's marker, and when a marker says the cycle was late — over `--break-us`, or worse than any before when no
//! threshold is given — keeps that window's text for the analysis. It also counts the tick on the CPU.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::analyse::mark;
use super::lost_track::LostTrack;
use super::model::Mark;
use super::raw::{Event, Schema};
use super::raw_read::RawPipes;
use super::tracefs::drain;
use crate::parse::ftrace;

/// How often the pipe is emptied.
const POLL: Duration = Duration::from_millis(20);
/// Windows kept when a threshold is given: the worst ones (the rest are only counted).
pub const MAX_WINDOWS: usize = 20;
/// Lines kept in one window: a stall of seconds must not fill memory.
const MAX_LINES: usize = 50_000;

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
    /// Trace time of the first and last marker (ns), for rates.
    pub first_ns: u64,
    pub last_ns: u64,
}

/// The line-by-line state, separate from the thread so it can be tested on captured text.
#[derive(Default)]
pub struct Window {
    keep: Option<Keep>,
    cur: Vec<Item>,
    partial: String,
    worst: u64,
    lost_track: Option<LostTrack>,
    pub out: Collected,
}

impl Window {
    pub fn new(keep: Keep) -> Self {
        Window {
            keep: Some(keep),
            ..Default::default()
        }
    }

    /// NIC mode: markers are replies, and the frames between them had none.
    pub(crate) fn tracking_lost(mut self) -> Self {
        self.lost_track = Some(LostTrack::default());
        self
    }

    /// Feeds raw bytes from the pipe (lines may be split across reads).
    pub fn feed(&mut self, bytes: &[u8]) {
        self.partial.push_str(&String::from_utf8_lossy(bytes));
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=i).collect();
            self.line(line.trim_end_matches('\n'));
        }
    }

    fn line(&mut self, l: &str) {
        if let Some(n) = l
            .strip_prefix("CPU:")
            .and_then(|r| r.split("[LOST ").nth(1))
        {
            self.out.lost += n
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or(1);
        }
        let parsed = ftrace::parse_line(l);
        let tick = parsed.as_ref().is_some_and(|p| {
            p.event == "hrtimer_expire_entry" && p.body.contains("function=tick_")
        });
        let m = parsed.as_ref().and_then(mark);
        let ts = parsed.map_or(0, |p| p.ts_ns);
        self.push(Item::Text(l.to_string()), ts, m, tick);
    }

    /// Feeds one raw event (in time order across CPUs).
    pub(crate) fn event(&mut self, e: Event, s: &Schema) {
        let (m, tick) = (s.mark(&e.data), s.is_tick(&e.data));
        let ts = e.ts;
        self.push(Item::Raw(e), ts, m, tick);
    }

    /// Events the kernel dropped on `cpu` (0: dropped, count unknown), as trace_pipe says it.
    pub(crate) fn lost(&mut self, cpu: usize, n: u64) {
        let n = n.max(1);
        self.out.lost += n;
        self.cur
            .push(Item::Text(format!("CPU:{cpu} [LOST {n} EVENTS]")));
    }

    fn push(&mut self, item: Item, ts: u64, m: Option<Mark>, tick: bool) {
        self.out.lines += 1;
        self.out.ticks += u64::from(tick);
        if self.cur.len() >= MAX_LINES {
            self.cur.drain(..MAX_LINES / 2);
        }
        self.cur.push(item);
        let Some(m) = m else {
            return;
        };
        self.out.marks += 1;
        if self.out.first_ns == 0 {
            self.out.first_ns = ts;
        }
        self.out.last_ns = ts;
        let keep = match self.keep.unwrap_or(Keep::Worst) {
            Keep::Worst => m.lat_ns > self.worst,
            Keep::Over(t) => m.lat_ns > t,
        };
        if keep {
            let k = Kept {
                cycle: m.cycle,
                lat_ns: m.lat_ns,
                items: self.cur.clone(),
                lost: false,
                tail: false,
            };
            match self.keep.unwrap_or(Keep::Worst) {
                Keep::Worst => self.out.windows = vec![k],
                Keep::Over(_) => {
                    self.out.over += 1;
                    // Full: the least late one makes room, so the worst MAX_WINDOWS are kept.
                    if self.out.windows.len() < MAX_WINDOWS {
                        self.out.windows.push(k);
                    } else if let Some(min) = self.out.windows.iter_mut().min_by_key(|w| w.lat_ns)
                        && min.lat_ns < k.lat_ns
                    {
                        *min = k;
                    }
                }
            }
            self.worst = self.worst.max(m.lat_ns);
        }
        if let Some(t) = &mut self.lost_track {
            t.on_mark(m.cycle, ts, m.lat_ns, &self.cur);
        }
        // The next window starts at this marker.
        let last = self.cur.pop();
        self.cur.clear();
        self.cur.extend(last);
    }

    pub fn finish(mut self) -> Collected {
        if let Some(t) = self.lost_track.take() {
            (self.out.lost_windows, self.out.unanswered) = t.finish(&self.cur);
        }
        self.out
            .windows
            .sort_by_key(|w| std::cmp::Reverse(w.lat_ns));
        self.out
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str =
        include_str!("../../tests/fixtures/samples/trace-firecracker-vm-fifo90-spinner.txt");

    #[test]
    fn keeps_the_worst_window_fed_in_odd_chunks() {
        let mut w = Window::new(Keep::Worst);
        for chunk in SAMPLE.as_bytes().chunks(777) {
            w.feed(chunk);
        }
        let c = w.finish();
        assert_eq!(c.windows.len(), 1);
        assert_eq!((c.windows[0].cycle, c.windows[0].lat_ns), (292, 306_226));
        assert!(c.windows[0].text(|_| None).starts_with(
            "         python3-18868   [001] ...1.  4494.246233: tracing_mark_write: rmp-eval c=291"
        ));
        assert!(c.ticks >= 1);
        assert_eq!(c.marks, SAMPLE.matches("tracing_mark_write").count() as u64);
    }

    #[test]
    fn a_threshold_keeps_each_late_cycle() {
        let mut w = Window::new(Keep::Over(60_000));
        w.feed(SAMPLE.as_bytes());
        w.feed(b"CPU:1 [LOST 12 EVENTS]\n");
        let c = w.finish();
        let lats: Vec<u64> = c.windows.iter().map(|k| k.lat_ns).collect();
        assert_eq!(lats[0], 306_226, "worst first");
        assert!(lats.iter().all(|&l| l > 60_000));
        assert_eq!(c.over, lats.len() as u64);
        assert_eq!(c.lost, 12);
    }
}
