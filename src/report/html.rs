//! `rmp-eval report`: one self-contained HTML page (inline SVG and CSS, no script, a Content-Security-Policy that
//! forbids every fetch) with each result's identity and verdict and the plots of `plot.rs`, results overlaid.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::plot::{self, Plot, PlotError};
use crate::measure::result::{
    MIN_PASS_CYCLES, MIN_PASS_SECONDS, RunResult, SeriesSummary, Verdict,
};
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

/// The name each result (file name, result) goes by in the legends and headings: its run label (run, before,
/// after; the file's name when it has none), with its start time where two share a label, and a number where they
/// share that too.
pub(crate) fn legend_names(results: &[(String, RunResult)]) -> Vec<String> {
    let label = |(file, r): &(String, RunResult)| {
        if r.label.is_empty() {
            file.clone()
        } else {
            crate::parse::text::sanitize(&r.label, 80)
        }
    };
    let labels: Vec<String> = results.iter().map(label).collect();
    let timed: Vec<String> = results
        .iter()
        .zip(&labels)
        .map(|((_, r), l)| match r.started.get(11..19) {
            Some(t) if labels.iter().filter(|x| *x == l).count() > 1 => format!("{l} {t}"),
            _ => l.clone(),
        })
        .collect();
    timed
        .iter()
        .enumerate()
        .map(|(i, n)| match timed.iter().filter(|x| *x == n).count() {
            1 => n.clone(),
            _ => format!("{n} #{}", i + 1),
        })
        .collect()
}

/// The series of one deviation histogram: a thread of `run --thread` results (matched by its label across them),
/// or, of results without threads, each one's first series. Members: (legend name, series, its band width W, the
/// seconds its run covered).
struct Group<'a> {
    thread: Option<&'a SeriesSummary>,
    members: Vec<(String, &'a SeriesSummary, f64, f64)>,
}

fn groups<'a>(results: &[(String, &'a RunResult)]) -> Vec<Group<'a>> {
    let mut gs: Vec<Group<'a>> = Vec::new();
    for (n, r) in results {
        let threads: Vec<&SeriesSummary> = r.series.iter().filter(|s| s.thread.is_some()).collect();
        let picked = if threads.is_empty() {
            r.series.first().into_iter().collect()
        } else {
            threads
        };
        for s in picked {
            let member = (format!("{n} {}", s.label), s, r.width_of(s), r.duration_s);
            let key = s.thread.map(|_| s.label.as_str());
            match gs
                .iter_mut()
                .find(|g| g.thread.map(|t| t.label.as_str()) == key)
            {
                Some(g) => g.members.push(member),
                None => gs.push(Group {
                    thread: s.thread.map(|_| s),
                    members: vec![member],
                }),
            }
        }
    }
    gs
}

/// The plots for these results (name, result): a deviation histogram per thread (or one), the max per interval,
/// the percentiles (every thread's overlaid), the round-trip histogram.
pub(crate) fn plots(results: &[(String, &RunResult)]) -> Result<Vec<Plot>, PlotError> {
    let gs = groups(results);
    let mut out = Vec::new();
    for (i, g) in gs.iter().enumerate() {
        let id = if i == 0 {
            "histogram".to_string()
        } else {
            format!("histogram-{}", i + 1)
        };
        let title = match g.thread.and_then(|s| s.thread.map(|t| (s, t))) {
            Some((s, t)) => format!(
                "Thread {} ({} µs, SCHED_FIFO {}): period deviation (log count)",
                s.label, t.period_us, t.priority
            ),
            None => "Period deviation: histogram (log count)".to_string(),
        };
        let curves: Vec<(String, String, f64)> = g
            .members
            .iter()
            .map(|(n, s, _, _)| (n.clone(), s.hdr.clone(), s.max_us))
            .collect();
        let width = Some(g.members[0].2).filter(|w| *w > 0.0);
        out.push(plot::histogram(id, &title, width, &curves)?);
    }
    let all: Vec<_> = gs.iter().flat_map(|g| g.members.iter()).collect();
    let intervals: Vec<plot::Intervals> = all
        .iter()
        .filter_map(|(n, s, w, d)| {
            Some(plot::Intervals {
                name: n.clone(),
                maxima: s.max_per_interval.as_ref()?,
                width_us: *w,
                duration_s: *d,
            })
        })
        .collect();
    if let Some(p) = plot::max_per_interval(&intervals)? {
        out.push(p);
    }
    if !all.is_empty() {
        let dev: Vec<(String, String, f64)> = all
            .iter()
            .map(|(n, s, _, _)| (n.clone(), s.hdr.clone(), s.max_us))
            .collect();
        out.push(plot::percentiles(&dev, "deviation from the period")?);
    }
    let rtt: Vec<(String, String, f64)> = results
        .iter()
        .filter_map(|(n, r)| r.rtt.as_ref().map(|t| (n.clone(), t.hdr.clone(), t.max_us)))
        .collect();
    if !rtt.is_empty() {
        out.push(plot::histogram(
            "rtt".into(),
            "Round trips: histogram (log count)",
            None,
            &rtt,
        )?);
    }
    Ok(out)
}

/// What a plot shows and how to read it, under it (its title is in the SVG).
fn guide(p: &Plot) -> String {
    match (p.id.as_str(), p.band_width_us) {
        ("max-per-interval", _) => {
            "The largest deviation of each interval of the run (log scale): when the late cycles came, one stall \
            or many. An interval the run ended inside, shorter than the others, is a circle at the run's end."
                .into()
        }
        ("percentiles", _) => "The deviation that 50 %, 90 %, 99 % … 99.999 % of the cycles stayed within: the \
            tail the histogram's counts hide (HdrHistogram's plot)."
            .into(),
        (_, Some(w)) => format!(
            "How many cycles (log scale) deviated from the period by how much (log scale, so that every band \
            stays readable beside the max). Shaded: the bands of W = {w} µs — Great up to W, Good to 2 W, Poor \
            to 4 W, Bad to 8 W, Pathetic beyond; a deviation under {} µs counts in the first bin.",
            p.x_min
        ),
        _ => format!(
            "How many round trips (log scale) took how long (log scale); one under {} µs counts in the first bin.",
            p.x_min
        ),
    }
}

/// The banner's class and text; a round-trip run can also fail on its frames, a cyclic run cannot.
fn verdict(v: Verdict, frames: bool) -> (&'static str, String) {
    match v {
        Verdict::Pass => ("pass", "PASS: every period within the Great band".into()),
        Verdict::Fail if frames => (
            "fail",
            "FAIL: periods outside the Great band, or frames lost".into(),
        ),
        Verdict::Fail => ("fail", "FAIL: periods outside the Great band".into()),
        Verdict::Inconclusive => (
            "inconclusive",
            format!(
                "INCONCLUSIVE: too short to call it a pass (at least {MIN_PASS_SECONDS} s and {} cycles)",
                grouped(MIN_PASS_CYCLES)
            ),
        ),
        Verdict::Incomplete => ("incomplete", "INCOMPLETE: the run could not finish".into()),
    }
}

/// A count with its thousands apart, as the report prints them: 10000 → "10 000".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

fn identity(name: &str, r: &RunResult) -> String {
    let mut t = String::new();
    let (class, text) = verdict(r.verdict, r.rtt.is_some());
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
        if let Some(t) = &s.thread {
            row(
                &format!("{} thread", s.label),
                format!(
                    "{} us period, SCHED_FIFO {}, CPU {}, bands of {} us",
                    t.period_us, t.priority, t.cpu, t.bucket_width_us
                ),
            );
        }
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

pub(crate) const STYLE: &str = "body{font-family:sans-serif;max-width:960px;margin:1em auto;color:#222}\
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
    h.push_str(&figures(plots));
    h.push_str("</body></html>\n");
    h
}

/// The plots as figures, each with its data attributes and its reading guide.
pub(crate) fn figures(plots: &[Plot]) -> String {
    let mut h = String::new();
    for p in plots {
        let _ = write!(
            h,
            "<figure class=\"plot\" id=\"{}\" aria-label=\"{}\" data-x-min=\"{}\" data-x-max=\"{}\" data-y-max=\"{}\" data-max-us=\"{}\" data-band-width=\"{}\" data-curves=\"{}\">\n{}\n<figcaption>{}</figcaption></figure>\n",
            esc(&p.id),
            esc(&p.title),
            p.x_min,
            p.x_max,
            p.y_max,
            p.max_us.map_or(String::new(), |m| m.to_string()),
            p.band_width_us.map_or(String::new(), |w| w.to_string()),
            p.curves,
            p.svg,
            esc(&guide(p))
        );
    }
    h
}

/// Renders the page (and the SVGs) for loaded results; returns the page's path.
pub(crate) fn write(
    results: &[(String, RunResult)],
    output: &Path,
    svg_dir: Option<&Path>,
) -> Result<PathBuf, crate::error::Error> {
    let refs: Vec<(String, &RunResult)> = results.iter().map(|(n, r)| (n.clone(), r)).collect();
    let plots = plots(&refs)?;
    if let Some(dir) = svg_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| crate::error::Error::sys(format!("creating {}", dir.display()), e))?;
        for p in &plots {
            let f = dir.join(format!("{}.svg", p.id));
            std::fs::write(&f, &p.svg)
                .map_err(|e| crate::error::Error::sys(format!("writing {}", f.display()), e))?;
        }
    }
    let page = page(&refs, &plots);
    // Written beside the target, then renamed: never a half-written report.
    let tmp = output.with_extension("html.tmp");
    std::fs::write(&tmp, page)
        .map_err(|e| crate::error::Error::sys(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, output)
        .map_err(|e| crate::error::Error::sys(format!("writing {}", output.display()), e))?;
    Ok(output.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inconclusive_line_names_the_limits_run_judges_by() {
        assert_eq!(
            verdict(Verdict::Inconclusive, false).1,
            "INCONCLUSIVE: too short to call it a pass (at least 10 s and 10 000 cycles)"
        );
        assert_eq!(grouped(1_234_567), "1 234 567");
        assert_eq!(grouped(999), "999");
    }

    #[test]
    fn a_cyclic_runs_banner_does_not_speak_of_frames() {
        assert!(!verdict(Verdict::Fail, false).1.contains("frames"));
        assert!(verdict(Verdict::Fail, true).1.contains("frames lost"));
    }

    #[test]
    fn each_thread_of_a_thread_run_is_named_with_its_period_and_priority() {
        let mut s = crate::measure::cyclic::series::Series::new("base", 250, None).summary();
        s.thread = Some(crate::measure::result::ThreadInfo {
            period_us: 250,
            bucket_width_us: 31.25,
            priority: 80,
            cpu: 1,
        });
        let t = identity("r", &RunResult::for_test(vec![s]));
        assert!(
            t.contains("<tr><th>base thread</th><td>250 us period, SCHED_FIFO 80, CPU 1, bands of 31.25 us</td></tr>"),
            "{t}"
        );
    }

    #[test]
    fn results_are_named_by_their_run_label_and_told_apart_by_their_start() {
        let r = |label: &str, started: &str| {
            let mut r = RunResult::for_test(vec![]);
            r.label = label.into();
            r.started = started.into();
            r
        };
        let results = [
            (
                "20261206T100000Z-before".to_string(),
                r("before", "2026-12-06T10:00:00Z"),
            ),
            ("a".to_string(), r("run", "2026-12-06T10:05:00Z")),
            ("b".to_string(), r("run", "2026-12-06T10:06:30Z")),
            ("c".to_string(), r("run", "2026-12-06T10:06:30Z")),
            ("old".to_string(), r("", "")),
        ];
        assert_eq!(
            legend_names(&results),
            [
                "before",
                "run 10:05:00",
                "run 10:06:30 #3",
                "run 10:06:30 #4",
                "old"
            ]
        );
    }

    #[test]
    fn markup_quotes_and_control_bytes_are_escaped() {
        assert_eq!(
            esc("<img src=x onerror='a'>\"&\x1b\x07"),
            "&lt;img src=x onerror=&#39;a&#39;&gt;&quot;&amp;\\u{1b}\\u{7}"
        );
        // A right-to-left override or isolate in a label would reorder the verdict shown after it.
        assert_eq!(esc("lab\u{202e}ssap\u{2066}"), "lab\\u{202e}ssap\\u{2066}");
    }
}
