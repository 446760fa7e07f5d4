//! The rows of a comparison: which metrics of two results are set side by side, and how each one's change is
//! judged (lower is better, a 10 % margin); which of them count towards the verdict (`key`).

use super::compare::{Row, Trend};
use crate::measure::result::{RttSummary, RunResult, SeriesSummary};

/// Better, worse or unchanged for a lower-is-better metric: a 10 % margin (and at least 1 µs).
fn trend(before: f64, after: f64, unit: &str) -> Trend {
    let margin = (before.abs() * 0.10).max(if unit == "us" { 1.0 } else { 0.0 });
    if after < before - margin {
        Trend::Better
    } else if after > before + margin {
        Trend::Worse
    } else {
        Trend::Unchanged
    }
}

fn row(metric: String, unit: &'static str, before: f64, after: f64, key: bool) -> Row {
    Row {
        metric,
        unit,
        before,
        after,
        change: ((after - before) * 1000.0).round() / 1000.0,
        key,
        trend: trend(before, after, unit),
    }
}

fn share(s: &SeriesSummary, n: u64) -> f64 {
    if s.count == 0 {
        0.0
    } else {
        (n as f64 * 100.0 / s.count as f64 * 1000.0).round() / 1000.0
    }
}

/// One series' rows: its periods, bands as shares, deviation and wakeup percentiles, missed periods.
pub(super) fn series_rows(rows: &mut Vec<Row>, b: &SeriesSummary, a: &SeriesSummary) {
    let l = &super::compare_input::shown_label(&b.label);
    rows.push(row(
        format!("{l} periods"),
        "",
        b.count as f64,
        a.count as f64,
        false,
    ));
    let names = ["Great", "Good", "Poor", "Bad", "Pathetic"];
    let (bb, ab) = (b.buckets.as_array(), a.buckets.as_array());
    for i in 0..5 {
        let mut r = row(
            format!("{l} {}", names[i]),
            "%",
            share(b, bb[i]),
            share(a, ab[i]),
            false,
        );
        if i == 0 {
            // More Great is better: judge the share outside Great instead.
            r.trend = trend(100.0 - r.before, 100.0 - r.after, "%");
        }
        rows.push(r);
    }
    rows.push(row(
        format!("{l} outside Great"),
        "%",
        share(b, b.buckets.not_great()),
        share(a, a.buckets.not_great()),
        true,
    ));
    rows.push(row(
        format!("{l} max deviation"),
        "us",
        b.max_us,
        a.max_us,
        true,
    ));
    for (name, vb, va) in [
        ("p50", b.p50_us, a.p50_us),
        ("p99", b.p99_us, a.p99_us),
        ("p99.9", b.p999_us, a.p999_us),
        ("p99.99", b.p9999_us, a.p9999_us),
    ] {
        rows.push(row(format!("{l} deviation {name}"), "us", vb, va, false));
    }
    if let (Some(wb), Some(wa)) = (&b.wakeup, &a.wakeup) {
        for (name, vb, va, key) in [
            ("p50", wb.p50_us, wa.p50_us, false),
            ("p99", wb.p99_us, wa.p99_us, false),
            ("p99.9", wb.p999_us, wa.p999_us, true),
            ("p99.99", wb.p9999_us, wa.p9999_us, false),
            ("max", wb.max_us, wa.max_us, false),
        ] {
            rows.push(row(format!("{l} wakeup {name}"), "us", vb, va, key));
        }
    }
    rows.push(row(
        format!("{l} missed periods"),
        "",
        b.missed as f64,
        a.missed as f64,
        false,
    ));
}

/// The tail rates of one series, the same as `run` reports them (measure/result/confidence.rs): per band boundary the
/// observed rate per hour and its 95 % upper bound. A rate moved only when the two exact 95 % intervals do not
/// overlap: a short clean run's bound is no evidence that a long run got worse. Not key: the verdict's metrics
/// already count the cycles outside Great.
pub(super) fn tail_rows(
    rows: &mut Vec<Row>,
    (rb, b): (&RunResult, &SeriesSummary),
    (ra, a): (&RunResult, &SeriesSummary),
) {
    let l = &super::compare_input::shown_label(&b.label);
    for (tb, ta) in rb.tail_rates(b).iter().zip(ra.tail_rates(a).iter()) {
        let over = crate::report::table::us(tb.beyond_us);
        let mut r = row(
            format!("{l} ≥ {over}us rate"),
            "/h",
            round3(tb.per_hour),
            round3(ta.per_hour),
            false,
        );
        r.trend = if ta.per_hour_high < tb.per_hour_low {
            Trend::Better
        } else if ta.per_hour_low > tb.per_hour_high {
            Trend::Worse
        } else {
            Trend::Unchanged
        };
        rows.push(r);
        let mut r = row(
            format!("{l} ≥ {over}us rate, 95 % at most"),
            "/h",
            round3(tb.per_hour_at_most),
            round3(ta.per_hour_at_most),
            false,
        );
        r.trend = Trend::Unchanged;
        rows.push(r);
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The round-trip rows (NIC mode, both results).
pub(super) fn rtt_rows(rows: &mut Vec<Row>, b: &RttSummary, a: &RttSummary) {
    let lost = |r: &RttSummary| {
        let sent = (r.count + r.lost).max(1) as f64;
        (r.lost as f64 * 100.0 / sent * 1000.0).round() / 1000.0
    };
    rows.push(row(
        "RTT count".into(),
        "",
        b.count as f64,
        a.count as f64,
        false,
    ));
    rows.push(row("RTT lost".into(), "%", lost(b), lost(a), true));
    rows.push(row("RTT min".into(), "us", b.min_us, a.min_us, false));
    rows.push(row("RTT avg".into(), "us", b.avg_us, a.avg_us, false));
    rows.push(row("RTT p50".into(), "us", b.p50_us, a.p50_us, false));
    rows.push(row("RTT p99".into(), "us", b.p99_us, a.p99_us, true));
    rows.push(row("RTT max".into(), "us", b.max_us, a.max_us, false));
}
