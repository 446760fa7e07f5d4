//! The round trips as the result reports them: an interval's (or the run's) distribution and counts, judged
//! against the run's settings — lost frames, late replies, working counters, which timestamps measured.

use super::RttStats;
use crate::measure::result::{EscId, ReplyChecks, RttSummary, StampCounts, Timestamps};

/// What a summary needs besides the counts: the frames sent since the last reset, and the run's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    pub(crate) sent: u64,
    pub(crate) not_sent: u64,
    pub(crate) hardware: bool,
    pub(crate) budget_ns: u64,
    pub(crate) expect_wkc: Option<u16>,
    pub(crate) esc: Option<EscId>,
}

/// The result's round-trip summary of `st`.
pub(super) fn summarize(st: &RttStats, ctx: &Context) -> RttSummary {
    let d = st.dist.summary();
    let c = &st.counts;
    let wkc_seen = c.wkc_seen.iter().filter(|s| s.1 > 0).copied();
    RttSummary {
        count: d.count,
        // Only frames that went out can be lost; the ones the kernel refused are `not_sent`.
        lost: ctx
            .sent
            .saturating_sub(ctx.not_sent)
            .saturating_sub(c.matched),
        min_us: d.min_us,
        avg_us: d.avg_us,
        p50_us: d.p50_us,
        p99_us: d.p99_us,
        p999_us: d.p999_us,
        p9999_us: d.p9999_us,
        max_us: d.max_us,
        // What measured most round trips, not what was asked for.
        timestamps: if ctx.hardware && c.hw_pairs >= c.sw_pairs + c.send_time_pairs {
            Timestamps::Hardware
        } else {
            Timestamps::Software
        },
        late: c.late,
        unmatched: c.unmatched,
        duplicates: c.duplicates,
        // Replies nobody processed: errors like any other wrong WKC, kept apart for older readers.
        wkc_zero: c.wkc_seen.iter().find(|s| s.0 == 0).map_or(0, |s| s.1),
        // The value most replies carried (the chain's SubDevices); the whole distribution is `wkc_seen`.
        wkc: most_common(&c.wkc_seen).or(ctx.expect_wkc),
        hdr: d.hdr,
        stamps: Some(StampCounts {
            hardware_supported: ctx.hardware,
            hardware: c.hw_pairs,
            software: c.sw_pairs,
            send_time: c.send_time_pairs,
            why_software: None,
        }),
        queue: None,
        path: "af_packet".into(),
        xdp: None,
        arrival: None,
        checks: ReplyChecks {
            not_sent: ctx.not_sent,
            budget_us: ctx.budget_ns as f64 / 1000.0,
            expected_wkc: ctx.expect_wkc,
            preflight_wkc: Vec::new(),
            wkc_errors: c.wkc_errors,
            // Values beyond the kept slots are errors too (counted there); they are listed as 65535.
            wkc_seen: wkc_seen
                .chain((c.wkc_other > 0).then_some((u16::MAX, c.wkc_other)))
                .collect(),
            esc: ctx.esc,
            dropout: None,
        },
    }
}

/// The working counter most replies carried (the smaller on a tie); none when no reply had one.
fn most_common(seen: &[(u16, u64)]) -> Option<u16> {
    seen.iter()
        .filter(|s| s.1 > 0)
        .max_by_key(|&&(w, n)| (n, std::cmp::Reverse(w)))
        .map(|s| s.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_working_counter_reported_is_the_one_most_replies_carried() {
        assert_eq!(super::most_common(&[(1, 300), (2, 2701), (0, 0)]), Some(2));
        assert_eq!(super::most_common(&[(3, 5), (1, 5)]), Some(1));
        assert_eq!(super::most_common(&[(0, 0)]), None);
    }
}
