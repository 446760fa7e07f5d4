//! The final report of `run --hwlat`: the detector's settings, the gaps counted in the run's bands, the worst gaps
//! with their CPU, time, SMIs and NMIs (a gap with an SMI is the firmware's), and the verdict.

use crate::measure::cyclic::series::Bands;
use crate::measure::hwlat::HwlatReport;
use crate::measure::result::{MIN_PASS_SECONDS, RunResult, Verdict};
use crate::report::table::{Paint, duration, fit, us};

/// Worst gaps listed.
const WORST: usize = 10;
const BIOS_ADVICE: &str = "BIOS advice: SMIs are the firmware's (System Management Mode): look in the BIOS setup \
                           (power management, legacy USB emulation, watchdog, error reporting) or ask the board vendor.";

pub(crate) fn render(r: &RunResult, h: &HwlatReport, color: bool, columns: usize) -> String {
    let w = r.bucket_width_us;
    let mut s = format!(
        "Hardware latency detector (hwlat tracer): {} us of every {} us with interrupts off, {} on CPU{} {}; \
         gaps over {} us recorded\n",
        h.width_us,
        h.window_us,
        h.mode.as_deref().unwrap_or("the kernel's own mode"),
        if h.cpus.len() == 1 { "" } else { "s" },
        list(&h.cpus),
        h.threshold_us
    );
    s.push_str(&format!(
        "Bands of the {} us period: Great < {} us, Good < {}, Poor < {}, Bad < {}, Pathetic beyond\n",
        r.period_us,
        us(w),
        us(2.0 * w),
        us(4.0 * w),
        us(8.0 * w)
    ));
    s.push_str(&format!("Duration: {}\n", duration(r.duration_s)));
    let b = h.buckets.as_array();
    let bands: Vec<String> = Bands::NAMES
        .iter()
        .zip(b)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    s.push_str(&format!(
        "Gaps: {} (max {} us) — {}\n",
        h.total,
        h.max_us,
        bands.join(", ")
    ));
    s.push_str(&smi_line(h));
    s.push_str(&worst(h, r.bucket_width_us));
    if h.dropped > 0 {
        s.push_str(&format!(
            "{} smaller gaps are counted but not listed in the result (it keeps the worst {}).\n",
            h.dropped,
            h.gaps.len()
        ));
    }
    if h.unparsed > 0 {
        s.push_str(&format!(
            "{} trace lines were not the detector's and were skipped.\n",
            h.unparsed
        ));
    }
    let mut out = fit(&s, columns);
    out.push_str(&verdict_line(r, h, color));
    out
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn smi_line(h: &HwlatReport) -> String {
    match (&h.smis, &h.smi_not_counted) {
        (Some(t), _) => {
            let per: Vec<String> = t
                .iter()
                .zip(&h.cpus)
                .map(|(n, c)| format!("{n} on CPU {c}"))
                .collect();
            format!("SMIs over the run: {}\n", per.join(", "))
        }
        (None, Some(why)) => format!("SMIs not counted: {why}\n"),
        (None, None) => "SMIs not counted\n".to_string(),
    }
}

/// The worst gaps, largest first, one line each.
fn worst(h: &HwlatReport, width_us: f64) -> String {
    let mut v: Vec<_> = h.gaps.iter().collect();
    v.sort_by_key(|g| std::cmp::Reverse(g.us()));
    if v.is_empty() {
        return String::new();
    }
    let mut s = String::from("Worst gaps:\n");
    let mut smi_seen = false;
    for g in v.into_iter().take(WORST) {
        let mut line = format!(
            "  gap of {} µs on CPU {} at {} (inner {}, outer {} µs)",
            g.us(),
            g.cpu,
            when(&g.ts),
            g.inner_us,
            g.outer_us
        );
        if let (Some(n), Some(t)) = (g.nmi_count, g.nmi_total_us) {
            line.push_str(&format!(", {n} NMI(s) taking {t} µs"));
        } else if let Some(n) = g.nmi_count {
            line.push_str(&format!(", {n} NMI(s)"));
        }
        match g.smis {
            Some(n) if n > 0 => {
                smi_seen = true;
                let n = if n == 1 {
                    "1 SMI".to_string()
                } else {
                    format!("{n} SMIs")
                };
                line.push_str(&format!(
                    ": {n} in this interval — firmware, not fixable from Linux; see the BIOS advice"
                ));
            }
            Some(_) if g.us() as f64 >= width_us => {
                line.push_str(": no SMI in this interval — the CPU stopped beneath Linux all the same (NMIs, a hypervisor, power management)");
            }
            _ => {}
        }
        s.push_str(&line);
        s.push('\n');
    }
    if smi_seen {
        s.push_str(BIOS_ADVICE);
        s.push('\n');
    }
    s
}

/// "seconds.nanoseconds" as a UTC time to the millisecond.
fn when(ts: &str) -> String {
    let Some((secs, nanos)) = ts.split_once('.') else {
        return ts.to_string();
    };
    match secs.parse::<u64>() {
        Ok(s) => format!(
            "{}.{} UTC",
            crate::measure::result::store::rfc3339(s).trim_end_matches('Z'),
            nanos.get(..3).unwrap_or("000")
        ),
        Err(_) => ts.to_string(),
    }
}

fn verdict_line(r: &RunResult, h: &HwlatReport, color: bool) -> String {
    let beyond = h.buckets.not_great();
    let (text, paint) = match r.verdict {
        Verdict::Pass => (
            format!(
                "Verdict: pass — every gap the detector saw is within the Great band (< {} us).",
                us(r.bucket_width_us)
            ),
            Paint::Green,
        ),
        Verdict::Fail => (
            format!(
                "Verdict: fail — {beyond} gap(s) outside the Great band, the largest {} us.",
                h.max_us
            ),
            Paint::Red,
        ),
        Verdict::Inconclusive => (
            format!(
                "Verdict: inconclusive — no gap beyond the Great band, but {:.1} s of detection is too short for a pass: \
                 run for {MIN_PASS_SECONDS:.0} s or longer (--duration).",
                r.duration_s
            ),
            Paint::Yellow,
        ),
        Verdict::Incomplete => (
            "Verdict: incomplete — the detector could not finish.".to_string(),
            Paint::Red,
        ),
    };
    super::run::painted_verdict(&text, paint, r, color)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::hwlat::HwlatReport;

    #[test]
    fn a_gap_with_an_smi_is_the_firmwares() {
        let json = serde_json::json!({
            "width_us": 500000, "window_us": 1000000, "threshold_us": 10, "mode": "round-robin", "cpus": [1, 0],
            "gaps": [
                {"seq": 1, "cpu": 1, "inner_us": 212, "outer_us": 3, "ts": "1700000000.123456789", "smis": 1},
                {"seq": 2, "cpu": 0, "inner_us": 19, "outer_us": 26, "ts": "1700000001.000000000",
                 "nmi_total_us": 4, "nmi_count": 1, "smis": 0}
            ],
            "total": 2, "dropped": 0, "unparsed": 1, "max_us": 212,
            "buckets": {"great": 1, "good": 1, "poor": 0, "bad": 0, "pathetic": 0},
            "smis": [1, 1]
        });
        let h: HwlatReport = serde_json::from_value(json).unwrap();
        let r = RunResult {
            verdict: Verdict::Fail,
            mode: crate::measure::result::RunMode::Hwlat,
            hwlat: Some(h.clone()),
            ..RunResult::for_test(vec![])
        };
        let text = render(&r, &h, false, usize::MAX);
        assert!(
            text.contains(
                "  gap of 212 µs on CPU 1 at 2023-11-14T22:13:20.123 UTC (inner 212, outer 3 µs): 1 SMI in this \
                 interval — firmware, not fixable from Linux; see the BIOS advice\n"
            ),
            "{text}"
        );
        assert!(text.contains("  gap of 26 µs on CPU 0"), "{text}");
        assert!(text.contains("1 NMI(s) taking 4 µs"), "{text}");
        assert!(text.contains(BIOS_ADVICE), "{text}");
        assert!(
            text.contains("Gaps: 2 (max 212 us) — Great 1, Good 1, Poor 0, Bad 0, Pathetic 0\n"),
            "{text}"
        );
        assert!(
            text.contains("SMIs over the run: 1 on CPU 1, 1 on CPU 0"),
            "{text}"
        );
        assert!(
            text.contains("1 trace lines were not the detector's"),
            "{text}"
        );
        assert!(
            text.contains("Verdict: fail — 1 gap(s) outside the Great band, the largest 212 us."),
            "{text}"
        );
        // The worst comes first.
        assert!(text.find("gap of 212").unwrap() < text.find("gap of 26").unwrap());
    }
}
