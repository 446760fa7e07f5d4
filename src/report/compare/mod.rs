//! Two results side by side: bands (as shares, since runs differ in length), deviation and wakeup percentiles,
//! missed periods, round trips, each with its change (the rows: compare_rows.rs); a one-line verdict from the key
//! metrics, or from the noise test where both have interval maxima; and the text table.

use serde::Serialize;

use super::compare_rows::{rtt_rows, series_rows, tail_rows};
use crate::measure::result::{RunResult, SeriesSummary};
use crate::report::noise::{self, Evidence};
use crate::report::table::{Cell, Paint, painted, render, us};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Trend {
    Better,
    Worse,
    Mixed,
    Unchanged,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    pub(crate) metric: String,
    pub(crate) unit: &'static str,
    pub(crate) before: f64,
    pub(crate) after: f64,
    pub(crate) change: f64,
    /// Counts towards the verdict.
    pub(crate) key: bool,
    /// better / worse / unchanged, for lower-is-better metrics judged with a 10 % (and 1 µs) margin.
    pub(crate) trend: Trend,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub(crate) before: String,
    pub(crate) after: String,
    pub(crate) rows: Vec<Row>,
    pub(crate) verdict: Trend,
    pub(crate) summary: String,
    /// How the verdict was reached.
    pub(crate) basis: String,
    /// The noise test per series, when both results have interval maxima.
    pub(crate) evidence: Vec<Evidence>,
    /// Why the two runs may not compare fairly (lengths, loads, periods differ): report/fairness.rs.
    pub(crate) unfair: Vec<String>,
}

pub fn compare(
    before: &RunResult,
    after: &RunResult,
    before_name: &str,
    after_name: &str,
) -> Comparison {
    let mut rows = Vec::new();
    // Matched by label through a map: linear however many series a (hostile) file holds.
    let after_by_label: std::collections::HashMap<&str, &SeriesSummary> =
        after.series.iter().map(|a| (a.label.as_str(), a)).collect();
    for b in &before.series {
        if let Some(a) = after_by_label.get(b.label.as_str()) {
            series_rows(&mut rows, b, a);
            tail_rows(&mut rows, (before, b), (after, a));
        }
    }
    if let (Some(b), Some(a)) = (&before.rtt, &after.rtt) {
        rtt_rows(&mut rows, b, a);
    }
    // With interval maxima on both sides the noise test decides for the series (see noise.rs); frames lost keep
    // the margin rule; results without them (older versions) are judged by the margin rule alone.
    let evidence: Vec<Evidence> = before
        .series
        .iter()
        .filter_map(|b| {
            after_by_label
                .get(b.label.as_str())
                .and_then(|a| noise::judge(b, a))
        })
        .collect();
    let tested = !evidence.is_empty();
    let key: Vec<&Row> = rows
        .iter()
        .filter(|r| r.key && (!tested || r.metric == "RTT lost"))
        .collect();
    let changes: Vec<Trend> = key
        .iter()
        .map(|r| r.trend)
        .chain(evidence.iter().map(|e| e.change))
        .collect();
    let better = changes.contains(&Trend::Better);
    let worse = changes.contains(&Trend::Worse);
    let verdict = match (better, worse) {
        (true, false) => Trend::Better,
        (false, true) => Trend::Worse,
        (true, true) => Trend::Mixed,
        (false, false) => Trend::Unchanged,
    };
    let shown = |e: &Evidence| {
        format!(
            "{} median max per {} s {} → {} us (p = {})",
            super::compare_input::shown_label(&e.series),
            e.interval_s,
            us(e.median_before_us),
            us(e.median_after_us),
            e.p_value
        )
    };
    let moved: Vec<String> = evidence
        .iter()
        .filter(|e| e.change != Trend::Unchanged)
        .map(shown)
        .chain(key.iter().filter(|r| r.trend != Trend::Unchanged).map(|r| {
            format!(
                "{} {} → {}{}",
                r.metric,
                us(r.before),
                us(r.after),
                unit_suffix(r.unit)
            )
        }))
        .take(3)
        .collect();
    let word = match verdict {
        Trend::Unchanged => "no clear change".to_string(),
        v => format!("{v:?}").to_lowercase(),
    };
    let summary = match (moved.is_empty(), evidence.first()) {
        (false, _) => format!("{word} — {}", moved.join(", ")),
        (true, Some(e)) => format!(
            "{word} — the difference is within what chance gives: {}",
            shown(e)
        ),
        (true, None) => format!("{word} — no key metric moved by more than 10 %"),
    };
    let unfair = super::fairness::warnings(before, after);
    let summary = if unfair.is_empty() {
        summary
    } else {
        format!("{summary} (not a fair comparison: see the warning above)")
    };
    Comparison {
        unfair,
        before: before_name.to_string(),
        after: after_name.to_string(),
        rows,
        verdict,
        summary,
        basis: if tested {
            format!(
                "interval maxima, Mann-Whitney U, p < {} and a median shift over 10 %",
                noise::ALPHA
            )
        } else {
            "10 % margin on the key metrics (no interval maxima in the results)".into()
        },
        evidence,
    }
}

fn paint_warn(s: &str, color: bool) -> String {
    Paint::Bold.apply(s, color)
}

fn unit_suffix(unit: &str) -> &str {
    match unit {
        "us" => " us",
        "%" => " %",
        "/h" => "/h",
        _ => "",
    }
}

pub fn render_text(c: &Comparison, color: bool) -> String {
    let head: Vec<Cell> = ["", "Before", "After", "Change"]
        .into_iter()
        .map(Cell::from)
        .collect();
    let mut rows = vec![Some(head), None];
    for r in &c.rows {
        let paint = match r.trend {
            Trend::Better => Paint::Green,
            Trend::Worse => Paint::Red,
            _ => Paint::None,
        };
        let sign = if r.change > 0.0 { "+" } else { "" };
        rows.push(Some(vec![
            format!(
                "{}{}",
                r.metric,
                if r.unit.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", r.unit)
                }
            )
            .into(),
            us(r.before).into(),
            us(r.after).into(),
            painted(format!("{sign}{}", us(r.change)), paint),
        ]));
    }
    let mut s = format!("Before: {}\nAfter:  {}\n", c.before, c.after);
    s.push_str(&render(&rows, color));
    let paint = match c.verdict {
        Trend::Better => Paint::Green,
        Trend::Worse => Paint::Red,
        _ => Paint::Bold,
    };
    s.push_str(&format!("Judged by {}.\n", c.basis));
    for w in &c.unfair {
        s.push_str(&paint_warn(&format!("Warning: {w}"), color));
        s.push('\n');
    }
    s.push_str(&paint.apply(&format!("Verdict: {}", c.summary), color));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests;
