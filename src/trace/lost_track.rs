//! NIC mode: the requests that got no reply. The receiver marks each matched reply with its frame index, in
//! order; a jump from frame L to N says frames L+1..N-1 had none (yet: a reply that comes after a later one takes
//! its frame back). The first of each gap keeps the trace of the two windows around it — the send is in the one
//! before the last reply when the round trip is longer than the period — and the frames sent after the last reply
//! are looked for at the end.

use super::collect::{Item, Kept};

/// Gaps whose trace is kept.
pub(crate) const MAX_LOST_WINDOWS: usize = 5;

#[derive(Debug, Default)]
pub(crate) struct LostTrack {
    last: Option<u64>,
    /// The window before the current one.
    prev: Vec<Item>,
    pub(crate) windows: Vec<Kept>,
    /// Frames with no reply between two replies.
    pub(crate) frames: u64,
}

impl LostTrack {
    /// A reply to `frame` was marked; `cur` is the window that ends at its marker.
    pub(crate) fn on_mark(&mut self, frame: u64, cur: &[Item]) {
        match self.last {
            Some(l) if frame > l + 1 => {
                self.frames += frame - l - 1;
                if self.windows.len() < MAX_LOST_WINDOWS {
                    self.windows.push(self.kept(l + 1, cur));
                }
            }
            Some(l) if frame <= l => {
                // A late reply out of order: that frame was not lost.
                self.frames = self.frames.saturating_sub(1);
                self.windows.retain(|w| w.cycle != frame);
            }
            _ => {}
        }
        self.last = Some(self.last.map_or(frame, |l| l.max(frame)));
        self.prev = cur.to_vec();
    }

    fn kept(&self, frame: u64, cur: &[Item]) -> Kept {
        Kept {
            cycle: frame,
            lat_ns: 0,
            // `cur` starts with the marker that ended `prev`.
            items: self
                .prev
                .iter()
                .chain(cur.iter().skip(usize::from(!self.prev.is_empty())))
                .cloned()
                .collect(),
            lost: true,
        }
    }

    /// At the end: the trace after the last reply, where frames sent later would be (the analysis says whether
    /// any was); the first frame it may hold is the one after the last reply.
    pub(crate) fn finish(mut self, cur: &[Item]) -> (Vec<Kept>, u64) {
        if self.windows.len() < MAX_LOST_WINDOWS && cur.len() > 1 {
            let first = self.last.map_or(0, |l| l + 1);
            let k = self.kept(first, cur);
            self.windows.push(k);
        }
        (self.windows, self.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(v: &[&str]) -> Vec<Item> {
        v.iter().map(|s| Item::Text(s.to_string())).collect()
    }

    #[test]
    fn gaps_between_replies_and_after_the_last() {
        let mut t = LostTrack::default();
        t.on_mark(0, &items(&["c0"]));
        t.on_mark(1, &items(&["c0", "s2", "c1"]));
        // Frames 2 and 3 had no reply when 4's came: one window, from the one before (the send of 2 is there).
        t.on_mark(4, &items(&["c1", "s3", "s4", "c4"]));
        assert_eq!(t.frames, 2);
        assert_eq!(t.windows.len(), 1);
        assert_eq!(t.windows[0].cycle, 2);
        assert!(t.windows[0].lost);
        let text = t.windows[0].text(|_| None);
        assert_eq!(text, "c0\ns2\nc1\ns3\ns4\nc4\n", "the shared marker once");
        t.on_mark(6, &items(&["c4", "s5", "s6", "c6"]));
        assert_eq!((t.frames, t.windows.len()), (3, 2));
        // 5's reply comes after 6's: it was late, not lost.
        t.on_mark(5, &items(&["c6", "c5"]));
        assert_eq!((t.frames, t.windows.len()), (2, 1));
        // Sent after the last reply: the tail, from frame 7.
        let (w, n) = t.finish(&items(&["c5", "s7"]));
        assert_eq!(n, 2);
        assert_eq!(w.last().unwrap().cycle, 7);
        // At most MAX_LOST_WINDOWS windows; every gap still counted.
        let mut t = LostTrack::default();
        for f in 0..20 {
            t.on_mark(f * 2, &items(&["x"]));
        }
        assert_eq!((t.frames, t.windows.len()), (19, MAX_LOST_WINDOWS));
    }
}
