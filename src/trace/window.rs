//! The windows of one CPU's trace, line by line (or raw event by event): the events since the previous cycle's
//! marker, kept when the marker says the cycle was late; the lost events, ticks and markers counted. Separate
//! from the reader's thread (collect.rs) so that it can be tested on captured text.

use super::analyse::mark;
use super::collect::{Collected, Item, Keep, Kept, MAX_WINDOWS};
use super::lost_track::LostTrack;
use super::model::Mark;
use super::raw::{Event, Schema};
use crate::parse::ftrace;

/// Lines kept in one window: a stall of seconds must not fill memory.
const MAX_LINES: usize = 50_000;

/// The line-by-line state of one reader.
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
