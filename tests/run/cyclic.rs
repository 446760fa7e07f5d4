//! The cyclic `run` through the binary: JSON keys and counts, results/ storage, piped output, bad input.
//! No timing thresholds: this machine is shared and noisy; only counts, keys and invariants are asserted.

use crate::common;
use common::run as run_common;

use run_common::*;
use serde_json::Value;

#[test]
fn iterations_are_the_cycles_spanned_missed_ones_included() {
    if !common::require_root("iterations_are_the_cycles_spanned_missed_ones_included") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let out = root.path().join("result.json");
    // A 1 µs period: no wakeup comes within a microsecond of its deadline, so periods are missed on any machine.
    let o = run_on(
        root.path(),
        &["--period-us", "1", "-i", "500", "-o", out.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let s = &v["series"][0];
    let (counted, missed) = (s["count"].as_u64().unwrap(), s["missed"].as_u64().unwrap());
    assert!(missed > 0, "{s}");
    assert_eq!(counted + missed, 500, "{s}");
    assert_eq!(v["iterations"], 500);
    let report = text(&o.stdout);
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "Cycles: 500 asked for (-i), each a period the run spans, counted or missed: Cyclic {counted} \
             counted + {missed} missed"
        )),
        "{report}"
    );
}

#[test]
fn short_run_json_has_count_keys_and_bands_summing_to_count() {
    if !common::require_root("json") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let o = run_on(
        root.path(),
        &["--period-us", "500", "--iterations", "300", "--json"],
    )
    .output()
    .unwrap();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    for k in [
        "period_us",
        "duration_s",
        "mode",
        "series",
        "rtt",
        "verdict",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["period_us"], 500);
    assert_eq!(v["mode"], "cyclic");
    assert!(v["rtt"].is_null());
    let s = &v["series"][0];
    for k in [
        "label",
        "count",
        "min_us",
        "max_us",
        "max_index",
        "p50_us",
        "p99_us",
        "p999_us",
        "buckets",
    ] {
        assert!(s.get(k).is_some(), "missing series.{k}");
    }
    assert_eq!(s["label"], "Cyclic");
    // 300 periods spanned: the measured ones and those the loop woke too late for.
    let n = s["count"].as_u64().unwrap();
    assert_eq!(n + s["missed"].as_u64().unwrap(), 300, "{s}");
    assert_eq!(v["iterations"], 300);
    let b = &s["buckets"];
    let sum: u64 = ["great", "good", "poor", "bad", "pathetic"]
        .iter()
        .map(|k| b[*k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, n);
    assert_eq!(s["wakeup"]["count"], n);
    assert!(s["max_index"].as_u64().unwrap() < n);
    // Exit status and verdict agree with the bands; 300 cycles are too few for a pass: all Great is
    // inconclusive (exit 3), anything else a failure.
    let all_great = b["great"] == n;
    assert_eq!(
        v["verdict"],
        if all_great { "inconclusive" } else { "fail" }
    );
    assert_eq!(o.status.code(), Some(if all_great { 3 } else { 1 }));
    // Saved under --root with the label run, the same document.
    let saved = results(root.path());
    assert_eq!(saved.len(), 1);
    assert!(
        saved[0]
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("-run.json")
    );
    let file: Value = serde_json::from_slice(&std::fs::read(&saved[0]).unwrap()).unwrap();
    assert_eq!(file, v);
}

#[test]
fn piped_output_has_no_escape_bytes() {
    if !common::require_root("piped") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let r = root.path().to_str().unwrap();
    // stdout is a pipe here; FORCE nothing: the program must notice by itself.
    let o = run(&[
        "run",
        "--root",
        r,
        "--iterations",
        "200",
        "--period-us",
        "250",
    ]);
    assert_measured(&o);
    let out = text(&o.stdout);
    assert!(out.contains("Target period: 250 us"), "{out}");
    assert!(out.contains("| Cyclic "), "{out}");
    assert!(
        !o.stdout.contains(&0x1b),
        "escape byte in piped output:\n{out}"
    );
    assert!(!o.stderr.contains(&0x1b));
}

#[test]
fn bad_values_exit_2_with_one_line_before_any_thread_starts() {
    let root = root_tree();
    let r = root.path().to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["run", "--root", r, "--core", "4096"],
        &["run", "--root", r, "--core", "-1"],
        &["run", "--root", r, "--receive-cpu", "9999"],
        &["run", "--root", r, "--send-priority", "0"],
        &["run", "--root", r, "--send-priority", "100"],
        &["run", "--root", r, "--period-us", "0"],
        &["run", "--root", r, "--iterations", "1.5"],
        &["run", "--root", r, "--iterations", "abc"],
        &["run", "--root", r, "--duration", "-1"],
        &["run", "--root", r, "--bucket-width-us", "0"],
        &["run", "--root", r, "--pktlen", "60"],
        &["run", "--root", r, "--output", "/nonexistent-cy/x.json"],
        &["--send-cpu", "4096"],
        &["-sp", "100"],
    ];
    for args in cases {
        let o = run(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("rmp-eval: "), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} printed: {}", text(&o.stdout));
    }
    assert!(results(root.path()).is_empty(), "a run happened");
}

#[test]
fn without_permission_for_sched_fifo_one_line_and_exit_2() {
    if !common::require_root("no permission") {
        return;
    }
    let root = root_tree();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // As nobody (no CAP_SYS_NICE, RLIMIT_RTPRIO 0): mlockall or SCHED_FIFO is refused.
    let o = common::as_nobody()
        .args(["run", "--root", root.path().to_str().unwrap()])
        .args(["--no-config", "--iterations", "10"])
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("SCHED_FIFO") || err.contains("mlockall"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn on_a_terminal_the_live_table_is_redrawn_in_place() {
    if !common::require_root("terminal") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    // script(1) gives the run a pseudo-terminal as stdout; the paths are the test's own, quoted for sh.
    let cmd = format!(
        "'{}' run --root '{}' --no-config --duration 1.5",
        bin(),
        root.path().display()
    );
    let o = common::on_a_terminal("", &cmd)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{out}");
    assert!(out.contains("q or Ctrl+C stops)"), "no live frame: {out}");
    // A frame moves the cursor back over the previous one, and the last frame is erased before the report.
    assert!(out.contains("A\x1b[J"), "no redraw: {out:?}");
    assert!(out.contains("Target period: 1000 us"), "{out}");
    // Each frame follows a 100 ms sleep: at most 16 in 1.5 s, whatever the load.
    let frames = out.matches("q or Ctrl+C stops)").count();
    assert!((1..=16).contains(&frames), "{frames} frames in 1.5 s");
}

#[test]
fn piped_run_prints_a_plain_progress_line_every_10_s() {
    if !common::require_root("progress") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    // 12 s: one progress line at 10 s (the margin of 2 s is for a loaded machine), none at 20 s.
    let o = run_on(root.path(), &["--duration", "12"]).output().unwrap();
    let out = text(&o.stdout);
    let progress: Vec<&str> = out.lines().filter(|l| l.starts_with("[00:00:")).collect();
    assert_eq!(progress.len(), 1, "{out}");
    assert!(
        progress[0].contains("Cyclic: ") && progress[0].contains(" periods, "),
        "{out}"
    );
    assert!(
        out.find(progress[0]) < out.find("Target period"),
        "progress comes before the report"
    );
    assert!(!o.stdout.contains(&0x1b));
}

/// `--until-confident 1/s`: −ln 0.05 s of cycles (2996 at 1 ms) with none outside Great proves it; a cycle outside
/// Great ends the run at once. Whichever this noisy machine gives, the counts say which and agree with `claim`.
#[test]
fn until_confident_runs_until_the_claim_holds_or_breaks() {
    if !common::require_root("until_confident") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let o = run_on(root.path(), &["--until-confident", "1/s", "--json"])
        .output()
        .unwrap();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    let s = &v["series"][0];
    let count = s["count"].as_u64().unwrap();
    let great = s["buckets"]["great"].as_u64().unwrap();
    assert_eq!(v["claim"]["per_hour"], 3600.0);
    let tail = &s["tail"][0];
    assert_eq!(tail["beyond_us"], 125.0);
    assert_eq!(tail["cycles"].as_u64().unwrap(), count - great);
    if v["claim"]["held"] == true {
        assert_eq!((count, great), (2996, 2996), "{s}");
        assert!(tail["per_hour_at_most"].as_f64().unwrap() < 3600.0);
    } else {
        assert_eq!(count - great, 1, "the first late cycle ends it: {s}");
        assert!(count <= 2996, "{s}");
        assert_eq!(v["verdict"], "fail");
    }
    let bad = run_on(root.path(), &["--until-confident", "1/week"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("is not a rate"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn the_rt_threads_take_no_page_fault_while_they_measure() {
    let _live = common::lock::LIVE.shared();
    // Memory is locked (mlockall(MCL_CURRENT | MCL_FUTURE)) and each RT stack pre-faulted before the loops start:
    // the threads' fault counters, read after their first cycles and again near the end, after interval
    // hand-overs and a reset, must not move, for the cyclic loop and a set of two loops (`--profile linuxcnc`).
    if !common::require_root("page faults") {
        return;
    }
    let root = root_tree();
    for (args, threads) in [(&[][..], 1), (&["--profile", "linuxcnc"][..], 2)] {
        let mut all = vec!["--duration", "4", "--json"];
        all.extend(args);
        let (before, after) = faults_across_a_run(run_on(root.path(), &all), threads, &[]);
        assert_eq!(
            before, after,
            "(thread, minor, major faults) while measuring, {args:?}"
        );
    }
}

#[test]
fn a_page_fault_in_the_loop_is_seen() {
    let _live = common::lock::LIVE.shared();
    // The proof that the test above can fail: the binary's test seam makes the loop take a fault at its 1500th
    // wakeup (1.5 s at 1 kHz), between the two readings.
    if !common::require_root("page faults") {
        return;
    }
    let root = root_tree();
    let mut cmd = run_on(root.path(), &["--duration", "4", "--json"]);
    cmd.env("RMP_EVAL_TEST_FAULT_CYCLE", "1500");
    let (before, after) = faults_across_a_run(cmd, 1, &[]);
    assert!(
        after[0].1 + after[0].2 > before[0].1 + before[0].2,
        "{before:?} {after:?}"
    );
}
