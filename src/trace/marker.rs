//! The loop's marker in the trace, formatted on the stack: a write(2) to trace_marker for a late cycle only (as
//! cyclictest -b writes one when a cycle breaks its threshold), so that an on-time cycle makes no system call
//! beyond its sleep; NIC mode marks every send and reply (a request with no reply is found between them).

use std::fs::File;
use std::io::Write;

/// The loop's side: one write to trace_marker per marked cycle (no allocation, one syscall).
pub(crate) struct Marker {
    file: File,
    gate: Option<Gate>,
}

/// Which cycles the loop marks: those later than the threshold, or with none, each cycle later than every one
/// before it (the trace keeps the worst window then; the running maximum rises a few dozen times in a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gate {
    over_ns: Option<u64>,
    worst_ns: u64,
}

impl Gate {
    pub(crate) fn new(over_ns: Option<u64>) -> Self {
        Gate {
            over_ns,
            worst_ns: 0,
        }
    }

    /// Whether a cycle late by `lat_ns` is marked (the window reader keeps the same ones).
    #[inline]
    pub(crate) fn passes(&mut self, lat_ns: u64) -> bool {
        match self.over_ns {
            Some(t) => lat_ns > t,
            None if lat_ns > self.worst_ns => {
                self.worst_ns = lat_ns;
                true
            }
            None => false,
        }
    }
}

impl Marker {
    /// A marker of every cycle (NIC mode).
    pub(crate) fn new(file: File) -> Self {
        Marker { file, gate: None }
    }

    /// A marker of the cycles `gate` passes (the cyclic loop).
    pub(crate) fn gated(file: File, gate: Gate) -> Self {
        Marker {
            file,
            gate: Some(gate),
        }
    }

    /// A second writer (NIC mode: the sender's, beside the receiver's).
    pub(crate) fn try_clone(&self) -> std::io::Result<Self> {
        Ok(Marker {
            file: self.file.try_clone()?,
            gate: self.gate,
        })
    }

    /// NIC mode, the sender just before send(): "rmp-eval s=FRAME".
    #[inline]
    pub(crate) fn mark_send(&self, frame: u64) {
        let mut buf = [0u8; 40];
        let label = b"rmp-eval s=";
        buf[..label.len()].copy_from_slice(label);
        let mut n = label.len();
        n += itoa(frame, &mut buf[n..]);
        buf[n] = b'\n';
        let _ = (&self.file).write(&buf[..=n]);
    }

    /// "rmp-eval c=CYCLE dl=DEADLINE_NS lat=LATENCY_NS", when the gate (if any) passes the cycle.
    #[inline]
    pub(crate) fn mark(&mut self, cycle: u64, deadline_ns: u64, lat_ns: u64) {
        if self.gate.as_mut().is_some_and(|g| !g.passes(lat_ns)) {
            return;
        }
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

    #[test]
    fn marker_text() {
        let mut b = [0u8; 24];
        assert_eq!(itoa(0, &mut b), 1);
        assert_eq!(&b[..1], b"0");
        assert_eq!(itoa(u64::MAX, &mut b), 20);
        assert_eq!(&b[..20], b"18446744073709551615");
    }

    #[test]
    fn a_threshold_passes_only_the_cycles_over_it() {
        let mut g = Gate::new(Some(50_000));
        let lats = [10_000, 50_000, 50_001, 3_000, 90_000];
        let passed: Vec<u64> = lats.into_iter().filter(|&l| g.passes(l)).collect();
        assert_eq!(passed, [50_001, 90_000]);
    }

    #[test]
    fn without_a_threshold_each_new_worst_passes() {
        let mut g = Gate::new(None);
        let lats = [5_000, 4_000, 5_000, 7_000, 6_000, 20_000, 1_000];
        let passed: Vec<u64> = lats.into_iter().filter(|&l| g.passes(l)).collect();
        assert_eq!(passed, [5_000, 7_000, 20_000]);
    }
}
