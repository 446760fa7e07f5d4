//! The reader of the RT CPU's trace_pipe, on its own thread off the RT CPU: it consumes the events every few
//! milliseconds (so the ring buffer never wraps and nothing stops the run), keeps the lines since the previous
//! cycle's marker, and when a marker says the cycle was late — over `--break-us`, or worse than any before when no
//! threshold is given — keeps that window's text for the analysis. It also counts the tick on the CPU.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::analyse::mark;
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

/// One kept window: the trace from the previous cycle's marker to this cycle's.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub cycle: u64,
    pub lat_ns: u64,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Collected {
    /// Worst first.
    pub windows: Vec<Kept>,
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
    cur: Vec<String>,
    partial: String,
    worst: u64,
    pub out: Collected,
}

impl Window {
    pub fn new(keep: Keep) -> Self {
        Window {
            keep: Some(keep),
            ..Default::default()
        }
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
        self.out.lines += 1;
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
        if let Some(p) = &parsed
            && p.event == "hrtimer_expire_entry"
            && p.body.contains("function=tick_")
        {
            self.out.ticks += 1;
        }
        if self.cur.len() >= MAX_LINES {
            self.cur.drain(..MAX_LINES / 2);
        }
        self.cur.push(l.to_string());
        let Some(m) = parsed.as_ref().and_then(mark) else {
            return;
        };
        self.out.marks += 1;
        let ts = parsed.map_or(0, |p| p.ts_ns);
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
                text: self.cur.join("\n") + "\n",
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
        // The next window starts at this marker.
        let last = self.cur.pop().unwrap_or_default();
        self.cur.clear();
        self.cur.push(last);
    }

    pub fn finish(mut self) -> Collected {
        self.out
            .windows
            .sort_by_key(|w| std::cmp::Reverse(w.lat_ns));
        self.out
    }
}

pub struct Collector {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Collected>,
}

impl Collector {
    /// Starts the reader; it moves itself off `rt_cpus`.
    pub fn spawn(mut pipe: File, keep: Keep, rt_cpus: Vec<usize>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("rmp-eval-trace".into())
            .spawn(move || {
                let _off = crate::measure::session::OffCore::apply(&rt_cpus);
                let mut w = Window::new(keep);
                let mut buf = Vec::with_capacity(64 * 1024);
                loop {
                    let last = flag.load(Ordering::Acquire);
                    while drain(&mut pipe, &mut buf) {
                        w.feed(&buf);
                        buf.clear();
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

/// The loop's side: one write to trace_marker per cycle, formatted on the stack (no allocation, one syscall).
pub struct Marker {
    file: File,
}

impl Marker {
    pub fn new(file: File) -> Self {
        Marker { file }
    }

    /// "rmp-eval c=CYCLE dl=DEADLINE_NS lat=LATENCY_NS".
    #[inline]
    pub fn mark(&self, cycle: u64, deadline_ns: u64, lat_ns: u64) {
        let mut buf = [0u8; 96];
        let mut n = 0;
        for (label, v) in [
            (&b"rmp-eval c="[..], cycle),
            (b" dl=", deadline_ns),
            (b" lat=", lat_ns),
        ] {
            buf[n..n + label.len()].copy_from_slice(label);
            n += label.len();
            n += itoa(v, &mut buf[n..]);
        }
        buf[n] = b'\n';
        // A failed write loses one marker; the loop must not stop for it.
        let _ = (&self.file).write(&buf[..=n]);
    }
}

/// Writes `v` in decimal at the start of `out` (≥ 20 bytes); returns the length.
fn itoa(mut v: u64, out: &mut [u8]) -> usize {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let len = tmp.len() - i;
    out[..len].copy_from_slice(&tmp[i..]);
    len
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
        assert!(c.windows[0].text.starts_with(
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

    #[test]
    fn marker_text() {
        let mut b = [0u8; 24];
        assert_eq!(itoa(0, &mut b), 1);
        assert_eq!(&b[..1], b"0");
        assert_eq!(itoa(u64::MAX, &mut b), 20);
        assert_eq!(&b[..20], b"18446744073709551615");
    }
}
