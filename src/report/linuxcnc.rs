//! Under `run --profile linuxcnc` / `linuxcnc-servo`: the threads' numbers as LinuxCNC's latency-test shows them
//! (Max Jitter in ns, servo thread first) and what LinuxCNC's Latency Test chapter concludes from them for software
//! stepping (the base thread) and hardware step generation (the servo thread only).

use crate::measure::result::RunResult;
use crate::report::table::{Cell, render};

/// Where the numbers' meaning and the ranges come from.
pub(crate) const SOURCE: &str = "LinuxCNC's latency-test (Max Jitter: timedelta's largest |interval − period|) and \
     its Latency Test chapter (linuxcnc.org/docs/html/install/latency-test.html)";

/// The LinuxCNC section of the final report; empty without a LinuxCNC profile.
pub(crate) fn render_linuxcnc(r: &RunResult) -> String {
    let Some(l) = &r.linuxcnc else {
        return String::new();
    };
    let head: Vec<Cell> = ["LinuxCNC", "Max Jitter (ns)", "rmp-eval band"]
        .into_iter()
        .map(Cell::from)
        .collect();
    let mut rows = vec![Some(head), None];
    for t in &l.threads {
        rows.push(Some(vec![
            format!("{} thread ({}):", title(&t.thread), human(t.period_ns)).into(),
            t.max_jitter_ns.to_string().into(),
            t.band.as_str().into(),
        ]));
    }
    let mut s = render(&rows, false);
    if let Some(soft) = &l.software_stepping {
        s.push_str(&format!("Software stepping (base thread): {soft}.\n"));
    }
    if let Some(hard) = &l.hardware_stepping {
        s.push_str(&format!(
            "Hardware step generation (servo thread): {hard}.\n"
        ));
    }
    s.push_str(&format!("From {SOURCE}.\n\n"));
    s
}

/// "servo" → "Servo", as latency-test labels its rows.
fn title(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A period as latency-test prints it: 25µs, 1ms.
fn human(ns: u64) -> String {
    if ns >= 1_000_000 && ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns >= 1000 && ns.is_multiple_of(1000) {
        format!("{}µs", ns / 1000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::cyclic::profile::{JitterRow, reading};

    /// The Raspberry Pi 4 seed's first test (servo 164,463 ns, base 210,589 ns) as the final report shows it.
    #[test]
    fn the_seeds_figures_are_shown_in_latency_tests_terms_with_the_chapters_reading() {
        let mut r = RunResult::for_test(Vec::new());
        assert_eq!(render_linuxcnc(&r), "", "no LinuxCNC profile, no section");
        r.linuxcnc = Some(reading(vec![
            JitterRow::new("servo", 1000, 164_463, None),
            JitterRow::new("base", 25, 210_589, None),
        ]));
        let s = render_linuxcnc(&r);
        let line = |start: &str| {
            s.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no '{start}' in\n{s}"))
        };
        let servo = line("| Servo thread (1ms):");
        assert!(servo.contains(" 164463 |") && servo.contains("Good"), "{s}");
        let base = line("| Base thread (25µs):");
        assert!(
            base.contains(" 210589 |") && base.contains("Pathetic"),
            "{s}"
        );
        line("Software stepping (base thread): not a good candidate for software stepping");
        assert!(line("Hardware step generation (servo thread): usable").contains("164.463 us"));
        assert!(s.contains("latency-test.html"), "cited: {s}");
    }
}
