//! What a run proved about its rare tail, as people read it: per series and band boundary, the cycles beyond it,
//! their rate with its exact 95 % interval, the bound "fewer than one per …", and how long a run with none must
//! last to claim fewer than one per hour or per day (the numbers: measure/result/confidence.rs).

use crate::measure::result::confidence::{HOUR_S, TailRate};
use crate::measure::result::{Claim, RunResult};
use crate::report::table::{Cell, render, us};

/// The assumption every rate rests on, said once under the table.
pub(crate) const ASSUMPTION: &str = "95 % confidence, exact Poisson interval (none seen: the rule of three, \
     −ln 0.05 ≈ 3 over the run); it assumes such cycles come independently at a steady rate, so a run proves \
     only what its own conditions (load, temperature, activity) produced.";

/// A span of time as people say it: "45 s", "3.3 min", "2.9 h", "3.0 days".
pub(crate) fn span(secs: f64) -> String {
    if !secs.is_finite() {
        "ever".into()
    } else if secs < 1.0 {
        format!("{:.0} ms", secs * 1000.0)
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < HOUR_S {
        format!("{:.1} min", secs / 60.0)
    } else if secs < 2.0 * 86_400.0 {
        format!("{:.1} h", secs / HOUR_S)
    } else {
        format!("{:.1} days", secs / 86_400.0)
    }
}

/// A rate given per hour: "12.5/h" when one or more, "1 per 3.3 min" below; "0" for none.
pub(crate) fn rate(per_hour: f64) -> String {
    if per_hour <= 0.0 {
        "0".into()
    } else if per_hour >= 1.0 {
        let digits = if per_hour >= 100.0 {
            0
        } else if per_hour >= 10.0 {
            1
        } else {
            2
        };
        let t = format!("{per_hour:.digits$}");
        let t = if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.')
        } else {
            &t
        };
        format!("{t}/h")
    } else {
        format!("1 per {}", span(HOUR_S / per_hour))
    }
}

/// "3.0 h (2.8 h more)" — the run a claim needs, and what is left of it; "met" once the run is that long.
fn needs(total_s: f64, t: &TailRate) -> String {
    let more = total_s - t.exposure_s;
    if more <= 0.0 {
        "met".into()
    } else {
        format!("{} ({} more)", span(total_s), span(more))
    }
}

/// The table's form: the whole run a claim needs with no further such cycle, or "met".
fn needs_total(total_s: f64, t: &TailRate) -> String {
    if total_s <= t.exposure_s {
        "met".into()
    } else {
        span(total_s)
    }
}

/// One sentence: what the run proved about cycles at or beyond the Great boundary of series `label`.
pub(crate) fn sentence(label: &str, t: &TailRate) -> String {
    let over = format!("{}us", us(t.beyond_us));
    if t.cycles == 0 {
        format!(
            "{label}: no cycle ≥ {over} in {}: fewer than one per {} with 95 % confidence; \"fewer than one per \
             hour\" needs {} with none, \"per day\" {}.",
            span(t.exposure_s),
            span(HOUR_S / t.per_hour_at_most),
            needs(t.hour_claim_needs_s, t),
            needs(t.day_claim_needs_s, t),
        )
    } else {
        format!(
            "{label}: {} cycle(s) ≥ {over} in {}: {} (95 %: {} – {}); fewer than {} with 95 % confidence.",
            t.cycles,
            span(t.exposure_s),
            rate(t.per_hour),
            rate(t.per_hour_low),
            rate(t.per_hour_high),
            rate(t.per_hour_at_most),
        )
    }
}

/// The tail table's columns, most wanted first: where the whole table would not fit the terminal, the last
/// optional ones go (the interval, then the per-day need, then the bound), never the series, count, rate or the
/// per-hour need.
const TAIL_HEAD: [&str; 7] = [
    "Tail",
    "Cycles",
    "Rate",
    "< 1/h needs",
    "Fewer than (95 %)",
    "< 1/day needs",
    "95 % interval",
];
const TAIL_KEPT: usize = 4;

/// The final report's tail table for a terminal of `columns`: a row per series and boundary, then the Great
/// boundary's sentences and the assumption.
pub(crate) fn render_tail(r: &RunResult, columns: usize) -> String {
    let mut body: Vec<[String; 7]> = Vec::new();
    let mut lines = String::new();
    let width = columns.min(crate::output::DEFAULT_WIDTH);
    for s in &r.series {
        let rates = r.tail_rates(s);
        for t in &rates {
            body.push([
                format!("{} ≥ {}us", s.label, us(t.beyond_us)),
                t.cycles.to_string(),
                rate(t.per_hour),
                needs_total(t.hour_claim_needs_s, t),
                rate(t.per_hour_at_most),
                needs_total(t.day_claim_needs_s, t),
                format!("{} – {}", rate(t.per_hour_low), rate(t.per_hour_high)),
            ]);
        }
        if let Some(t) = rates.first()
            && s.count > 0
        {
            lines.push_str(&crate::report::check::wrap(
                &sentence(&s.label, t),
                width,
                "",
                "  ",
            ));
        }
    }
    let mut out = (TAIL_KEPT..=TAIL_HEAD.len())
        .rev()
        .map(|n| tail_table(&body, n))
        .find(|t| t.lines().all(|l| l.chars().count() <= columns))
        .unwrap_or_else(|| tail_table(&body, TAIL_KEPT));
    out.push_str(&lines);
    out.push_str(&crate::report::check::wrap(ASSUMPTION, width, "", "  "));
    out
}

/// The tail table with its first `n` columns.
fn tail_table(body: &[[String; 7]], n: usize) -> String {
    let head: Vec<Cell> = TAIL_HEAD[..n].iter().map(|h| Cell::from(*h)).collect();
    let mut rows = vec![Some(head), None];
    rows.extend(
        body.iter()
            .map(|b| Some(b[..n].iter().map(|c| Cell::from(c.as_str())).collect())),
    );
    render(&rows, false)
}

/// The `--until-confident` outcome: proved, or broken by a cycle outside the Great band (when and in which
/// series), or not reached (stopped before).
pub(crate) fn claim_line(r: &RunResult, c: &Claim) -> String {
    let what = format!("fewer than {} outside the Great band", rate(c.per_hour));
    let late = r.series.iter().find(|s| s.buckets.not_great() > 0);
    let text = match (c.held, late) {
        (true, _) => format!("Until confident: proved — {what}, with 95 % confidence."),
        (false, Some(s)) => format!(
            "Until confident: not proved — {what} was broken by a {} cycle outside Great after {} of \
             measurement (the run stops there).",
            s.label,
            span(s.count as f64 * r.period_of(s) / 1e6)
        ),
        (false, None) => {
            format!("Until confident: not proved — {what}: the run ended before it could.")
        }
    };
    crate::report::check::wrap(&text, crate::output::DEFAULT_WIDTH, "", "  ")
}

/// The live view's line for one series: the Great boundary's bound so far.
pub(crate) fn live_line(label: &str, t: &TailRate) -> String {
    if t.cycles == 0 {
        format!(
            "{label}: none ≥ {}us in {}: < 1 per {} (95 %); \"< 1/hour\" {}",
            us(t.beyond_us),
            span(t.exposure_s),
            span(HOUR_S / t.per_hour_at_most),
            needs(t.hour_claim_needs_s, t)
        )
    } else {
        format!(
            "{label}: {} ≥ {}us in {}: {} (95 %: {} – {})",
            t.cycles,
            us(t.beyond_us),
            span(t.exposure_s),
            rate(t.per_hour),
            rate(t.per_hour_low),
            rate(t.per_hour_high)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::result::{Buckets, RunResult};

    fn result(great: u64, good: u64) -> RunResult {
        let mut s = crate::measure::cyclic::series::Series::new("Cyclic", 1000, None).summary();
        s.count = great + good;
        s.buckets = Buckets {
            great,
            good,
            ..Buckets::default()
        };
        RunResult::for_test(vec![s])
    }

    #[test]
    fn ten_minutes_clean_is_fewer_than_one_per_3_3_minutes() {
        let r = result(600_000, 0);
        let t = &r.tail_rates(&r.series[0])[0];
        assert_eq!(
            sentence("Cyclic", t),
            "Cyclic: no cycle ≥ 125us in 10.0 min: fewer than one per 3.3 min with 95 % confidence; \
             \"fewer than one per hour\" needs 3.0 h (2.8 h more) with none, \"per day\" 3.0 days (3.0 days \
             more)."
        );
        let out = render_tail(&r, 200);
        assert!(out.contains("| Cyclic ≥ 1000us |"), "{out}");
        assert!(out.contains("95 % interval"), "{out}");
        assert!(out.contains("exact Poisson"), "{out}");
    }

    #[test]
    fn a_narrow_terminal_drops_the_optional_columns_not_the_rows() {
        let r = result(7_000, 71);
        for cols in [60, 80, 100] {
            let out = render_tail(&r, cols);
            let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
            assert!(widest <= cols.max(62), "{cols}: {widest}\n{out}");
            assert!(
                out.contains("| Cyclic ≥ 1000us |") && out.contains("< 1/h needs"),
                "{out}"
            );
        }
        assert!(!render_tail(&r, 80).contains("95 % interval"));
        assert!(render_tail(&r, 132).contains("95 % interval"));
    }

    #[test]
    fn seen_cycles_give_a_rate_with_its_interval() {
        // 3 of 3.6 M cycles (1 h): 3/h, exact 95 % interval 0.619 – 8.767.
        let r = result(3_599_997, 3);
        let t = &r.tail_rates(&r.series[0])[0];
        assert_eq!(
            sentence("Cyclic", t),
            "Cyclic: 3 cycle(s) ≥ 125us in 1.0 h: 3/h (95 %: 1 per 1.6 h – 8.77/h); fewer than 7.75/h with \
             95 % confidence."
        );
        assert_eq!(span(200.0), "3.3 min");
        assert_eq!(rate(0.0), "0");
        assert_eq!(rate(1_800_000.0), "1800000/h");
        assert_eq!(span(0.002), "2 ms");
    }
}
