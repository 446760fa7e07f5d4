//! The loop's marker in the trace: one write(2) to trace_marker per cycle, formatted on the stack.

use std::fs::File;
use std::io::Write;

/// The loop's side: one write to trace_marker per cycle, formatted on the stack (no allocation, one syscall).
pub struct Marker {
    file: File,
}

impl Marker {
    pub fn new(file: File) -> Self {
        Marker { file }
    }

    /// A second writer (NIC mode: the sender's, beside the receiver's).
    pub fn try_clone(&self) -> std::io::Result<Self> {
        Ok(Marker {
            file: self.file.try_clone()?,
        })
    }

    /// NIC mode, the sender just before send(): "rmp-eval s=FRAME".
    #[inline]
    pub fn mark_send(&self, frame: u64) {
        let mut buf = [0u8; 40];
        let label = b"rmp-eval s=";
        buf[..label.len()].copy_from_slice(label);
        let mut n = label.len();
        n += itoa(frame, &mut buf[n..]);
        buf[n] = b'\n';
        let _ = (&self.file).write(&buf[..=n]);
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

    #[test]
    fn marker_text() {
        let mut b = [0u8; 24];
        assert_eq!(itoa(0, &mut b), 1);
        assert_eq!(&b[..1], b"0");
        assert_eq!(itoa(u64::MAX, &mut b), 20);
        assert_eq!(&b[..20], b"18446744073709551615");
    }
}
