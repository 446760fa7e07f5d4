//! The final report of a run: the original's band table (Label, Count, five bands, Max dev — the original's "Max
//! Latency" — and when it came),
//! then the percentiles of the period deviation and of the wakeup latency, the duration, one line per series
//! naming its worst period, and the round-trip section in NIC mode (run_rtt.rs).

use super::run_rtt::render_rtt;
use crate::measure::cyclic::series::Bands;
use crate::measure::result::{RunResult, SeriesSummary, Verdict};
use crate::report::table::{Cell, Paint, duration, fit, painted, render, us};

/// The final report for a terminal of `columns`: the band and tail tables take their narrower forms where the
/// wide ones would wrap (a table is sized, never word-wrapped), and every other line wider than the terminal is
/// word-wrapped to it.
pub(crate) fn render_final_in(r: &RunResult, color: bool, columns: usize) -> String {
    let mut s = String::new();
    s.push_str(&target_line(r));
    if let Some(h) = &r.hwlat {
        s.push_str(&super::hwlat::render(r, h, color, columns));
        return s;
    }
    // Measured without colour: escapes take no columns.
    // One band table per band width: threads of different periods have their own bands.
    let mut widths: Vec<f64> = Vec::new();
    for w in r.series.iter().map(|x| r.width_of(x)) {
        if !widths.contains(&w) {
            widths.push(w);
        }
    }
    if widths.is_empty() {
        widths.push(band_width(r));
    }
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let fits = band_table(r, *w, false, true)
            .lines()
            .all(|l| l.chars().count() <= columns);
        s.push_str(&band_table(r, *w, color, fits));
    }
    s.push('\n');
    s.push_str(&percentile_table(r, color));
    let mut prose = format!("Duration: {}{}\n", duration(r.duration_s), since_reset(r));
    prose.push_str(&cycles_line(r));
    for x in &r.series {
        prose.push_str(&worst_line(r, x));
    }
    prose.push('\n');
    s.push_str(&fit(&prose, columns));
    s.push_str(&super::tail::render_tail(r, columns));
    s.push_str(&fit(&super::linuxcnc::render_linuxcnc(r), columns));
    let mut prose = String::new();
    if let Some(c) = &r.claim {
        prose.push_str(&super::tail::claim_line(r, c));
    }
    if let Some(rtt) = &r.rtt {
        prose.push('\n');
        prose.push_str(&render_rtt(rtt));
    }
    prose.push_str(&super::whylate::render(r));
    prose.push_str(&verdict_line(r, color));
    s.push_str(&fit(&prose, columns));
    s
}

/// After a reset: the span the duration, the table and the counters cover.
fn since_reset(r: &RunResult) -> String {
    match &r.reset_at {
        Some(at) if r.resets > 0 => format!(
            " (since the statistics were reset at {at}: the table, the windows and the SMIs cover the same span)"
        ),
        _ => String::new(),
    }
}

/// `-i N`: the cycles asked for are periods spanned, the counted and the missed ones together.
fn cycles_line(r: &RunResult) -> String {
    let Some(n) = r.iterations else {
        return String::new();
    };
    let spans: Vec<String> = r
        .series
        .iter()
        .map(|x| format!("{} {} counted + {} missed", x.label, x.count, x.missed))
        .collect();
    format!(
        "Cycles: {n} asked for (-i), each a period the run spans, counted or missed: {}\n",
        spans.join("; ")
    )
}

/// The period a run aimed at, or with several threads each one's (and the profile they came from).
fn target_line(r: &RunResult) -> String {
    let threads: Vec<String> = r
        .series
        .iter()
        .filter(|x| x.thread.is_some())
        .map(|x| format!("{} every {} us", x.label, us(r.period_of(x))))
        .collect();
    if threads.is_empty() {
        return format!("Target period: {} us\n", r.period_us);
    }
    let from = r
        .profile
        .as_ref()
        .map(|p| format!(" (--profile {p})"))
        .unwrap_or_default();
    format!("Threads{from}: {}\n", threads.join(", "))
}

fn band_width(r: &RunResult) -> f64 {
    if r.bucket_width_us > 0.0 {
        r.bucket_width_us
    } else {
        f64::from(r.period_us) / 8.0
    }
}

/// The band headers for width W: "< W us", "< 2W us", … ">= 8W us".
pub(crate) fn band_headers(w: f64) -> [String; 5] {
    [
        format!("< {}us", us(w)),
        format!("< {}us", us(2.0 * w)),
        format!("< {}us", us(4.0 * w)),
        format!("< {}us", us(8.0 * w)),
        format!(">= {}us", us(8.0 * w)),
    ]
}

/// The original's band table; "Max dev" is its "Max Latency" (the largest period deviation), "at" when in the run
/// it came. `wide`: a column per band; otherwise the bands beyond Great summed (80 columns).
fn band_table(r: &RunResult, width: f64, color: bool, wide: bool) -> String {
    let heads = band_headers(width);
    let mut top: Vec<Cell> = vec!["".into(), "".into()];
    let mut second: Vec<Cell> = vec!["Label".into(), "Count".into()];
    if wide {
        top.extend(Bands::NAMES.iter().map(|n| Cell::from(*n)));
        second.extend(heads.iter().map(|h| Cell::from(h.as_str())));
    } else {
        top.extend(["Great".into(), "Not".into()]);
        second.extend([Cell::from(heads[0].as_str()), "Great".into()]);
    }
    top.extend(["Max dev".into(), "".into(), "Missed".into()]);
    second.extend(["us".into(), "at".into(), "periods".into()]);
    let mut rows = vec![Some(top), Some(second), None];
    for x in r.series.iter().filter(|x| r.width_of(x) == width) {
        let mut row: Vec<Cell> = vec![label(r, x).into(), x.count.to_string().into()];
        let b = x.buckets.as_array();
        if wide {
            for (i, n) in b.into_iter().enumerate() {
                row.push(painted(n.to_string(), Paint::band(i, n)));
            }
        } else {
            let not: u64 = b[1..].iter().sum();
            row.push(painted(b[0].to_string(), Paint::band(0, b[0])));
            row.push(painted(not.to_string(), Paint::band(4, not)));
        }
        row.push(us(x.max_us).into());
        row.push(if x.count == 0 {
            "-".into()
        } else {
            super::live::at(x.max_index, r.period_of(x) as u32).into()
        });
        row.push(x.missed.to_string().into());
        rows.push(Some(row));
    }
    render(&rows, color)
}

fn percentile_table(r: &RunResult, color: bool) -> String {
    let head: Vec<Cell> = ["Percentiles (us)", "p50", "p99", "p99.9", "p99.99", "max"]
        .into_iter()
        .map(Cell::from)
        .collect();
    let mut rows = vec![Some(head), None];
    for x in &r.series {
        rows.push(Some(vec![
            format!("{} deviation", x.label).into(),
            us(x.p50_us).into(),
            us(x.p99_us).into(),
            us(x.p999_us).into(),
            us(x.p9999_us).into(),
            us(x.max_us).into(),
        ]));
        if let Some(w) = &x.wakeup {
            rows.push(Some(vec![
                format!("{} wakeup latency", x.label).into(),
                us(w.p50_us).into(),
                us(w.p99_us).into(),
                us(w.p999_us).into(),
                us(w.p9999_us).into(),
                us(w.max_us).into(),
            ]));
        }
    }
    render(&rows, color)
}

/// "Cyclic max period: 1001us (max dev 1us) at cycle 161, 0.162s into the run, which is Great." — or, when the
/// worst period came early, says so.
fn worst_line(r: &RunResult, x: &SeriesSummary) -> String {
    if x.count == 0 {
        return format!("{}: no period recorded.\n", x.label);
    }
    let band = Bands::NAMES[band_of(r.width_of(x), x.max_us)];
    let early = -x.min_us >= x.max_us && x.min_us < 0.0;
    let period = if early {
        r.period_of(x) - x.max_us
    } else {
        r.period_of(x) + x.max_us
    };
    let what = if early { "shortest" } else { "max" };
    let mut line = format!(
        "{} {what} period: {}us (max dev {}us) at cycle {}, {} into the run, which is {band}.",
        x.label,
        us(period),
        us(x.max_us),
        x.max_index,
        super::live::at(x.max_index, r.period_of(x) as u32)
    );
    if x.early > 0 {
        line.push_str(&format!(" {} period(s) outside Great came early.", x.early));
    }
    crate::report::check::wrap(&line, crate::output::DEFAULT_WIDTH, "", "  ")
}

/// A series' label in the band table; a thread of `run --thread` adds its period and priority.
fn label(r: &RunResult, x: &SeriesSummary) -> String {
    match &x.thread {
        Some(t) if r.series.len() > 1 => format!(
            "{} ({}us, FIFO {}, CPU {})",
            x.label, t.period_us, t.priority, t.cpu
        ),
        _ => x.label.clone(),
    }
}

fn band_of(w: f64, dev_us: f64) -> usize {
    [1.0, 2.0, 4.0, 8.0]
        .iter()
        .position(|k| dev_us < k * w)
        .unwrap_or(4)
}

fn verdict_line(r: &RunResult, color: bool) -> String {
    let not_great: u64 = r.series.iter().map(|x| x.buckets.not_great()).sum();
    let (text, paint) = match r.verdict {
        Verdict::Pass => ("Verdict: pass — every period within the Great band.".to_string(), Paint::Green),
        Verdict::Fail => (
            format!(
                "Verdict: fail — {not_great} period(s) outside the Great band{}.",
                match &r.rtt {
                    Some(t) => t
                        .checks
                        .shortfalls(t)
                        .iter()
                        .map(|x| format!(", {x}"))
                        .collect(),
                    None => String::new(),
                }
            ),
            Paint::Red,
        ),
        Verdict::Inconclusive => (inconclusive(r), Paint::Yellow),
        Verdict::Incomplete => (
            "Verdict: incomplete — the run could not finish; the figures above are what was measured."
                .to_string(),
            Paint::Red,
        ),
    };
    painted_verdict(&text, paint, r, color)
}

/// A verdict line wrapped to 80 columns and painted, saying what stopped the run when something did (run's and
/// hwlat's): q, Ctrl+C or SIGTERM.
pub(super) fn painted_verdict(text: &str, paint: Paint, r: &RunResult, color: bool) -> String {
    let text = crate::report::check::wrap(text, crate::output::DEFAULT_WIDTH, "", "  ");
    let mut s = paint.apply(text.trim_end(), color);
    if r.interrupted {
        let words = r.stopped_by.map_or(
            "stopped by a signal",
            crate::measure::result::StoppedBy::words,
        );
        s.push_str(&format!(" ({words})"));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests;

/// A clean run too short for a pass: what it spanned, how far short it is, and how long to run at its period.
fn inconclusive(r: &RunResult) -> String {
    use crate::measure::result::{MIN_PASS_CYCLES, MIN_PASS_SECONDS};
    let cycles = r.span_cycles();
    let mut short = Vec::new();
    if cycles < MIN_PASS_CYCLES {
        short.push(format!("{} cycles", MIN_PASS_CYCLES - cycles));
    }
    if r.duration_s < MIN_PASS_SECONDS {
        short.push(format!("{:.1} s", MIN_PASS_SECONDS - r.duration_s));
    }
    let need = r.seconds_to_pass();
    format!(
        "Verdict: inconclusive — {cycles} cycles in {:.1} s, nothing outside the Great band, but a pass needs at \
         least {MIN_PASS_SECONDS} s and {MIN_PASS_CYCLES} cycles: {} short; at {} us a period, run at least {need} s \
         (`--duration {need}`). To trust a pass, run for 10 minutes or more (`--duration 10m`; hours for \
         commissioning) while the machine carries its real load, or a stress load on the other CPUs (e.g. \
         `stress-ng --cpu N`).",
        r.duration_s,
        short.join(" and "),
        r.period_us,
    )
}
