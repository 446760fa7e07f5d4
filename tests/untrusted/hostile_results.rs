//! `compare` on hostile result files (issue 17 items 3, 7, 8): results are mailed around, so what compare
//! prints must not drive the terminal, its cost must not grow with an attacker's file, and a comparison of
//! nothing must say so.

use crate::common;

use std::path::{Path, PathBuf};

use common::check::{run, text};
use rmp_eval::measure::cyclic::series::Series;
use rmp_eval::measure::result::RunResult;

/// A real result: 10,000 periods of 1 ms, `spikes` of them 900 µs late, as `run` would save it.
fn result(label: &str, spikes: u64) -> serde_json::Value {
    let mut s = Series::new(label, 1000, None);
    for i in 0..10_000u64 {
        let late = if spikes > 0 && i % (10_000 / spikes) == 0 {
            900_000
        } else {
            2_000
        };
        s.record(1_000_000 + late, Some(10_000 + late));
    }
    let series = vec![s.summary()];
    let r = RunResult {
        duration_s: 10.0,
        verdict: RunResult::judge(&series, None),
        label: "run".into(),
        core: Some(1),
        priority: Some(42),
        dma_latency_held: true,
        ..RunResult::for_test(series)
    };
    serde_json::to_value(&r).unwrap()
}

fn save(dir: &Path, name: &str, v: &serde_json::Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p
}

fn compare(a: &Path, b: &Path) -> std::process::Output {
    run(&["compare", a.to_str().unwrap(), b.to_str().unwrap()])
}

/// Exit 2 with one short clean line on stderr and nothing on stdout.
fn refused(o: &std::process::Output) -> String {
    let e = text(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout {} stderr {e}",
        text(&o.stdout)
    );
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.len() < 400 && !e.contains('\x1b'), "{e:?}");
    e
}

#[test]
fn item7_labels_cannot_drive_the_terminal_or_forge_a_verdict() {
    let d = tempfile::tempdir().unwrap();
    let label = "Cyclic\x1b[2J\x1b[H\nVerdict: better — all fine\x1b]0;owned\x07";
    let a = save(d.path(), "a.json", &result(label, 20));
    let b = save(d.path(), "b.json", &result(label, 0));
    for o in [
        compare(&a, &b),
        run(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--json",
        ]),
    ] {
        let out = text(&o.stdout);
        assert!(o.status.code() == Some(0), "{out} {}", text(&o.stderr));
        assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
    }
    let out = text(&compare(&a, &b).stdout);
    let verdicts: Vec<&str> = out.lines().filter(|l| l.starts_with("Verdict")).collect();
    assert_eq!(verdicts.len(), 1, "{out}");
    assert!(out.contains("Cyclic\\u{1b}[2J"), "{out}");
}

#[test]
fn item3_hostile_sizes_are_refused_not_worked_through() {
    let d = tempfile::tempdir().unwrap();
    let good = save(d.path(), "good.json", &result("Cyclic", 0));
    // 200 series sharing a 10 kB label (the issue had 2,000: 1.8 GB of memory, 362 MB of output).
    let mut v = result(&"L".repeat(10_000), 0);
    let one = v["series"][0].clone();
    v["series"] = serde_json::Value::Array(vec![one; 200]);
    let bad = save(d.path(), "shared.json", &v);
    let e = refused(&compare(&good, &bad));
    assert!(e.contains("200 series, at most 64"), "{e}");
    // Many distinct labels.
    let mut v = result("Cyclic", 0);
    let one = v["series"][0].clone();
    v["series"] = serde_json::Value::Array(
        (0..1_000)
            .map(|i| {
                let mut s = one.clone();
                s["label"] = format!("s{i}").into();
                s
            })
            .collect(),
    );
    let many = save(d.path(), "many.json", &v);
    refused(&compare(&many, &good));
    // One series, one 10 kB label; and two series with the same label.
    let long = save(d.path(), "long.json", &result(&"x".repeat(10_000), 0));
    assert!(refused(&compare(&long, &good)).contains("longer than 64"));
    let mut v = result("Cyclic", 0);
    let one = v["series"][0].clone();
    v["series"] = serde_json::Value::Array(vec![one.clone(), one]);
    let twice = save(d.path(), "twice.json", &v);
    assert!(refused(&compare(&good, &twice)).contains("two series labelled 'Cyclic'"));
}

#[test]
fn item8_nothing_comparable_exits_2() {
    let d = tempfile::tempdir().unwrap();
    let cyclic = save(d.path(), "c.json", &result("Cyclic", 0));
    let sender = save(d.path(), "s.json", &result("Sender", 0));
    let mut v = result("Cyclic", 0);
    v["series"] = serde_json::json!([]);
    let empty = save(d.path(), "e.json", &v);
    let e = refused(&compare(&cyclic, &sender));
    assert!(
        e.contains("nothing to compare") && e.contains("Cyclic") && e.contains("Sender"),
        "{e}"
    );
    assert!(refused(&compare(&empty, &empty)).contains("no series"));
    // The same result against itself is comparable: unchanged, exit 0.
    let o = compare(&cyclic, &cyclic);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("Verdict: no clear change"));
}

#[test]
fn item8_absurd_values_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let good = save(d.path(), "good.json", &result("Cyclic", 0));
    for (k, v) in [("max_us", 1.7e308), ("p99_us", -1.7e308), ("min_us", 1e12)] {
        let mut r = result("Cyclic", 0);
        r["series"][0][k] = serde_json::json!(v);
        let p = save(d.path(), "absurd.json", &r);
        let e = refused(&compare(&good, &p));
        assert!(
            e.contains(k) && e.contains("not a usable rmp-eval result"),
            "{e}"
        );
    }
    // A FIFO is refused at once, not waited on.
    let fifo = d.path().join("fifo.json");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let e = text(&compare(&good, &fifo).stderr);
    assert!(
        e.contains("not a result file") || e.contains("not a regular file"),
        "{e}"
    );
}
