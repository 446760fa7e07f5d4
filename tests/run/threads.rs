//! `run --thread`: several cyclic threads on the RT core, each its own series. Counts and causes only, no timing
//! thresholds: two threads of different periods and priorities record their own cycles; a SCHED_FIFO spinner
//! between their priorities, on their CPU, starves the lower one (its periods missed, its worst period the
//! spin) while the higher one preempts it and keeps its cycles.

use crate::common;
use common::run as run_common;

use run_common::*;
use serde_json::Value;

fn series<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == name)
        .unwrap_or_else(|| panic!("no series {name}: {v}"))
}

#[test]
fn two_threads_record_their_own_cycles() {
    if !common::require_root("two_threads") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let o = run_on(
        root.path(),
        &[
            "--thread",
            "base:250us:80",
            "--thread",
            "servo:1ms:40",
            "--iterations",
            "1200",
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["series"].as_array().unwrap().len(), 2);
    for (name, period, prio, width) in [("base", 250, 80, 31.25), ("servo", 1000, 40, 125.0)] {
        let s = series(&v, name);
        // --iterations is the periods each thread spans: counted and missed together (a loaded machine misses some).
        let n = s["count"].as_u64().unwrap();
        assert_eq!(n + s["missed"].as_u64().unwrap(), 1200, "{name}");
        assert_eq!(s["thread"]["period_us"], period, "{name}");
        assert_eq!(s["thread"]["priority"], prio, "{name}");
        assert_eq!(s["thread"]["bucket_width_us"], width, "{name}");
        assert_eq!(
            s["thread"]["cpu"].as_u64().unwrap() as usize,
            common::rt_core()
        );
        let sum: u64 = ["great", "good", "poor", "bad", "pathetic"]
            .iter()
            .map(|k| s["buckets"][*k].as_u64().unwrap())
            .sum();
        assert_eq!(sum, n, "{name}");
        assert_eq!(s["wakeup"]["count"], n, "{name}");
        assert_eq!(s["tail"][0]["beyond_us"], width, "{name}");
        assert_eq!(
            s["tail"][0]["exposure_s"],
            n as f64 * period as f64 / 1e6,
            "{name}"
        );
    }
    // The same names twice, and a bad thread, are refused with one line and exit 2.
    for args in [
        &["--thread", "a:1ms", "--thread", "a:2ms"][..],
        &["--thread", "a:0us"][..],
    ] {
        let o = run_on(root.path(), args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&o.stderr).lines().count(), 1, "{}", text(&o.stderr));
    }
}

/// Spinner windows: WINDOWS of WINDOW_MS each, GAP_MS apart — each far longer than this VM's ms-scale stalls.
const WINDOWS: u64 = 8;
const WINDOW_MS: u64 = 40;
const GAP_MS: u64 = 250;

/// A SCHED_FIFO 50 spinner on the threads' CPU, between the two threads' priorities 80 and 20: it spins WINDOWS
/// windows and sleeps between them.
const SPINNER: &str = r#"
import os, sys, time
cpu, windows, spin, gap = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
print("ready", flush=True)
for _ in range(windows):
    end = time.monotonic() + spin
    while time.monotonic() < end:
        pass
    time.sleep(gap)
"#;

#[test]
fn a_spinner_between_their_priorities_delays_only_the_lower_thread() {
    if !common::require_root("spinner_between") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    // Bands of 2.5 ms: Pathetic is a period 20 ms or more late, half a spinner window — a count of windows, not
    // of this machine's stalls.
    let mut child = run_on(
        root.path(),
        &[
            "--thread",
            "hi:1ms:80",
            "--thread",
            "lo:1ms:20",
            "--bucket-width-us",
            "2500",
            "--iterations",
            "6000",
            "--json",
        ],
    )
    .env("RMP_EVAL_CHECKPOINT_S", "0.2")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    wait_for_checkpoint(root.path(), &mut child);
    let secs = |ms: u64| format!("{}", ms as f64 / 1000.0);
    let spinner = common::python_ready(
        SPINNER,
        &[
            common::rt_core().to_string(),
            WINDOWS.to_string(),
            secs(WINDOW_MS),
            secs(GAP_MS),
        ],
    );
    let o = child.wait_with_output().unwrap();
    drop(spinner);
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let (hi, lo) = (series(&v, "hi"), series(&v, "lo"));
    let windows = |s: &Value| s["buckets"]["pathetic"].as_u64().unwrap();
    let max = |s: &Value| s["max_us"].as_f64().unwrap();
    // The lower thread cannot run while the spinner does: each window delays it once by about the window. The
    // higher one preempts the spinner: only a stall of the whole machine (which delays both alike) reaches it.
    assert!(windows(lo) >= WINDOWS, "lo: {lo}");
    assert!(max(lo) >= (WINDOW_MS * 1000) as f64 / 2.0, "lo: {lo}");
    assert!(windows(hi) * 2 < windows(lo), "hi {hi}\nlo {lo}");
    assert!(windows(hi) < WINDOWS / 2, "hi {hi}\nlo {lo}");
}

/// A profile's series from the JSON of a run.
fn profile_run(root: &std::path::Path, args: &[&str]) -> Value {
    let o = run_on(root, args).output().unwrap();
    assert_measured(&o);
    serde_json::from_slice(&o.stdout).expect("one JSON document")
}

fn thread_set(v: &Value) -> Vec<(String, u64, u64)> {
    v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["label"].as_str().unwrap().to_string(),
                s["thread"]["period_us"].as_u64().unwrap(),
                s["thread"]["priority"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn set(v: &[(&str, u64, u64)]) -> Vec<(String, u64, u64)> {
    v.iter().map(|(n, p, q)| (n.to_string(), *p, *q)).collect()
}

#[test]
fn the_profiles_run_their_documented_thread_sets() {
    if !common::require_root("profiles") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let v = profile_run(
        root.path(),
        &["--profile", "linuxcnc", "--iterations", "300", "--json"],
    );
    assert_eq!(v["profile"], "linuxcnc");
    assert_eq!(
        thread_set(&v),
        set(&[("servo", 1000, 97), ("base", 25, 98)])
    );
    // LinuxCNC's terms: each thread's Max Jitter is its largest period deviation, in ns.
    let l = &v["linuxcnc"];
    for (i, name) in ["servo", "base"].iter().enumerate() {
        let row = &l["threads"][i];
        assert_eq!(row["thread"], *name);
        let max_us = series(&v, name)["max_us"].as_f64().unwrap();
        let ns = row["max_jitter_ns"].as_f64().unwrap();
        assert!((ns - max_us * 1000.0).abs() <= 1.0, "{row} vs {max_us} us");
        let s = series(&v, name);
        let spanned = s["count"].as_u64().unwrap() + s["missed"].as_u64().unwrap();
        assert_eq!(
            spanned, 300,
            "{name}: the periods spanned, counted and missed"
        );
    }
    assert!(
        l["software_stepping"].is_string() && l["hardware_stepping"].is_string(),
        "{l}"
    );

    // Servo only: no base thread, no software-stepping reading; a --thread of a profile's name replaces it.
    let v = profile_run(
        root.path(),
        &[
            "--profile",
            "linuxcnc-servo",
            "--iterations",
            "200",
            "--json",
        ],
    );
    assert_eq!(thread_set(&v), set(&[("servo", 1000, 98)]));
    assert!(
        v["linuxcnc"]["software_stepping"].is_null(),
        "{}",
        v["linuxcnc"]
    );
    let v = profile_run(
        root.path(),
        &[
            "--profile",
            "linuxcnc",
            "--thread",
            "base:50us:98",
            "--thread",
            "extra:2ms:10",
            "--iterations",
            "100",
            "--json",
        ],
    );
    assert_eq!(
        thread_set(&v),
        set(&[("servo", 1000, 97), ("base", 50, 98), ("extra", 2000, 10)])
    );

    // RMP's eight threads on one CPU, at --period-us 2000: each series counts what its own period allows in the
    // run's span (no timing threshold: only that a thread cannot record more periods than elapsed).
    let v = profile_run(
        root.path(),
        &[
            "--profile",
            "rmp",
            "--period-us",
            "2000",
            "--duration",
            "1",
            "--json",
        ],
    );
    assert_eq!(v["profile"], "rmp");
    assert!(v["linuxcnc"].is_null());
    assert_eq!(
        thread_set(&v),
        set(&[
            ("sender", 2000, 42),
            ("receiver", 2000, 45),
            ("periodic1", 4000, 41),
            ("periodic2", 10_000, 40),
            ("periodic3", 20_000, 39),
            ("periodic4", 40_000, 38),
            ("periodic5", 100_000, 37),
            ("periodic6", 200_000, 36),
        ])
    );
    let span_us = v["duration_s"].as_f64().unwrap() * 1e6;
    for s in v["series"].as_array().unwrap() {
        let period = s["thread"]["period_us"].as_f64().unwrap();
        let cycles = s["count"].as_f64().unwrap() + s["missed"].as_f64().unwrap();
        assert!(s["count"].as_u64().unwrap() >= 1, "{s}");
        assert!(cycles <= span_us / period + 1.0, "{s} in {span_us} us");
        assert_eq!(
            s["thread"]["cpu"].as_u64().unwrap() as usize,
            common::rt_core()
        );
    }
}

#[test]
fn a_bad_profile_or_a_period_a_linuxcnc_profile_sets_is_one_line_and_exit_2() {
    let root = root_tree();
    for (args, says) in [
        (&["--profile", "linuxcnc-base"][..], "is not a profile"),
        (&["--profile", ""][..], "is not a profile"),
        (
            &["--profile", "linuxcnc", "--period-us", "500"][..],
            "sets its threads' periods",
        ),
        (
            &["--profile", "linuxcnc-servo", "-s", "250"][..],
            "sets its threads' periods",
        ),
        (&["--profile", "rmp", "--nic", "eth0"][..], "--nic"),
        (&["--profile", "linuxcnc", "--trace"][..], "--trace"),
    ] {
        let o = run_on(root.path(), args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            results(root.path()).is_empty(),
            "{args:?}: nothing measured"
        );
    }
}

/// A result saved before `--thread`, `--profile` and tail rates existed (tests/fixtures/README.md) loads, compares
/// with itself (its tail rates computed from its bands), and against a result with threads by name.
#[test]
fn an_old_result_without_threads_still_loads_and_compares() {
    let old = "tests/fixtures/results/nic-run-before-threads-and-tail.json";
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(old).unwrap()).unwrap();
    assert!(raw["series"][0].get("thread").is_none() && raw["series"][0].get("tail").is_none());
    let o = run(&["compare", old, old, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let metrics: Vec<&str> = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    for m in [
        "Sender max deviation",
        "Receiver max deviation",
        "Sender ≥ 125us rate",
    ] {
        assert!(metrics.contains(&m), "{m}: {metrics:?}");
    }
    assert_eq!(c["unfair"], serde_json::json!([]));
    // The same result as a one-thread run named servo: nothing in common with Sender/Receiver, and said so.
    let mut threaded = raw.clone();
    threaded["series"] = serde_json::json!([raw["series"][0].clone()]);
    threaded["series"][0]["label"] = "servo".into();
    threaded["series"][0]["thread"] =
        serde_json::json!({"period_us": 1000, "bucket_width_us": 125.0, "priority": 97, "cpu": 1});
    threaded["profile"] = "linuxcnc-servo".into();
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("threaded.json");
    std::fs::write(&new, threaded.to_string()).unwrap();
    let o = run(&["compare", old, new.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        c["unfair"][0]
            .as_str()
            .unwrap()
            .contains("only before: Receiver, Sender; only after: servo"),
        "{}",
        c["unfair"]
    );
}
