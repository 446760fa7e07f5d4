//! The qualification's HTML page, for someone who was not there: the answer, the machine, the plan, what each
//! step did (its measured effect and compare's verdict), the cycle-time table, what had to change, the plots.
//! Self-contained like `report`'s page (no script, nothing fetched); every text from the file is escaped.

use std::fmt::Write as _;

use super::html::{STYLE, esc, figures, plots};
use super::qualification::{PeriodRow, Qualification, StepRow};
use super::table::us;
use super::tail::{rate, span};
use crate::measure::result::RunResult;

/// At most this many measurements overlaid in the plots (the baseline and the first periods).
const MAX_PLOTTED: usize = 6;

pub(crate) fn page(q: &Qualification) -> Result<String, super::plot::PlotError> {
    let mut h = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    h.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    let class = if q.smallest_safe_period_us.is_some() {
        "pass"
    } else {
        "fail"
    };
    let _ = write!(
        h,
        "<title>rmp-eval qualification</title><style>{STYLE}</style></head><body>\n\
         <h1>rmp-eval qualification</h1>\n<p class=\"verdict {class}\" id=\"verdict\">{}</p>\n",
        esc(&q.verdict)
    );
    h.push_str(&machine(q));
    h.push_str(&plan(q));
    let nic = q.nic.is_some();
    h.push_str(&steps(q, nic));
    h.push_str(&periods(&q.periods, nic));
    h.push_str(&changed(q));
    let plotted: Vec<(String, &RunResult)> = q
        .baseline
        .iter()
        .map(|r| ("baseline".to_string(), r))
        .chain(q.periods.iter().filter_map(|p| {
            p.result
                .as_ref()
                .map(|r| (format!("{} µs", p.period_us), r))
        }))
        .take(MAX_PLOTTED)
        .collect();
    if !plotted.is_empty() {
        h.push_str("<h2>Plots</h2>\n");
        h.push_str(&figures(&plots(&plotted)?));
    }
    h.push_str("</body></html>\n");
    Ok(h)
}

fn table(head: &[&str], rows: &[Vec<String>], id: &str) -> String {
    let mut t = format!("<table id=\"{id}\">");
    if !head.is_empty() {
        t.push_str("<tr>");
        for c in head {
            let _ = write!(t, "<th>{}</th>", esc(c));
        }
        t.push_str("</tr>\n");
    }
    for r in rows {
        t.push_str("<tr>");
        for c in r {
            let _ = write!(t, "<td>{}</td>", esc(c));
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table>\n");
    t
}

fn machine(q: &Qualification) -> String {
    let last = q.tuned();
    let mut rows = vec![];
    if let Some(id) = last.and_then(|r| r.identity.as_ref()) {
        rows.push(vec!["Host".into(), id.hostname.clone()]);
        if let Some(fw) = &id.firmware {
            rows.push(vec!["Machine".into(), fw.machine_line()]);
        }
        rows.push(vec!["CPU".into(), format!("{} ({} CPUs)", id.cpu, id.cpus)]);
        rows.push(vec![
            "Kernel command line".into(),
            id.kernel_cmdline.clone(),
        ]);
    }
    if let Some(r) = last {
        rows.push(vec!["Kernel".into(), r.kernel.clone()]);
    }
    rows.push(vec!["Started".into(), q.started.clone()]);
    rows.push(vec!["Finished".into(), q.finished.clone()]);
    format!("<h2>Machine</h2>\n{}", table(&[], &rows, "machine"))
}

fn plan(q: &Qualification) -> String {
    let claim = q.confidence_per_hour.map_or_else(
        || format!("{} each", span(q.seconds)),
        |per_h| {
            format!(
                "each until it proved fewer than {} outside Great (95 %), or broke it",
                rate(per_h)
            )
        },
    );
    let mut rows = vec![
        vec!["RT core".into(), q.core.to_string()],
        vec!["NIC".into(), q.nic.clone().unwrap_or_else(|| "none".into())],
        vec!["Target cycle time".into(), format!("{} µs", q.period_us)],
    ];
    if let Some(n) = &q.nic {
        rows.push(vec![
            "Each measurement".into(),
            format!(
                "round trips through {n} to the SubDevice (what `rmp-eval run --nic {n}` measures), with the \
                 sender's cycles; a reply later than the period, lost or with another working counter is a \
                 missed cycle"
            ),
        ]);
    }
    rows.extend([
        vec![
            "Steps".into(),
            if q.one_at_a_time {
                format!(
                    "one at a time, each measured for {} and compared",
                    span(q.seconds)
                )
            } else {
                "all at once, then measured".into()
            },
        ],
        vec!["Cycle-time sweep".into(), claim],
        vec![
            "Load".into(),
            if q.load.is_empty() {
                "none (an idle machine)".into()
            } else {
                q.load.join(", ")
            },
        ],
        vec!["Budget".into(), q.budget_s.map_or("none".into(), span)],
    ]);
    format!("<h2>Plan</h2>\n{}", table(&[], &rows, "plan"))
}

fn measured(r: Option<&RunResult>) -> [String; 4] {
    let Some((r, s)) = r.and_then(|r| r.series.first().map(|s| (r, s))) else {
        return ["".into(), "".into(), "".into(), "".into()];
    };
    let tail = r.tail_rates(s).first().map_or(String::new(), |t| {
        format!(
            "{} (95 %: {} – {})",
            rate(t.per_hour),
            rate(t.per_hour_low),
            rate(t.per_hour_high)
        )
    });
    [us(s.p999_us), us(s.p9999_us), us(s.max_us), tail]
}

/// With --nic: the round trips' p99.9, p99.99 and max, and the rate of missed cycles with its 95 % interval.
fn round_trips(r: Option<&RunResult>) -> [String; 4] {
    let Some((r, m)) = r.and_then(|r| r.rtt.as_ref().zip(r.missed_round_trips())) else {
        return ["".into(), "".into(), "".into(), "".into()];
    };
    [
        us(r.p999_us),
        us(r.p9999_us),
        us(r.max_us),
        format!(
            "{} in {}: {} (95 %: {} – {})",
            m.cycles,
            span(m.exposure_s),
            rate(m.per_hour),
            rate(m.per_hour_low),
            rate(m.per_hour_high)
        ),
    ]
}

/// The columns the round trips add with --nic.
const RTT_HEAD: [&str; 4] = [
    "Round trip p99.9 µs",
    "Round trip p99.99 µs",
    "Round trip max µs",
    "Missed cycles (rate, 95 %)",
];

fn step_row(s: &StepRow, nic: bool) -> Vec<String> {
    let [p999, p9999, max, tail] = measured(s.result.as_ref());
    let effect = s
        .effect
        .map_or(String::new(), |e| format!("{e:?}").to_lowercase());
    let mut what = s.outcome.replace('_', " ");
    if let Some(why) = &s.why {
        what = format!("{what}: {why}");
    }
    let mut row = vec![
        s.step.clone(),
        if s.reboot {
            "trial boot".into()
        } else {
            "now".into()
        },
        what,
        p999,
        p9999,
        max,
        tail,
    ];
    if nic {
        row.extend(round_trips(s.result.as_ref()));
    }
    row.extend([effect, s.compare_summary.clone().unwrap_or_default()]);
    row
}

fn steps(q: &Qualification, nic: bool) -> String {
    let mut head = vec!["Step", "Applied", "Outcome"];
    if nic {
        // A NIC run's first series is its sender's cycles.
        head.extend([
            "Sender p99.9 µs",
            "Sender p99.99 µs",
            "Sender max µs",
            "Sender outside Great",
        ]);
        head.extend(RTT_HEAD);
    } else {
        head.extend(["p99.9 µs", "p99.99 µs", "Max µs", "Outside Great"]);
    }
    head.extend(["Compare", "Compare says"]);
    let mut rows = vec![];
    if q.baseline.is_some() {
        let mut row: Vec<String> = vec!["baseline".into(), "".into(), "as found".into()];
        row.extend(measured(q.baseline.as_ref()));
        if nic {
            row.extend(round_trips(q.baseline.as_ref()));
        }
        row.extend(["".into(), "".into()]);
        rows.push(row);
    }
    rows.extend(q.steps.iter().map(|s| step_row(s, nic)));
    format!(
        "<h2>What each step did</h2>\n{}",
        table(&head, &rows, "steps")
    )
}

fn periods(ps: &[PeriodRow], nic: bool) -> String {
    let mut head = vec![
        "Period",
        "Result",
        "Outside Great",
        "Measured",
        "Rate (95 % interval)",
        "Fewer than (95 %)",
    ];
    if nic {
        head.extend(RTT_HEAD);
        head.push("Missed: fewer than (95 %)");
    }
    let rows: Vec<Vec<String>> = ps
        .iter()
        .map(|p| {
            let pass = if p.passed { "pass" } else { "fail" }.to_string();
            let mut row = match &p.outside_great {
                Some(t) => vec![
                    format!("{} µs", p.period_us),
                    pass,
                    t.cycles.to_string(),
                    span(t.exposure_s),
                    format!(
                        "{} ({} – {})",
                        rate(t.per_hour),
                        rate(t.per_hour_low),
                        rate(t.per_hour_high)
                    ),
                    rate(t.per_hour_at_most),
                ],
                None => vec![format!("{} µs", p.period_us), pass, "not measured".into()],
            };
            if let (true, Some(m)) = (nic, &p.missed_round_trips) {
                row.extend(round_trips(p.result.as_ref()));
                row.push(rate(m.per_hour_at_most));
            }
            row
        })
        .collect();
    let said: String = ps
        .iter()
        .map(|p| format!("<li>{}</li>", esc(&p.statement)))
        .collect();
    format!(
        "<h2>Cycle times</h2>\n{}<ul>{said}</ul>\n<p>{}</p>\n",
        table(&head, &rows, "periods"),
        esc(super::tail::ASSUMPTION)
    )
}

fn changed(q: &Qualification) -> String {
    let kept: Vec<String> = q
        .steps
        .iter()
        .filter(|s| matches!(s.outcome.as_str(), "kept" | "applied"))
        .map(|s| match &s.trial_cmdline {
            Some(c) => format!(
                "<li>{}: kernel command line, after a healthy trial boot: {}</li>",
                esc(&s.step),
                esc(c)
            ),
            None => format!("<li>{}</li>", esc(&s.step)),
        })
        .collect();
    let body = if kept.is_empty() {
        "<p>Nothing was changed.</p>".to_string()
    } else {
        format!(
            "<ul>{}</ul><p>`rmp-eval rollback` undoes every one, byte for byte.</p>",
            kept.concat()
        )
    };
    format!("<h2>What had to change</h2>\n{body}\n")
}
