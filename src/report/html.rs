//! `rmp-eval report`: one self-contained HTML page (inline SVG and CSS, no script, a Content-Security-Policy that
//! forbids every fetch) with each result's identity and verdict and the plots of `plot.rs`, results overlaid.

use std::fmt::Write as _;

use super::plot::{self, Plot};
use crate::measure::result::{RunResult, Verdict};
use crate::parse::text::unprintable;

/// HTML-escapes text taken from result files, for text and quoted attributes alike; control characters are shown
/// escaped as the terminal shows them (`\u{1b}`), never raw.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if unprintable(c) => o.extend(c.escape_default()),
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The plots for these results (name, result): deviation histogram, max per interval, percentiles, RTT.
pub(crate) fn plots(results: &[(String, &RunResult)]) -> Result<Vec<Plot>, String> {
    let first = |r: &RunResult| r.series.first().cloned();
    let dev: Vec<(String, String, f64)> = results
        .iter()
        .filter_map(|(n, r)| first(r).map(|s| (format!("{n} {}", s.label), s.hdr, s.max_us)))
        .collect();
    let width = results
        .first()
        .map(|(_, r)| r.bucket_width_us)
        .filter(|w| *w > 0.0);
    let mut out = Vec::new();
    if !dev.is_empty() {
        out.push(plot::histogram(
            "histogram",
            "Period deviation: histogram (log count)",
            width,
            &dev,
        )?);
    }
    if let Some(p) = plot::max_per_interval(results)? {
        out.push(p);
    }
    if !dev.is_empty() {
        out.push(plot::percentiles(&dev)?);
    }
    let rtt: Vec<(String, String, f64)> = results
        .iter()
        .filter_map(|(n, r)| r.rtt.as_ref().map(|t| (n.clone(), t.hdr.clone(), t.max_us)))
        .collect();
    if !rtt.is_empty() {
        out.push(plot::histogram(
            "rtt",
            "Round trips: histogram (log count)",
            None,
            &rtt,
        )?);
    }
    Ok(out)
}

fn verdict(v: Verdict) -> (&'static str, &'static str) {
    match v {
        Verdict::Pass => ("pass", "PASS: every period within the Great band"),
        Verdict::Fail => (
            "fail",
            "FAIL: periods outside the Great band, or frames lost",
        ),
        Verdict::Inconclusive => (
            "inconclusive",
            "INCONCLUSIVE: too short to call it a pass (at least 10 s and 10 000 cycles)",
        ),
        Verdict::Incomplete => ("incomplete", "INCOMPLETE: the run could not finish"),
    }
}

fn identity(name: &str, r: &RunResult) -> String {
    let mut t = String::new();
    let (class, text) = verdict(r.verdict);
    let _ = write!(
        t,
        "<section class=\"result\"><h2>{}</h2><p class=\"verdict {class}\" data-verdict=\"{class}\">{text}</p><table>",
        esc(name)
    );
    let mut row = |k: &str, v: String| {
        let _ = write!(t, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    };
    if let Some(id) = &r.identity {
        row("Host", id.hostname.clone());
        if let Some(fw) = &id.firmware {
            row("Machine", fw.machine_line());
            row("BIOS", fw.bios_line());
        }
        row("CPU", format!("{} ({} CPUs)", id.cpu, id.cpus));
        row("Kernel command line", id.kernel_cmdline.clone());
        row("Command", id.command.clone());
        row(
            "Checks",
            match &id.checks {
                Some(c) if c.failed.is_empty() => format!("{} pass, {} unknown", c.pass, c.unknown),
                Some(c) => format!(
                    "{} pass, {} fail ({}), {} unknown",
                    c.pass,
                    c.fail,
                    c.failed.join(", "),
                    c.unknown
                ),
                None => "not run (--no-config)".into(),
            },
        );
    }
    row("Kernel", r.kernel.clone());
    row("Started", r.started.clone());
    row(
        "Measured",
        format!(
            "{} mode, {} us period, {:.1} s, core {}, SCHED_FIFO {}",
            r.mode.name(),
            r.period_us,
            r.duration_s,
            r.core.map_or("?".into(), |c| c.to_string()),
            r.priority.map_or("?".into(), |p| p.to_string())
        ),
    );
    for s in &r.series {
        row(
            &format!("{} max", s.label),
            format!(
                "{} us (p99.9 {} us) over {} periods; outside Great: {}",
                s.max_us,
                s.p999_us,
                s.count,
                s.buckets.not_great()
            ),
        );
        if let Some(g) = r.tail_rates(s).first()
            && s.count > 0
        {
            row(
                &format!("{} tail", s.label),
                format!(
                    "{} ({})",
                    super::tail::sentence(&s.label, g),
                    super::tail::ASSUMPTION
                ),
            );
        }
    }
    if let Some(x) = &r.rtt {
        row(
            "Round trips",
            format!(
                "{} measured, {} lost, max {} us, p99.9 {} us",
                x.count, x.lost, x.max_us, x.p999_us
            ),
        );
    }
    row(
        "Load",
        match &r.load {
            Some(l) => format!(
                "stress-ng {} on CPU {}",
                l.kinds
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(","),
                l.cpus
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            None => "none (an idle machine)".into(),
        },
    );
    if let Some(at) = &r.reset_at {
        row(
            "Statistics reset",
            format!("{} time(s), last at {at}", r.resets),
        );
    }
    if r.checkpoint {
        row("Note", "a checkpoint: the run did not end cleanly".into());
    }
    if let Some(e) = &r.error {
        row("Error", e.clone());
    }
    t.push_str("</table></section>\n");
    t
}

const STYLE: &str = "body{font-family:sans-serif;max-width:960px;margin:1em auto;color:#222}\
table{border-collapse:collapse;margin:.5em 0}th,td{text-align:left;padding:2px 8px;border-bottom:1px solid #ddd}\
.verdict{font-weight:bold;padding:4px 8px;display:inline-block}.pass{background:#d7f5dc}.fail{background:#f8d7d7}\
.incomplete{background:#f5ecd7}figure{margin:1em 0}";

/// The whole page.
pub(crate) fn page(results: &[(String, &RunResult)], plots: &[Plot]) -> String {
    let mut h = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    h.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    let _ = write!(
        h,
        "<title>rmp-eval report</title><style>{STYLE}</style></head><body>\n<h1>rmp-eval report</h1>\n"
    );
    for (n, r) in results {
        h.push_str(&identity(n, r));
    }
    for p in plots {
        let _ = write!(
            h,
            "<figure class=\"plot\" id=\"{}\" data-x-max=\"{}\" data-y-max=\"{}\" data-max-us=\"{}\" data-curves=\"{}\">\n{}\n<figcaption>{}</figcaption></figure>\n",
            p.id,
            p.x_max,
            p.y_max,
            p.max_us.map_or(String::new(), |m| m.to_string()),
            p.curves,
            p.svg,
            esc(&p.title)
        );
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_quotes_and_control_bytes_are_escaped() {
        assert_eq!(
            esc("<img src=x onerror='a'>\"&\x1b\x07"),
            "&lt;img src=x onerror=&#39;a&#39;&gt;&quot;&amp;\\u{1b}\\u{7}"
        );
    }
}
