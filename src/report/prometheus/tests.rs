use super::check::checks;
use super::run::{Totals, run};
use super::*;
use crate::checks::CheckId;
use crate::checks::Section;
use crate::checks::Status;
use crate::measure::result::Verdict;
use crate::measure::result::dist::Dist;
use crate::measure::result::{Buckets, DistSummary, RttSummary, SeriesSummary, Timestamps};
use crate::measure::spec::{Mode, RunMode};

#[test]
fn textfile_directory_from_the_node_exporters_defaults() {
    // Debian 12's prometheus-node-exporter 1.5.0-1+b6 ships ARGS="" (no textfile option): the default applies.
    let debian = "# Set the command-line arguments to pass to the server.\n# Due to shell escaping, to pass \
                  backslashes for regexes, you need to double\nARGS=\"\"\n";
    assert_eq!(dir_from_defaults(debian), None);
    assert_eq!(
        dir_from_defaults(
            "ARGS=\"--collector.textfile.directory=/srv/prom --web.listen-address=:9100\"\n"
        )
        .as_deref(),
        Some("/srv/prom")
    );
    assert_eq!(
        dir_from_defaults("ARGS='--collector.textfile.directory \"/a b\"'").as_deref(),
        Some("/a b")
    );
    assert_eq!(
        dir_from_defaults("# ARGS=\"--collector.textfile.directory=/commented\"\nARGS=\"\""),
        None
    );
    assert_eq!(
        dir_from_defaults("ARGS=\"--collector.textfile.directory=relative\""),
        None
    );
}

#[test]
fn samples_escape_labels_and_print_numbers_plainly() {
    let mut t = Text::default();
    t.family("rmp_eval_x", "gauge", "help");
    t.sample("rmp_eval_x", &[("a", "q\"b\\c\nd")], 0.5);
    t.sample("rmp_eval_x", &[], 3.0);
    t.sample("rmp_eval_x", &[], f64::INFINITY);
    assert_eq!(
        t.into_string(),
        "# HELP rmp_eval_x help\n# TYPE rmp_eval_x gauge\nrmp_eval_x{a=\"q\\\"b\\\\c\\nd\"} 0.5\nrmp_eval_x 3\nrmp_eval_x +Inf\n"
    );
}

fn finding(id: &'static str, section: Section, status: Status) -> Finding {
    Finding {
        id: CheckId::parse(id).expect(id),
        section,
        title: "t",
        status,
        detail: String::new(),
        remedy: None,
        by_hand: None,
    }
}

#[test]
fn one_gauge_per_check_and_counts_per_status() {
    let f = [
        finding("preempt_rt", Section::System, Status::Pass),
        finding("core_isolated", Section::Core, Status::Fail),
        finding("governor", Section::Core, Status::Unknown),
    ];
    let t = checks(&f, 1_700_000_000);
    assert!(t.contains("rmp_eval_check_passed{check=\"preempt_rt\",section=\"system\"} 1\n"));
    assert!(t.contains("rmp_eval_check_passed{check=\"core_isolated\",section=\"core\"} 0\n"));
    assert!(t.contains("rmp_eval_check_passed{check=\"governor\",section=\"core\"} 0\n"));
    assert!(t.contains("rmp_eval_checks{status=\"fail\"} 1\n"));
    assert!(t.contains("rmp_eval_checks{status=\"unknown\"} 1\n"));
    assert!(t.contains("rmp_eval_check_last_timestamp_seconds 1700000000\n"));
}

fn dist(values: &[(u64, usize)]) -> DistSummary {
    let mut d = Dist::new();
    for &(ns, n) in values {
        for _ in 0..n {
            d.record(ns);
        }
    }
    d.summary()
}

fn value(t: &str, series: &str) -> f64 {
    t.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{t}"))
        .parse()
        .unwrap()
}

fn result(rtt: bool) -> RunResult {
    // 990 wakeups of 8 µs, 10 of 120 µs; round trips of 40.5, 41.5 and 99.5 µs.
    let wakeup = dist(&[(8_000, 990), (120_000, 10)]);
    let rd = dist(&[(40_500, 1), (41_500, 1), (99_500, 1)]);
    RunResult {
        mode: if rtt {
            RunMode::Nic(Mode::Ecat)
        } else {
            RunMode::Cyclic
        },
        series: vec![SeriesSummary {
            label: "Cyclic".into(),
            count: 1000,
            min_us: -3.0,
            max_us: 150.0,
            max_index: 7,
            p50_us: 2.0,
            p99_us: 20.0,
            p999_us: 100.0,
            p9999_us: 150.0,
            buckets: Buckets {
                great: 997,
                good: 2,
                poor: 1,
                bad: 0,
                pathetic: 0,
            },
            min_period_us: 997.0,
            max_period_us: 1150.0,
            early: 1,
            missed: 1,
            wakeup: Some(wakeup),
            hdr: String::new(),
            max_per_interval: None,
            tail: Vec::new(),
            thread: None,
        }],
        rtt: rtt.then(|| RttSummary {
            count: rd.count,
            lost: 2,
            min_us: rd.min_us,
            avg_us: rd.avg_us,
            p50_us: rd.p50_us,
            p99_us: rd.p99_us,
            p999_us: rd.p999_us,
            p9999_us: rd.p9999_us,
            max_us: rd.max_us,
            timestamps: Timestamps::Software,
            queue: None,
            path: "af_packet".into(),
            xdp: None,
            arrival: None,
            late: 0,
            unmatched: 1,
            duplicates: 0,
            wkc_zero: 1,
            wkc: Some(1),
            hdr: rd.hdr.clone(),
            stamps: None,
            checks: Default::default(),
        }),
        verdict: Verdict::Fail,
        label: "run".into(),
        core: Some(1),
        priority: Some(42),
        ..RunResult::for_test(vec![])
    }
}

#[test]
fn counters_and_histograms_accumulate_over_runs() {
    let mut tot = Totals::default();
    let r = result(true);
    tot.add(&r);
    tot.add(&r);
    let t = run(&r, &tot, 5);
    assert_eq!(value(&t, "rmp_eval_runs_total"), 2.0);
    // 3 outside Great + 1 skipped, twice.
    assert_eq!(
        value(&t, "rmp_eval_late_cycles_total{series=\"Cyclic\"}"),
        8.0
    );
    let w = |le: &str| {
        value(
            &t,
            &format!("rmp_eval_wakeup_latency_seconds_bucket{{series=\"Cyclic\",le=\"{le}\"}}"),
        )
    };
    assert_eq!(w("0.000005"), 0.0);
    assert_eq!(w("0.00001"), 1980.0);
    assert_eq!(w("0.0001"), 1980.0);
    assert_eq!(w("0.000125"), 2000.0);
    assert_eq!(w("+Inf"), 2000.0);
    let sum = value(&t, "rmp_eval_wakeup_latency_seconds_sum{series=\"Cyclic\"}");
    assert!(
        (sum - 2.0 * (990.0 * 8e-6 + 10.0 * 120e-6)).abs() < 1e-9,
        "{sum}"
    );
    assert_eq!(
        value(
            &t,
            "rmp_eval_wakeup_latency_seconds_count{series=\"Cyclic\"}"
        ),
        2000.0
    );
    assert_eq!(
        value(&t, "rmp_eval_rtt_seconds_bucket{le=\"0.00005\"}"),
        4.0
    );
    assert_eq!(value(&t, "rmp_eval_rtt_seconds_bucket{le=\"0.0001\"}"), 6.0);
    assert_eq!(value(&t, "rmp_eval_rtt_seconds_count"), 6.0);
    assert_eq!(value(&t, "rmp_eval_lost_frames_total"), 4.0);
    assert_eq!(value(&t, "rmp_eval_wkc_errors_total"), 2.0);
    let max = value(&t, "rmp_eval_rtt_max_seconds");
    assert!((max - 99.5e-6).abs() < 0.2e-6, "{max}");
    assert_eq!(
        value(
            &t,
            "rmp_eval_cycle_deviation_max_seconds{series=\"Cyclic\"}"
        ),
        150e-6
    );
    assert_eq!(value(&t, "rmp_eval_run_passed"), 0.0);
}

#[test]
fn results_without_a_histogram_add_counters_but_no_buckets() {
    let mut r = result(true);
    r.series[0].wakeup.as_mut().unwrap().hdr.clear();
    r.rtt.as_mut().unwrap().hdr.clear();
    let mut tot = Totals::default();
    tot.add(&r);
    assert!(tot.wakeup.is_empty());
    assert_eq!(tot.rtt.count, 0);
    assert_eq!(tot.lost_frames, 2);
}

#[test]
fn a_cyclic_run_has_no_rtt_families() {
    let mut tot = Totals::default();
    let r = result(false);
    tot.add(&r);
    let t = run(&r, &tot, 5);
    assert!(!t.contains("rmp_eval_rtt"), "{t}");
    assert!(!t.contains("rmp_eval_lost_frames_total"));
}

/// The machine and its BIOS as labels, escaped (a BIOS string may hold a quote).
#[test]
fn info_names_the_machine_and_its_bios() {
    let k = crate::checks::machine_id::KernelInfo {
        release: "6.1.0-50-rt-amd64".into(),
        preempt: "rt",
        arch: "x86_64".into(),
        machine: "Advantech UNO-127 / Advantech UNO-127".into(),
        bios: "AMI \"V1.13\" (08/01/2023)".into(),
    };
    let t = super::check::info(&k);
    assert!(
        t.contains(
            "machine=\"Advantech UNO-127 / Advantech UNO-127\",bios=\"AMI \\\"V1.13\\\" (08/01/2023)\"} 1"
        ),
        "{t}"
    );
}
