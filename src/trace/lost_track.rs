//! NIC mode: the requests that got no reply. The receiver marks each matched reply with its frame index, in
//! order; a jump from frame L to N says frames L+1..N-1 had none (yet: a reply that comes after a later one takes
//! its frame back). The first of each gap keeps the trace of the two windows around it — the send is in the one
//! before the last reply when the round trip is longer than the period — and the frames sent after the last reply
//! are looked for at the end.

use std::collections::VecDeque;

use super::collect::{Item, Kept};

/// Gaps whose trace is kept.
pub(crate) const MAX_LOST_WINDOWS: usize = 5;
/// Windows remembered for a gap's send (a round trip longer than many periods needs more of them).
const HISTORY: usize = 64;
/// Margin before the send of the last reply's frame.
const MARGIN_NS: u64 = 1_000_000;

#[derive(Debug, Default)]
pub(crate) struct LostTrack {
    /// The last reply: its frame, marker time and round trip.
    last: Option<(u64, u64, u64)>,
    /// The latest windows, each with its end marker's time.
    hist: VecDeque<(u64, Vec<Item>)>,
    pub(crate) windows: Vec<Kept>,
    /// Frames with no reply between two replies.
    pub(crate) frames: u64,
}

impl LostTrack {
    /// A reply to `frame` was marked at `ts` with round trip `lat`; `cur` is the window that ends at its marker.
    pub(crate) fn on_mark(&mut self, frame: u64, ts: u64, lat: u64, cur: &[Item]) {
        match self.last {
            Some((l, lts, llat)) if frame > l + 1 => {
                self.frames += frame - l - 1;
                if self.windows.len() < MAX_LOST_WINDOWS {
                    // Frame l+1 was sent after frame l, which left at lts − llat.
                    let from = lts.saturating_sub(llat + MARGIN_NS);
                    let k = self.kept(l + 1, from, cur, false);
                    self.windows.push(k);
                }
            }
            Some((l, ..)) if frame <= l => {
                // A late reply out of order: that frame was not lost.
                self.frames = self.frames.saturating_sub(1);
                self.windows.retain(|w| w.cycle != frame);
            }
            _ => {}
        }
        if self.last.is_none_or(|(l, ..)| frame > l) {
            self.last = Some((frame, ts, lat));
        }
        self.hist.push_back((ts, cur.to_vec()));
        if self.hist.len() > HISTORY {
            self.hist.pop_front();
        }
    }

    /// The remembered windows that end at or after `from`, then `cur`, each boundary marker once (a window
    /// starts with the marker that ended the one before).
    fn kept(&self, frame: u64, from: u64, cur: &[Item], tail: bool) -> Kept {
        let old = self
            .hist
            .iter()
            .filter(|(end, _)| *end >= from)
            .map(|(_, w)| w.as_slice());
        let mut items: Vec<Item> = Vec::new();
        for w in old.chain(std::iter::once(cur)) {
            items.extend(w.iter().skip(usize::from(!items.is_empty())).cloned());
        }
        Kept {
            cycle: frame,
            lat_ns: 0,
            items,
            lost: true,
            tail,
        }
    }

    /// At the end: the trace after the last reply, where frames sent later would be (the analysis says whether
    /// any was); the first frame it may hold is the one after the last reply.
    pub(crate) fn finish(mut self, cur: &[Item]) -> (Vec<Kept>, u64) {
        if self.windows.len() < MAX_LOST_WINDOWS && cur.len() > 1 {
            let (first, from) = self.last.map_or((0, 0), |(l, lts, llat)| {
                (l + 1, lts.saturating_sub(llat + MARGIN_NS))
            });
            let k = self.kept(first, from, cur, true);
            self.windows.push(k);
        }
        (self.windows, self.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::trace::event::{Event, TraceEntry, What};

    /// Events named `v` (what they are does not matter here).
    fn items(v: &[&str]) -> Vec<Item> {
        v.iter()
            .map(|s| {
                Item::Entry(TraceEntry::Event(Event {
                    cpu: 0,
                    ts_ns: 0,
                    pid: 0,
                    comm: String::new(),
                    what: What::Other {
                        event: s.to_string(),
                        body: String::new(),
                    },
                }))
            })
            .collect()
    }

    /// The names of a kept window's events, one a line.
    fn names(k: &Kept) -> String {
        k.entries(|_| None)
            .iter()
            .filter_map(|e| Some(format!("{}\n", e.event()?.name())))
            .collect()
    }

    #[test]
    fn gaps_between_replies_and_after_the_last() {
        const MS: u64 = 1_000_000;
        let mut t = LostTrack::default();
        // Replies 0, 1 at 10 and 11 ms, each 2.5 ms after its send (longer than the 1 ms period).
        t.on_mark(0, 10 * MS, 2_500_000, &items(&["s1", "s2", "c0"]));
        t.on_mark(1, 11 * MS, 2_500_000, &items(&["c0", "s3", "c1"]));
        // Frames 2 and 3 had no reply when 4's came: one window, back to before frame 1 left (8.5 ms − 1 ms) —
        // the send of 2 is in the window that ended with reply 0.
        t.on_mark(4, 14 * MS, 2_500_000, &items(&["c1", "s4", "s5", "c4"]));
        assert_eq!(t.frames, 2);
        assert_eq!(t.windows.len(), 1);
        assert_eq!(
            (t.windows[0].cycle, t.windows[0].lost, t.windows[0].tail),
            (2, true, false)
        );
        let text = names(&t.windows[0]);
        assert_eq!(
            text, "s1\ns2\nc0\ns3\nc1\ns4\ns5\nc4\n",
            "each shared marker once"
        );
        t.on_mark(6, 16 * MS, 2_500_000, &items(&["c4", "s6", "c6"]));
        assert_eq!((t.frames, t.windows.len()), (3, 2));
        // 5's reply comes after 6's: it was late, not lost.
        t.on_mark(5, 16 * MS + 1, 3_500_000, &items(&["c6", "c5"]));
        assert_eq!((t.frames, t.windows.len()), (2, 1));
        // Sent after the last reply: the tail, from frame 7.
        let (w, n) = t.finish(&items(&["c5", "s7"]));
        assert_eq!(n, 2);
        let tail = w.last().unwrap();
        assert_eq!((tail.cycle, tail.tail), (7, true));
        // At most MAX_LOST_WINDOWS windows; every gap still counted; the history stays bounded.
        let mut t = LostTrack::default();
        for f in 0..100 {
            t.on_mark(f * 2, f * MS, 100_000, &items(&["x"]));
        }
        assert_eq!((t.frames, t.windows.len()), (99, MAX_LOST_WINDOWS));
        assert_eq!(t.hist.len(), HISTORY);
    }
}
