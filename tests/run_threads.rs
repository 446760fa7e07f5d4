//! `run --thread`: several cyclic threads on the RT core, each its own series. Counts and causes only, no timing
//! thresholds: two threads of different periods and priorities record their own cycles; a SCHED_FIFO spinner
//! between their priorities, on their CPU, starves the lower one (its periods missed, its worst period the
//! spin) while the higher one preempts it and keeps its cycles.

mod common;
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
        assert_eq!(s["count"], 1200, "{name}");
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
        assert_eq!(sum, 1200, "{name}");
        assert_eq!(s["wakeup"]["count"], 1200, "{name}");
        assert_eq!(s["tail"][0]["beyond_us"], width, "{name}");
        assert_eq!(
            s["tail"][0]["exposure_s"],
            1200.0 * period as f64 / 1e6,
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

/// A SCHED_FIFO 50 spinner on the threads' CPU for 800 ms (long beside a host stall), between the two threads' priorities 80 and 20.
const SPINNER: &str = r#"
import os, sys, time
cpu = int(sys.argv[1])
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
print("ready", flush=True)
end = time.monotonic() + 0.8
while time.monotonic() < end:
    pass
"#;

#[test]
fn a_spinner_between_their_priorities_delays_only_the_lower_thread() {
    if !common::require_root("spinner_between") {
        return;
    }
    let root = root_tree();
    let mut child = run_on(
        root.path(),
        &[
            "--thread",
            "hi:1ms:80",
            "--thread",
            "lo:1ms:20",
            "--iterations",
            "2500",
            "--json",
        ],
    )
    .env("RMP_EVAL_CHECKPOINT_S", "0.2")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    wait_for_checkpoint(root.path(), &mut child);
    let spinner = common::python_ready(SPINNER, &[common::rt_core().to_string()]);
    let o = child.wait_with_output().unwrap();
    drop(spinner);
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let (hi, lo) = (series(&v, "hi"), series(&v, "lo"));
    let missed = |s: &Value| s["missed"].as_u64().unwrap();
    let max = |s: &Value| s["max_us"].as_f64().unwrap();
    // The lower thread cannot run while the spinner does: hundreds of 1 ms periods go by, its worst period is
    // the spin's length; the higher one preempts the spinner.
    assert!(missed(lo) >= 500, "lo: {lo}");
    assert!(max(lo) >= 500_000.0, "lo: {lo}");
    assert!(missed(hi) * 4 < missed(lo), "hi {hi}\nlo {lo}");
    assert!(max(hi) * 4.0 < max(lo), "hi {hi}\nlo {lo}");
}
