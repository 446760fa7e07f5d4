//! The windows of one CPU's trace, line by line (or raw event by event): the events before a marker, kept when
//! the marker says the cycle was late; the lost events, ticks and markers counted. The cyclic loop marks only its
//! late cycles, so its window is cut at the previous cycle's deadline (the marker's deadline less one period);
//! NIC mode marks every reply, and a window starts at the previous marker. Separate from the reader's thread
//! (collect.rs) so that it can be tested on captured text.

use super::analyse::deadline;
use super::collect::{Collected, Item, Keep, Kept, MAX_WINDOWS};
use super::event::{Event, TraceEntry, What, text};
use super::lost_track::LostTrack;
use super::model::Mark;
use super::raw::{RawEvent, Schema};

/// The tick's hrtimer firing (tick_nohz_handler, tick_sched_timer).
fn is_tick(e: &Event) -> bool {
    matches!(&e.what, What::TimerEntry { function, .. } if function.starts_with("tick_"))
}

/// Lines kept in one window: a stall of seconds must not fill memory.
const MAX_LINES: usize = 50_000;
/// Without a marker per cycle, events older than this before the newest are let go: a window reaches back one
/// period before its deadline, and a cycle later than this has a window cut at its start, as MAX_LINES cuts it.
const HORIZON_NS: u64 = 1_000_000_000;

/// The line-by-line state of one reader.
#[derive(Default)]
pub(crate) struct Window {
    keep: Option<Keep>,
    cur: Vec<Item>,
    /// The trace time of each item of `cur`.
    cur_ts: Vec<u64>,
    /// The loop's period when only late cycles are marked: a window starts at the previous deadline.
    period_ns: Option<u64>,
    partial: String,
    worst: u64,
    lost_track: Option<LostTrack>,
    pub(crate) out: Collected,
}

impl Window {
    pub(crate) fn new(keep: Keep) -> Self {
        Window {
            keep: Some(keep),
            ..Default::default()
        }
    }

    /// The cyclic loop, which marks only late cycles: a window is the trace from one period before the late
    /// cycle's deadline to its marker.
    pub(crate) fn cut_at_previous_deadline(mut self, period_ns: u64) -> Self {
        self.period_ns = Some(period_ns);
        self
    }

    /// NIC mode: markers are replies, and the frames between them had none.
    pub(crate) fn tracking_lost(mut self) -> Self {
        self.lost_track = Some(LostTrack::default());
        self
    }

    /// Feeds raw bytes from the pipe (lines may be split across reads).
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.partial.push_str(&String::from_utf8_lossy(bytes));
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=i).collect();
            self.line(line.trim_end_matches('\n'));
        }
    }

    fn line(&mut self, l: &str) {
        let Some(entry) = text::entry(l) else {
            return;
        };
        let (ts, m, tick) = match &entry {
            TraceEntry::Event(e) => (e.ts_ns, e.mark(), is_tick(e)),
            TraceEntry::Lost { n, .. } => {
                self.out.lost += n;
                (self.cur_ts.last().copied().unwrap_or(0), None, false)
            }
        };
        self.push(Item::Entry(entry), ts, m, tick);
    }

    /// Feeds one raw event (in time order across CPUs).
    pub(crate) fn event(&mut self, e: RawEvent, s: &Schema) {
        let (m, tick) = (s.mark(&e.data), s.is_tick(&e.data));
        let ts = e.ts;
        self.push(Item::Raw(e), ts, m, tick);
    }

    /// Events the kernel dropped on `cpu` (0: dropped, count unknown), as trace_pipe says it.
    pub(crate) fn lost(&mut self, cpu: usize, n: u64) {
        let n = n.max(1);
        self.out.lost += n;
        let ts = self.cur_ts.last().copied().unwrap_or(0);
        self.cur.push(Item::Entry(TraceEntry::Lost { cpu, n }));
        self.cur_ts.push(ts);
    }

    /// Lets go of what no window can need: over MAX_LINES, and (late cycles only marked) beyond the horizon.
    fn bound(&mut self, ts: u64) {
        let mut old = if self.cur.len() >= MAX_LINES {
            MAX_LINES / 2
        } else {
            0
        };
        if self.period_ns.is_some()
            && self
                .cur_ts
                .first()
                .is_some_and(|&t| t + 2 * HORIZON_NS < ts)
        {
            old = old.max(self.cur_ts.partition_point(|&t| t + HORIZON_NS < ts));
        }
        if old > 0 {
            self.cur.drain(..old);
            self.cur_ts.drain(..old);
        }
    }

    /// The items of the window that `m`, read at `ts`, ends: from the previous deadline when the loop marks only
    /// late cycles, else all since the previous marker.
    fn window_of(&self, m: &Mark, ts: u64) -> Vec<Item> {
        let Some(p) = self.period_ns else {
            return self.cur.clone();
        };
        let start = deadline(m, ts).saturating_sub(p);
        let from = self.cur_ts.partition_point(|&t| t < start);
        self.cur[from..].to_vec()
    }

    fn push(&mut self, item: Item, ts: u64, m: Option<Mark>, tick: bool) {
        self.out.lines += 1;
        self.out.ticks += u64::from(tick);
        self.bound(ts);
        self.cur.push(item);
        self.cur_ts.push(ts);
        if ts != 0 {
            if self.out.first_ns == 0 {
                self.out.first_ns = ts;
            }
            self.out.last_ns = self.out.last_ns.max(ts);
        }
        let Some(m) = m else {
            return;
        };
        self.out.marks += 1;
        let keep = match self.keep.unwrap_or(Keep::Worst) {
            Keep::Worst => m.lat_ns > self.worst,
            Keep::Over(t) => m.lat_ns > t,
        };
        if keep {
            let k = Kept {
                cycle: m.cycle,
                lat_ns: m.lat_ns,
                items: self.window_of(&m, ts),
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
        // NIC mode: the next window starts at this marker. The cyclic loop's starts at a deadline, later.
        if self.period_ns.is_none() {
            let keep_from = self.cur.len() - 1;
            self.cur.drain(..keep_from);
            self.cur_ts.drain(..keep_from);
        }
    }

    pub(crate) fn finish(mut self) -> Collected {
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
        // From cycle 291's marker (python3-18868 at 4494.246233).
        let first = c.windows[0].entries(|_| None);
        let first = first[0].event().unwrap();
        assert_eq!(first.mark().map(|m| m.cycle), Some(291));
        assert_eq!((first.pid, first.ts_ns), (18868, 4_494_246_233_000));
        assert!(c.ticks >= 1);
        assert_eq!(c.marks, SAMPLE.matches("tracing_mark_write").count() as u64);
    }

    #[test]
    fn a_late_cycle_marked_alone_is_explained_as_with_a_marker_every_cycle() {
        // The loop marks only late cycles: the sample with every marker but cycle 292's taken out.
        let alone: String = SAMPLE
            .lines()
            .filter(|l| !l.contains("tracing_mark_write") || l.contains(" c=292 "))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut w = Window::new(Keep::Worst).cut_at_previous_deadline(1_000_000);
        for chunk in alone.as_bytes().chunks(777) {
            w.feed(chunk);
        }
        let c = w.finish();
        assert_eq!((c.marks, c.windows.len()), (1, 1));
        let window = c.windows[0].entries(|_| None);
        // The window reaches back to cycle 291's deadline (4494.246145925), not to the first event.
        let first = window[0].event().unwrap();
        assert!(first.ts_ns >= 4_494_246_145_925, "{}", first.ts_ns);
        assert!(first.ts_ns < 4_494_246_233_000, "{}", first.ts_ns);
        let mut every = Window::new(Keep::Worst);
        every.feed(SAMPLE.as_bytes());
        let old = every.finish().windows[0].entries(|_| None);
        let (a, b) = (
            crate::trace::analyse::explain(&window, 1).unwrap(),
            crate::trace::analyse::explain(&old, 1).unwrap(),
        );
        assert_eq!(a.cycle, 292);
        assert_eq!((&a.verdict, &a.culprits), (&b.verdict, &b.culprits));
        assert!(
            c.last_ns > c.first_ns,
            "rates come from every event, not the markers"
        );
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
