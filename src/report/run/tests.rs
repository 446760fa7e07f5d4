use super::*;
use crate::measure::cyclic::series::Series;
use crate::measure::result::RunResult;

fn sample() -> RunResult {
    let mut s = Series::new("Cyclic", 1000, None);
    for i in 0..1000u64 {
        s.record(1_000_000 + (i % 7) * 1_000, Some(8_000 + i));
    }
    s.record(289_000, Some(720_000));
    let series = vec![s.summary()];
    RunResult {
        duration_s: 62.445,
        verdict: RunResult::judge(&series, None),
        series,
        label: "run".into(),
        core: Some(1),
        priority: Some(42),
        dma_latency_held: true,
        ..RunResult::for_test(vec![])
    }
}

#[test]
fn final_table_has_the_originals_columns_and_percentiles() {
    let t = render_final_in(&sample(), false, usize::MAX);
    assert!(t.starts_with("Target period: 1000 us\n"), "{t}");
    assert!(
        t.contains("| Label  | Count | < 125us | < 250us | < 500us | < 1000us | >= 1000us |"),
        "{t}"
    );
    let row: Vec<&str> = t
        .lines()
        .find(|l| l.starts_with("| Cyclic "))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        row[1..10],
        [
            "Cyclic", "1001", "1000", "0", "0", "1", "0", "711", "1.001s"
        ],
        "{t}"
    );
    assert!(t.contains("Cyclic wakeup latency"), "{t}");
    assert!(t.contains("Duration: 00:01:02.445"), "{t}");
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "Cyclic shortest period: 289us (max dev 711us) at cycle 1000, 1.001s into the run, which is Bad."
        ),
        "{t}"
    );
    assert!(
        t.contains("Verdict: fail — 1 period(s) outside the Great band."),
        "{t}"
    );
    assert!(!t.contains('\x1b'));
    assert!(render_final_in(&sample(), true, usize::MAX).contains('\x1b'));
    // 80 columns: the bands beyond Great summed, the same figures.
    let n = render_final_in(&sample(), false, 80);
    let table: Vec<&str> = n.lines().take_while(|l| !l.is_empty()).collect();
    assert!(table.iter().all(|l| l.chars().count() <= 80), "{n}");
    let row: Vec<&str> = n
        .lines()
        .find(|l| l.starts_with("| Cyclic "))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        row[1..8],
        ["Cyclic", "1001", "1000", "1", "711", "1.001s", "0"],
        "{n}"
    );
}

#[test]
fn rtt_section_prints_nrtm_line() {
    let mut d = crate::measure::result::dist::Dist::new();
    for (ns, n) in [(17_500, 43944), (18_500, 9094), (29_500, 3)] {
        (0..n).for_each(|_| d.record(ns));
    }
    let rtt = crate::measure::result::RttSummary {
        count: 54015,
        lost: 0,
        min_us: 17.411,
        avg_us: 17.853,
        p50_us: 17.6,
        p99_us: 19.2,
        p999_us: 25.0,
        p9999_us: 29.0,
        max_us: 29.872,
        timestamps: crate::measure::result::Timestamps::Software,
        late: 0,
        unmatched: 0,
        duplicates: 0,
        wkc_zero: 0,
        wkc: Some(1),
        hdr: d.encode(),
        stamps: None,
        queue: None,
        path: crate::measure::spec::NicPath::AfPacket,
        xdp: None,
        arrival: None,
        checks: Default::default(),
    };
    let t = render_rtt(&rtt);
    assert!(
        t.contains("min=17.411us, avg=17.853us, max=29.872us"),
        "{t}"
    );
    assert!(t.contains("|    17 -    18 us: |     43944 |"), "{t}");
    assert!(t.contains("working counter 1"), "{t}");
    assert!(!t.contains("AF_XDP"), "{t}");
    // The AF_XDP path says what it got and why not the faster choice.
    let xdp = crate::measure::result::RttSummary {
        path: crate::measure::spec::NicPath::AfXdp,
        xdp: Some(crate::measure::result::XdpReport {
            xdp_mode: crate::measure::result::XdpMode::Generic,
            zero_copy: false,
            queue: 0,
            why_generic: Some("Operation not supported (os error 95)".into()),
            why_copy: Some("Operation not supported (os error 95)".into()),
            ring_full: 0,
            sent_late: 0,
        }),
        ..rtt
    };
    let t = render_rtt(&xdp);
    assert!(
        t.contains("Path: AF_XDP on queue 0, XDP generic, copy mode"),
        "{t}"
    );
    assert!(
        t.contains("  native XDP refused: Operation not supported"),
        "{t}"
    );
    assert!(
        t.contains("  zero-copy refused: Operation not supported"),
        "{t}"
    );
    assert!(!t.contains("Not sent") && !t.contains("Sent late"), "{t}");
    // Frames the tool's own full ring kept back are not the kernel's refusal; frames that waited on the ring for
    // the link went out late.
    let mut held = xdp.clone();
    held.checks.not_sent = 530;
    if let Some(x) = &mut held.xdp {
        x.ring_full = 400;
        x.sent_late = 128;
    }
    let t = render_rtt(&held);
    assert!(
        t.contains("Not sent: 130 frame(s) the kernel refused"),
        "{t}"
    );
    assert!(
        t.contains("Not sent: 400 frame(s) while the AF_XDP socket's own transmit ring was full"),
        "{t}"
    );
    assert!(
        t.contains("Sent late: 128 frame(s) waited on the AF_XDP transmit ring"),
        "{t}"
    );
}

#[test]
fn a_short_clean_run_is_inconclusive_and_says_how_long_to_run() {
    let mut s = Series::new("Cyclic", 1000, None);
    for i in 0..200u64 {
        s.record(1_000_000 + (i % 3) * 1_000, Some(8_000 + i));
    }
    let series = vec![s.summary()];
    let mut r = sample();
    r.verdict = RunResult::judge(&series, None);
    r.series = series;
    r.duration_s = 0.2;
    let r = r.conclusive();
    assert_eq!(r.verdict, Verdict::Inconclusive);
    let t = render_final_in(&r, false, usize::MAX);
    let v = t.split("Verdict: ").nth(1).unwrap();
    let flat = v.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.starts_with("inconclusive — 200 cycles in 0.2 s, nothing outside the Great band, but a pass needs at least 10 s and 10000 cycles: 9800 cycles and 9.8 s short; at 1000 us a period, run at least 10 s (`--duration 10`)."),
        "{t}"
    );
    assert!(
        flat.contains("--duration 10m") && flat.contains("stress-ng"),
        "{t}"
    );
    assert!(v.lines().all(|l| l.chars().count() <= 80), "{t}");
    // A failure found in a short run is still a failure; a long clean run passes.
    let failed = sample();
    assert_eq!(failed.verdict, Verdict::Fail);
    assert_eq!(failed.conclusive().verdict, Verdict::Fail);
}

/// A clean run of `count` cycles and `missed` skipped periods at `period_us` over `duration_s`, judged.
fn clean_run(period_us: u32, count: u64, missed: u64, duration_s: f64) -> RunResult {
    let mut s = Series::new("Cyclic", period_us, None);
    for _ in 0..count {
        s.record(u64::from(period_us) * 1000, Some(5_000));
    }
    s.add_missed(missed);
    let series = vec![s.summary()];
    RunResult {
        period_us,
        duration_s,
        verdict: RunResult::judge(&series, None),
        series,
        ..RunResult::for_test(vec![])
    }
    .conclusive()
}

#[test]
fn a_run_is_long_enough_by_the_periods_it_spans_and_else_says_how_long_to_run() {
    // 10 s at 1 ms with 300 periods skipped (the loop woke late, still within the band): 10 000 periods spanned.
    let r = clean_run(1000, 9_700, 300, 10.0);
    assert_eq!((r.verdict, r.span_cycles()), (Verdict::Pass, 10_000));
    // At 2 ms, 10 s are only 5 000 cycles: say how many are missing and how long a run at this period must be.
    let r = clean_run(2000, 5_000, 0, 10.0);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    let t = render_final_in(&r, false, usize::MAX);
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("needs at least 10 s and 10000 cycles: 5000 cycles short; at 2000 us a period, run at least 20 s (`--duration 20`)."),
        "{t}"
    );
}

#[test]
fn every_line_of_the_final_report_fits_the_terminal() {
    // The counters' tick line and a trace verdict as a run on an untuned PC gave them (270 and 180 characters).
    let mut r = sample();
    let mut i = crate::measure::interference::report::Interference {
        cpu: 1,
        ..Default::default()
    };
    i.ticks.local_timer_per_s = 1000.4;
    i.ticks.loop_wakeups_per_s = 999.9;
    i.ticks.verdict = "0.5 ticks/s on CPU 1: not a nohz_full core (check nohz_full: fail: CPU 1 is not in \
                       /sys/devices/system/cpu/nohz_full (none), the tick keeps interrupting it) → rmp-eval fix \
                       --core 1 --only cmdline"
        .into();
    r.interference = Some(i);
    let e = serde_json::json!({
        "cycle": 4711, "late_us": 329000.0, "cpu": 1, "timer_us": 328990.0, "woken_us": null,
        "running_us": null, "idle_us": 0.0, "culprits": [], "timeline": [{"at_us": -3.0, "what": "x"}],
        "verdict": "late by 329000 µs: the timer interrupt came 328990 µs after the deadline while CPU 1 was busy \
                    (bash (pid 2001, FIFO/RR 90) had it) and no handler ran in between (interrupts off in the \
                    kernel, an SMI, or in a VM the host)/var/lib/rmp-eval/results/a-very-long-word-without-any-space-at-all-that-is-wider-than-eighty-columns-x"
    });
    r.trace = Some(crate::trace::session::TraceReport {
        cpu: 1,
        marks: 5000,
        explained: vec![serde_json::from_value(e).unwrap()],
        ..Default::default()
    });
    let wide = render_final_in(&r, false, usize::MAX);
    assert!(
        wide.lines()
            .any(|l| l.starts_with("Ticks: ") && l.chars().count() > 200),
        "{wide}"
    );
    for color in [false, true] {
        let t = render_final_in(&r, color, 80);
        for l in t.lines() {
            assert!(
                crate::report::table::visible_width(l) <= 80,
                "{} columns: {l:?}",
                l.len()
            );
        }
        // The same words after the (sized) tail table, only the line breaks differ (and the long word, cut).
        let words = |s: &str| {
            s[s.find("On CPU").unwrap()..]
                .split_whitespace()
                .collect::<String>()
        };
        if !color {
            assert_eq!(words(&t), words(&wide));
        }
        let ticks = t.lines().position(|l| l.starts_with("Ticks: ")).unwrap();
        assert!(t.lines().nth(ticks + 1).unwrap().starts_with("  "), "{t}");
    }
}

#[test]
fn tables_are_sized_not_word_wrapped() {
    // At 40 columns even the tail table's narrowest form is wider: it stays whole rather than broken into words.
    let r = sample();
    for cols in [40, 80, 200] {
        let t = render_final_in(&r, false, cols);
        assert!(
            t.contains(&crate::report::tail::render_tail(&r, cols)),
            "{cols}: {t}"
        );
        assert!(t.contains(&percentile_table(&r, false)), "{cols}: {t}");
    }
    let narrow = crate::report::tail::render_tail(&r, 40);
    assert!(narrow.lines().any(|l| l.chars().count() > 40), "{narrow}");
}

#[test]
fn after_a_reset_the_duration_says_which_span_it_covers() {
    let plain = render_final_in(&sample(), false, usize::MAX);
    assert!(
        !plain.contains("since the statistics were reset"),
        "{plain}"
    );
    let r = RunResult {
        resets: 1,
        reset_at: Some("2026-12-06T10:00:13Z".into()),
        ..sample()
    };
    let t = render_final_in(&r, false, usize::MAX);
    let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "Duration: 00:01:02.445 (since the statistics were reset at 2026-12-06T10:00:13Z: the table, the \
             windows and the SMIs cover the same span)"
        ),
        "{t}"
    );
}

#[test]
fn a_thread_sets_other_rt_cpus_ipis_are_shown_one_line_each() {
    let mut r = sample();
    let other = |cpu, rows: &[(&str, u64)]| crate::measure::interference::report::OtherCpu {
        cpu,
        ipis: rows.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
    };
    r.interference = Some(crate::measure::interference::report::Interference {
        cpu: 1,
        other_cpus: vec![
            other(2, &[("CAL", 7), ("RES", 3), ("TLB", 0)]),
            other(3, &[]),
        ],
        ..Default::default()
    });
    let t = render_final_in(&r, false, usize::MAX);
    let lines: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("IPIs on RT CPU"))
        .collect();
    assert_eq!(
        lines,
        [
            "IPIs on RT CPU 2 (the set's other threads) over the run: CAL 7, RES 3, TLB 0",
            "IPIs on RT CPU 3 (the set's other threads) over the run: none counted"
        ],
        "{t}"
    );
}

#[test]
fn the_ipis_senders_are_shown_under_their_row_and_in_the_trace() {
    use crate::measure::interference::report::{Interferer, SourceKind};
    use crate::trace::senders::{IpiSender, count};
    let mut r = sample();
    let mut senders = count("", &[1], 700);
    senders.senders = vec![IpiSender::call("python3", 812, false, 4)];
    let mut i = crate::measure::interference::report::Interference {
        cpu: 1,
        sources: vec![Interferer::new(
            SourceKind::Interrupt,
            "CAL".into(),
            None,
            4,
            2.0,
        )],
        ..Default::default()
    };
    i.name_senders(&senders);
    r.interference = Some(i);
    r.trace = Some(crate::trace::session::TraceReport {
        cpu: 1,
        ipi_senders: Some(senders),
        ..Default::default()
    });
    let t = render_final_in(&r, false, usize::MAX);
    let after = |head: &str| {
        let at = t
            .lines()
            .position(|l| l.contains(head))
            .unwrap_or_else(|| panic!("{t}"));
        t.lines().nth(at + 1).unwrap().trim().to_string()
    };
    assert!(
        after("CAL interrupts").starts_with(
            "4 received; over the run 4 CAL sent to CPU 1: 4 from python3 (pid 812) via generic_exec_single"
        ),
        "{t}"
    );
    assert_eq!(
        after("IPIs sent to CPU 1 during the run"),
        "CAL 4 from python3 (pid 812) via generic_exec_single"
    );
}
