//! When the frames reached the first SubDevice, by its distributed clock (NIC mode, EtherCAT): whether it was
//! measured and why not, and what the clock said besides the "Arrival" series.

use serde::{Deserialize, Serialize};

use super::DistSummary;
use super::confidence::TailRate;

/// What the run's arrival datagrams gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArrivalReport {
    /// The "Arrival" series (the interval between consecutive frames' receive times at the first SubDevice,
    /// in its clock) is among the run's series.
    pub(crate) measured: bool,
    /// Why not, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) why_not: Option<String>,
    /// Bytes the arrival datagrams add to each frame (0 when left out).
    pub(crate) frame_bytes_added: u32,
    /// Frames whose receive time was read (the latch of frame k comes with the reply to k+1).
    pub(crate) latches: u64,
    /// Replies whose read of 0x0918 had WKC 0 (no SubDevice with DC answered), that read 0 (never latched), and
    /// whose write to 0x0900 had WKC 0.
    pub(crate) unanswered: u64,
    pub(crate) zero: u64,
    pub(crate) unlatched: u64,
    /// The first SubDevice's clock against this machine's CLOCK_MONOTONIC over the run, in ppm (positive: it runs
    /// fast): the slope of the least-squares line through (scheduled send time, receive time) − 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) drift_ppm: Option<f64>,
    /// The SYNC0 margin the arrivals support (when measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sync0: Option<Sync0Report>,
}

/// The counts the receiver kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ArrivalCounts {
    pub(crate) latches: u64,
    pub(crate) unanswered: u64,
    pub(crate) zero: u64,
    pub(crate) unlatched: u64,
    /// Arrival intervals recorded.
    pub(crate) intervals: u64,
}

impl ArrivalReport {
    /// Not measured, for `why` (a run without the arrival datagrams).
    pub(crate) fn off(why: &str) -> ArrivalReport {
        ArrivalReport {
            measured: false,
            why_not: Some(why.to_string()),
            frame_bytes_added: 0,
            latches: 0,
            unanswered: 0,
            zero: 0,
            unlatched: 0,
            drift_ppm: None,
            sync0: None,
        }
    }

    /// What the arrival datagrams of `bytes` gave: measured when at least one interval was recorded, else why not.
    pub(crate) fn of(c: ArrivalCounts, bytes: u32, drift_ppm: Option<f64>) -> ArrivalReport {
        let why_not = if c.intervals > 0 {
            None
        } else if c.latches == 0 && c.unanswered > 0 && c.zero == 0 {
            Some(
                "not measured: the first SubDevice did not answer the read of its receive time (0x0918, WKC 0): \
                 it has no distributed clock"
                    .to_string(),
            )
        } else if c.latches == 0 && c.zero > 0 {
            Some(
                "not measured: the first SubDevice's receive time (0x0918) read 0 in every frame: it has no \
                 distributed clock, or its write to 0x0900 latches nothing"
                    .to_string(),
            )
        } else {
            Some(format!(
                "not measured: {} receive time(s) read, but no two of consecutive frames (replies lost, or the \
                 run too short)",
                c.latches
            ))
        };
        ArrivalReport {
            measured: why_not.is_none(),
            why_not,
            frame_bytes_added: bytes,
            latches: c.latches,
            unanswered: c.unanswered,
            zero: c.zero,
            unlatched: c.unlatched,
            drift_ppm: drift_ppm.filter(|_| c.intervals > 0),
            sync0: None,
        }
    }

    /// The lines the final table shows under the round trips.
    pub(crate) fn line(&self) -> String {
        let sync0 = self
            .sync0
            .as_ref()
            .map(|s| format!("\n{}", s.line()))
            .unwrap_or_default();
        self.arrival_line() + &sync0
    }

    fn arrival_line(&self) -> String {
        match (&self.why_not, self.drift_ppm) {
            (Some(w), _) => format!("Arrival at the first SubDevice: {w}"),
            (None, d) => format!(
                "Arrival at the first SubDevice (its distributed clock): {} receive times read (frames {} bytes \
                 longer){}",
                self.latches,
                self.frame_bytes_added,
                d.map(|p| format!("; its clock runs {p:+.2} ppm against CLOCK_MONOTONIC"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// The SYNC0 margin that the arrivals support (docs/how-it-measures.md, "SYNC0 margin"): when each frame reached
/// the first SubDevice after its cycle's start (its scheduled send), with the drift between the two clocks removed.
/// Assumes SYNC0 aligned to the period and in step with the cycle's start, as a DC master configures it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sync0Report {
    /// Frames judged; the first ones, while the clocks' line settled (8 blocks of 128), are not.
    pub(crate) frames: u64,
    pub(crate) settling: u64,
    /// Arrival after the cycle's start, µs: per frame an upper bound (anchored by the earliest reply, so too
    /// late by at most that reply's way back), no HDR histogram.
    pub(crate) after_start: DistSummary,
    /// The smallest SYNC0 shift that left no frame of this run late: the latest arrival, rounded up to 1 µs.
    pub(crate) smallest_shift_us: f64,
    /// With --sync0-shift: the shift judged, the smallest margin (shift − latest arrival; negative when frames
    /// came after SYNC0), how many came after it, and their rate with its 95 % bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shift_us: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_margin_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) late: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) late_rate: Option<TailRate>,
}

impl Sync0Report {
    /// The lines the final table shows under the arrival line.
    pub(crate) fn line(&self) -> String {
        let a = &self.after_start;
        let mut s = format!(
            "SYNC0: frames reached the first SubDevice at most {:.1} us after their cycle's start (p50 {:.1}, \
             p99.9 {:.1}; {} frames, drift removed); a shift of {} us leaves none of them late",
            a.max_us, a.p50_us, a.p999_us, self.frames, self.smallest_shift_us
        );
        if let (Some(shift), Some(m), Some(late), Some(r)) = (
            self.shift_us,
            self.min_margin_us,
            self.late,
            &self.late_rate,
        ) {
            let when = if late == 0 {
                "none late".to_string()
            } else {
                format!("{late} late")
            };
            s.push_str(&format!(
                "\nSYNC0 shift {shift} us: smallest margin {m:.1} us, {when} in {:.0} s; fewer than {:.3} late \
                 per hour at 95 %",
                r.exposure_s, r.per_hour_at_most
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_why_arrival_was_not_measured() {
        let c = ArrivalCounts {
            unanswered: 50,
            ..ArrivalCounts::default()
        };
        let r = ArrivalReport::of(c, 36, Some(3.0));
        assert!(!r.measured);
        assert!(r.why_not.as_deref().unwrap().contains("WKC 0"), "{r:?}");
        assert_eq!(r.drift_ppm, None, "no drift without intervals");
        let c = ArrivalCounts {
            zero: 50,
            ..ArrivalCounts::default()
        };
        assert!(
            ArrivalReport::of(c, 36, None)
                .line()
                .contains("read 0 in every frame")
        );
        let c = ArrivalCounts {
            latches: 3,
            intervals: 2,
            ..ArrivalCounts::default()
        };
        let r = ArrivalReport::of(c, 36, Some(-12.5));
        assert!(r.measured && r.why_not.is_none());
        assert!(r.line().contains("-12.50 ppm"), "{}", r.line());
        assert!(
            ArrivalReport::off("off (--no-arrival)")
                .line()
                .ends_with("(--no-arrival)")
        );
    }
}
