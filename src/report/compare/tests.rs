use super::*;
use crate::measure::cyclic::series::Series;
use crate::measure::result::Verdict;

fn result(spike_ns: u64, spikes: u64) -> RunResult {
    let mut s = Series::new("Cyclic", 1000, None);
    for i in 0..10_000u64 {
        let late = if i % (10_000 / spikes.max(1)) == 0 && spikes > 0 {
            spike_ns
        } else {
            2_000
        };
        s.record(1_000_000 + late, Some(10_000 + late));
    }
    let series = vec![s.summary()];
    RunResult {
        duration_s: 10.0,
        verdict: RunResult::judge(&series, None),
        series,
        core: Some(1),
        priority: Some(42),
        dma_latency_held: true,
        ..RunResult::for_test(vec![])
    }
}

#[test]
fn tuned_machine_compares_better() {
    let before = result(900_000, 20);
    let after = result(0, 0);
    assert_eq!(before.verdict, Verdict::Fail);
    let c = compare(&before, &after, "b.json", "a.json");
    assert_eq!(c.verdict, Trend::Better);
    let outside = c
        .rows
        .iter()
        .find(|r| r.metric == "Cyclic outside Great")
        .unwrap();
    assert_eq!((outside.before, outside.after), (0.2, 0.0));
    let max = c
        .rows
        .iter()
        .find(|r| r.metric == "Cyclic max deviation")
        .unwrap();
    assert_eq!((max.before, max.after, max.change), (900.0, 2.0, -898.0));
    assert!(
        c.summary
            .starts_with("better — Cyclic outside Great 0.2 → 0 %"),
        "{}",
        c.summary
    );
    let text = render_text(&c, false);
    assert!(text.contains("Verdict: better"), "{text}");
    let cells: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("| Cyclic max deviation"))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        cells[1..5],
        ["Cyclic max deviation (us)", "900", "2", "-898"],
        "{text}"
    );
    assert!(!text.contains('\x1b'));
    // And the other way round.
    assert_eq!(compare(&after, &before, "a", "b").verdict, Trend::Worse);
    assert_eq!(compare(&after, &after, "a", "a").verdict, Trend::Unchanged);
}

#[test]
fn json_keys() {
    let c = compare(&result(0, 0), &result(300_000, 5), "x", "y");
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["verdict"], "worse");
    assert!(v["rows"][0]["metric"].is_string());
    assert!(v["rows"][0]["change"].is_number());
    assert_eq!(
        v["rows"][0]["trend"], "unchanged",
        "a run's length is neither better nor worse"
    );
}

#[test]
fn runs_of_different_length_or_load_are_flagged_unfair() {
    let b = result(50_000, 10);
    let same = compare(&b, &result(5_000, 0), "b", "a");
    assert!(same.unfair.is_empty(), "{:?}", same.unfair);
    assert!(!render_text(&same, false).contains("Warning"));
    // 3 s against 10 s (the case).
    let mut short = result(5_000, 0);
    short.duration_s = 3.0;
    let c = compare(&b, &short, "b", "a");
    assert_eq!(c.unfair.len(), 1, "{:?}", c.unfair);
    let text = render_text(&c, false);
    assert!(
        text.contains("Warning: the runs differ in length (10 s / 10000 cycles before, 3 s / 10000 cycles after)"),
        "{text}"
    );
    assert!(
        c.summary
            .ends_with("(not a fair comparison: see the warning above)"),
        "{}",
        c.summary
    );
    // A loaded after against an idle before.
    let mut loaded = result(5_000, 0);
    loaded.load = Some(crate::measure::load::LoadInfo {
        kinds: vec![crate::measure::load::LoadKind::Cpu],
        cpus: vec![0],
        command: "stress-ng --cpu 1".into(),
    });
    let c = compare(&b, &loaded, "b", "a");
    assert!(
        c.unfair
            .iter()
            .any(|w| w.contains("different loads (no load before, --load cpu after)")),
        "{:?}",
        c.unfair
    );
}

fn on(r: RunResult, fw: crate::checks::firmware_id::Firmware) -> RunResult {
    RunResult {
        identity: Some(crate::measure::result::Identity {
            firmware: Some(fw),
            ..Default::default()
        }),
        ..r
    }
}

/// The Advantech UNO-127 of tests/fixtures/samples/dmi, and the same board with another BIOS or another board.
#[test]
fn another_machine_or_bios_is_said() {
    use crate::checks::firmware_id::Firmware;
    let uno = Firmware {
        system_vendor: Some("Advantech".into()),
        product: Some("UNO-127".into()),
        bios_vendor: Some("American Megatrends International, LLC.".into()),
        bios_version: Some("V1.13".into()),
        bios_date: Some("08/01/2023".into()),
        ..Default::default()
    };
    let b = on(result(5_000, 0), uno.clone());
    let same = compare(&b, &on(result(5_000, 0), uno.clone()), "b", "a");
    assert!(same.unfair.is_empty(), "{:?}", same.unfair);
    let newer = Firmware {
        bios_version: Some("V1.14\x1b[2J".into()),
        ..uno.clone()
    };
    let c = compare(&b, &on(result(5_000, 0), newer), "b", "a");
    assert_eq!(c.unfair.len(), 1, "{:?}", c.unfair);
    assert!(c.unfair[0].contains("firmware changed"), "{:?}", c.unfair);
    assert!(
        c.unfair[0].contains("V1.13 (08/01/2023) before"),
        "{:?}",
        c.unfair
    );
    assert!(!c.unfair[0].contains('\x1b'), "{:?}", c.unfair);
    let other = Firmware {
        product: Some("UNO-148".into()),
        ..uno.clone()
    };
    let c = compare(&b, &on(result(5_000, 0), other), "b", "a");
    assert!(
        c.unfair[0]
            .contains("different machines (Advantech UNO-127 before, Advantech UNO-148 after)"),
        "{:?}",
        c.unfair
    );
    // An older result without the identity: nothing is claimed.
    let c = compare(&b, &result(5_000, 0), "b", "a");
    assert!(c.unfair.is_empty(), "{:?}", c.unfair);
}

#[test]
fn tail_rates_move_only_when_their_intervals_part() {
    // 20 of 10 000 cycles beyond 125 µs before, none after: the intervals part (better); the 95 % bound is shown.
    let c = compare(&result(900_000, 20), &result(0, 0), "b.json", "a.json");
    let great = c
        .rows
        .iter()
        .find(|r| r.metric == "Cyclic ≥ 125us rate")
        .unwrap();
    assert_eq!(
        (great.before, great.after, great.trend),
        (7200.0, 0.0, Trend::Better)
    );
    let bound = c
        .rows
        .iter()
        .find(|r| r.metric == "Cyclic ≥ 125us rate, 95 % at most")
        .unwrap();
    // −ln 0.05 over 10 s: 1078.4/h.
    assert_eq!(bound.after, 1078.464);
    // Two cycles against one: the same rate within chance.
    let c = compare(&result(900_000, 2), &result(900_000, 1), "b.json", "a.json");
    let r = c
        .rows
        .iter()
        .find(|r| r.metric == "Cyclic ≥ 125us rate")
        .unwrap();
    assert_eq!(r.trend, Trend::Unchanged, "{r:?}");
    let text = render_text(&c, false);
    assert!(text.contains("Cyclic ≥ 125us rate (/h)"), "{text}");
}

/// A run of `run --thread`/`--profile`: one series per (name, period µs, priority), `late_ns` on every cycle.
fn threaded(threads: &[(&str, u32, u8)], late_ns: u64) -> RunResult {
    let series = threads
        .iter()
        .map(|(name, period, prio)| {
            let mut s = Series::new(name, *period, None);
            for _ in 0..10_000u64 {
                s.record(u64::from(*period) * 1000 + late_ns, Some(5_000 + late_ns));
            }
            let mut sum = s.summary();
            sum.thread = Some(crate::measure::result::ThreadInfo {
                period_us: *period,
                bucket_width_us: f64::from(*period) / 8.0,
                priority: *prio,
                cpu: 1,
            });
            sum
        })
        .collect();
    RunResult {
        duration_s: 10.0,
        profile: Some("linuxcnc".into()),
        ..RunResult::for_test(series)
    }
}

#[test]
fn runs_with_threads_compare_thread_by_thread_by_name() {
    // The threads listed in another order: matched by name, each in its own period.
    let before = threaded(&[("servo", 1000, 97), ("base", 25, 98)], 8_000);
    let after = threaded(&[("base", 25, 98), ("servo", 1000, 97)], 1_000);
    let c = compare(&before, &after, "b", "a");
    assert!(c.unfair.is_empty(), "{:?}", c.unfair);
    let row = |m: &str| {
        c.rows
            .iter()
            .find(|r| r.metric == m)
            .unwrap_or_else(|| panic!("no row {m}: {:?}", c.rows))
    };
    assert_eq!(row("servo max deviation").before, 8.0);
    assert_eq!(row("servo max deviation").after, 1.0);
    // 8 µs late is Pathetic for the 25 µs base thread (≥ 3.125 µs × 2 …), Great for the 1 ms servo.
    assert_eq!(row("base outside Great").before, 100.0);
    assert_eq!(row("servo outside Great").before, 0.0);
    assert!(row("base ≥ 3.125us rate").before > 0.0);
    assert_eq!(c.verdict, Trend::Better);

    // A thread only one run has is left out and said so; a changed period is said so.
    let other = threaded(
        &[("servo", 1000, 97), ("base", 50, 98), ("extra", 2000, 10)],
        1_000,
    );
    let c = compare(&before, &other, "b", "a");
    assert!(
        c.unfair
            .iter()
            .any(|w| w.contains("only before: none; only after: extra")),
        "{:?}",
        c.unfair
    );
    assert!(
        c.unfair
            .iter()
            .any(|w| w.contains("period or priority differs between the runs (base)")),
        "{:?}",
        c.unfair
    );
    assert!(!c.rows.iter().any(|r| r.metric.starts_with("extra")));
    // The one cyclic thread against a profile's threads: nothing in common, said so.
    let c = compare(&result(5_000, 0), &before, "b", "a");
    assert!(
        c.unfair
            .iter()
            .any(|w| w.contains("only before: Cyclic; only after: base, servo")),
        "{:?}",
        c.unfair
    );
}

#[test]
fn runs_through_different_nic_paths_are_flagged() {
    // A NIC run saved by an earlier build (tests/fixtures/results/README.md), and the same through AF_XDP.
    let packet: RunResult = serde_json::from_str(include_str!(
        "../../../tests/fixtures/results/nic-run-before-threads-and-tail.json"
    ))
    .unwrap();
    let same = compare(&packet, &packet.clone(), "b", "a");
    assert!(
        !same.unfair.iter().any(|w| w.contains("NIC paths")),
        "{:?}",
        same.unfair
    );
    let mut xdp = packet.clone();
    xdp.rtt.as_mut().unwrap().path = "af_xdp".into();
    let c = compare(&packet, &xdp, "b", "a");
    assert!(
        c.unfair
            .iter()
            .any(|w| w.contains("different NIC paths (af_packet before, af_xdp after)")),
        "{:?}",
        c.unfair
    );
}

#[test]
fn a_run_with_no_cycles_compared_with_itself_is_fair() {
    // A run stopped before its first cycle (count 0), compared with itself: the same length, not "differ".
    let mut empty = Series::new("Cyclic", 1000, None);
    empty.record(1_000_000, None);
    let mut s = empty.summary();
    s.count = 0;
    let r = RunResult {
        duration_s: 0.0,
        series: vec![s],
        ..RunResult::for_test(vec![])
    };
    let c = compare(&r, &r, "r.json", "r.json");
    assert!(c.unfair.is_empty(), "{:?}", c.unfair);
    assert!(!render_text(&c, false).contains("differ in length"));
}
