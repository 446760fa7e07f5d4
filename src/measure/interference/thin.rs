//! A bounded sample of a run's per-window values, thinned evenly as the run grows: every window until `CAP` are
//! held, then every other one is dropped and only every second window is taken, and so on. A day-long run thus
//! holds at most `CAP` values (64 KiB of rate pairs) however long it lasts; its median is the median of windows
//! spread evenly over the whole run — exact up to `CAP` windows (68 min at 1 s).

/// The most values held.
pub(crate) const CAP: usize = 4096;

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Thinned<T> {
    values: Vec<T>,
    /// Windows per value kept (a power of two), and windows seen since the last one kept.
    stride: u64,
    skipped: u64,
}

impl<T: Copy> Thinned<T> {
    pub(crate) fn push(&mut self, v: T) {
        let stride = self.stride.max(1);
        if self.skipped + 1 < stride {
            self.skipped += 1;
            return;
        }
        self.skipped = 0;
        if self.values.len() >= CAP {
            // In place: keeps the values at even positions, which are `2 × stride` windows apart.
            let mut i = 0;
            self.values.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.stride = stride * 2;
            // This window's turn under the new stride: it starts the next run of skips.
            self.skipped = 0;
        }
        self.values.push(v);
    }

    pub(crate) fn values(&self) -> &[T] {
        &self.values
    }

    /// Values held (for the test that the memory stays bounded).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.values.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_stays_bounded_and_evenly_spread() {
        let mut t = Thinned::default();
        let n = 1_000_000u64;
        for w in 0..n {
            t.push(w);
        }
        assert!(t.values().len() <= CAP, "{}", t.values().len());
        assert!(t.capacity() <= CAP, "{}", t.capacity());
        // Evenly spread: equal steps, from the start to near the end.
        let v = t.values();
        let step = v[1] - v[0];
        assert!(v.windows(2).all(|p| p[1] - p[0] == step), "{step}");
        assert_eq!(v[0], 0);
        assert!(n - v[v.len() - 1] <= step, "{} {step}", v[v.len() - 1]);
        assert!(v.len() > CAP / 2, "{}", v.len());
    }

    #[test]
    fn a_short_run_keeps_every_window() {
        let mut t = Thinned::default();
        for w in 0..CAP as u32 {
            t.push(w);
        }
        assert_eq!(t.values().len(), CAP);
        assert!(t.values().iter().enumerate().all(|(i, &w)| i as u32 == w));
    }
}
