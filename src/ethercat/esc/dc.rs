//! The distributed clock of an emulated ESC (ETG.1000.4 and the ET1100 datasheet's DC chapter, registers
//! 0x0900–0x092F): a free-running 64-bit local time in ns, and the receive times a write to 0x0900 latches.
//!
//! What is emulated: the local time runs from the host clock that stamped the frame (the NIC's where it stamps,
//! the kernel's receive stamp otherwise), optionally `drift_ppm` fast or slow, from "power-on" a second before the
//! first frame. A frame reaches SubDevice `pos` of the chain `pos` × `HOP_NS` after the first, and comes back
//! through its port 1 after the rest of the chain. A write to 0x0900 (BWR, APWR or FPWR) latches, for that frame,
//! the local time of its beginning at port 0 (0x0900, 32 bits), port 1 (0x0904; ports 2 and 3 stay 0) and the
//! processing unit (0x0918, 64 bits); a read of 0x0900–0x091F returns the last latch, 0x0910 the system time
//! (local time + the offset at 0x0920) as the frame passes. Not emulated: the drift control a write to 0x0910
//! feeds (the write is dropped), the propagation delay register's use, SYNC/LATCH units (0x0980 on: plain memory).

/// The time a frame takes through one SubDevice to the next (processing, forwarding and PHYs; a typical ESC).
pub(crate) const HOP_NS: u64 = 1_000;
/// The local time at the first frame: the SubDevice was powered on a second before.
const POWER_ON_NS: u64 = 1_000_000_000;

pub(crate) mod reg {
    pub(crate) const FEATURES: usize = 0x0008;
    pub(crate) const RECV_TIME_P0: usize = 0x0900;
    pub(crate) const RECV_TIME_P1: usize = 0x0904;
    pub(crate) const SYSTEM_TIME: usize = 0x0910;
    pub(crate) const RECV_TIME_PU: usize = 0x0918;
    pub(crate) const SYSTEM_OFFSET: usize = 0x0920;
    /// The registers of the DC unit an ESC without DC does not answer (the receive times to the SYNC units).
    pub(crate) const DC_AREA: (usize, usize) = (0x0900, 0x0A00);
    /// What only the ESC writes: the receive times and the system time.
    pub(crate) const LATCHED: (usize, usize) = (0x0900, 0x0920);
}

/// ESC features supported (0x0008): bit 2 distributed clocks, bit 3 64-bit DC.
pub(crate) const FEATURES_DC: u16 = 0x000C;

/// How the chain's clocks run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DcSpec {
    /// Every SubDevice's clock runs this much fast (positive) or slow against the stamping clock.
    pub(crate) drift_ppm: f64,
}

/// One SubDevice's clock and the frame passing it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dc {
    drift_ppb: i64,
    /// The host stamp at power-on (set by the first frame).
    origin_ns: Option<u64>,
    /// When the current frame reaches port 0, and comes back through port 1, in host time.
    at_p0: u64,
    at_p1: u64,
}

impl Dc {
    pub(crate) fn new(spec: DcSpec) -> Dc {
        Dc {
            drift_ppb: (spec.drift_ppm * 1000.0).round() as i64,
            origin_ns: None,
            at_p0: 0,
            at_p1: 0,
        }
    }

    /// The local time at host time `t_ns`.
    pub(crate) fn local(&self, t_ns: u64) -> u64 {
        let origin = self.origin_ns.unwrap_or(t_ns);
        let dt = i128::from(t_ns) - i128::from(origin);
        let t = dt + dt * i128::from(self.drift_ppb) / 1_000_000_000 + i128::from(POWER_ON_NS);
        t.max(0) as u64
    }

    /// A frame received at host time `rx_ns` reaches this SubDevice, at `pos` of a chain of `n`.
    pub(crate) fn frame(&mut self, rx_ns: u64, pos: usize, n: usize) {
        self.origin_ns.get_or_insert(rx_ns);
        self.at_p0 = rx_ns + pos as u64 * HOP_NS;
        // Out to the last SubDevice and back to this one's port 1; the last one closes its port 1.
        self.at_p1 = if pos + 1 < n {
            rx_ns + (2 * (n - 1) - pos) as u64 * HOP_NS
        } else {
            0
        };
    }

    /// The system time as the frame passes: the local time plus the offset the MainDevice wrote.
    pub(crate) fn system_time(&self, offset: u64) -> u64 {
        self.local(self.at_p0).wrapping_add(offset)
    }

    /// The receive times a write to 0x0900 latches: port 0, port 1 (32 bits each), processing unit (64 bits).
    pub(crate) fn latch(&self) -> (u32, u32, u64) {
        let p0 = self.local(self.at_p0);
        let p1 = if self.at_p1 == 0 {
            0
        } else {
            self.local(self.at_p1)
        };
        (p0 as u32, p1 as u32, p0)
    }
}
