//! The monitor's Prometheus textfiles carry the latest qualification's verdict (rmp_eval_qualify.prom): a
//! qualify finished on the fixture root, its sweep period measured by a captured NIC run
//! (tests/fixtures/results), then a monitor pass; each gauge must equal what the result's JSON says, and with
//! --nic the round trips' too.

use super::trial_cycle::{STATE, planned, resume, state};
use crate::common::fix::text;

fn sample(m: &str, series: &str) -> f64 {
    m.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{m}"))
        .parse()
        .unwrap()
}

/// A qualify finished on the fixture root (`nic` its --nic), its one period measured by the captured NIC run;
/// the result's JSON and what a monitor pass then wrote to rmp_eval_qualify.prom (promtool-checked).
fn finished_and_exported(nic: Option<&str>) -> (serde_json::Value, String) {
    let r = planned();
    let run = format!(
        "{}/tests/fixtures/results/nic-run-before-threads-and-tail.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut q = state(&r);
    q["phase"] = serde_json::json!({"phase": "done"});
    q["sweep"] = serde_json::json!([{"period_us": 1000, "result": run}]);
    q["nic"] = serde_json::json!(nic);
    r.write(STATE, &q.to_string());
    assert!(resume(&r).contains("Result: "));
    let dir = r.path("/var/lib/rmp-eval/qualification");
    let json = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let res: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();

    let tf = tempfile::tempdir().unwrap();
    r.write(
        "/etc/default/rmp-eval",
        &format!(
            "RMP_EVAL_MONITOR_RUN_SECONDS=0\nRMP_EVAL_MONITOR_PROMETHEUS={}\n",
            tf.path().display()
        ),
    );
    let o = r.rmp("monitor", &[]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", text(&o));
    let prom = tf.path().join("rmp_eval_qualify.prom");
    let o = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&prom).unwrap())
        .output()
        .expect("promtool (Debian package prometheus)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (res, std::fs::read_to_string(prom).unwrap())
}

#[test]
fn the_monitor_exports_the_latest_qualifications_verdict() {
    let (res, m) = finished_and_exported(None);
    assert!(!m.contains("round_trip"), "no --nic, no round trips: {m}");
    let p = &res["periods"][0];
    let passed = if p["passed"].as_bool().unwrap() {
        1.0
    } else {
        0.0
    };
    assert_eq!(
        sample(&m, "rmp_eval_qualified{core=\"1\",period_us=\"1000\"}"),
        passed,
        "{m}"
    );
    let bound = sample(
        &m,
        "rmp_eval_qualified_outside_great_per_hour_at_most{core=\"1\",period_us=\"1000\"}",
    );
    assert_eq!(
        bound,
        p["outside_great"]["per_hour_at_most"].as_f64().unwrap()
    );
    let smallest = res["smallest_safe_period_us"]
        .as_f64()
        .map_or(0.0, |p| p / 1e6);
    assert_eq!(
        sample(&m, "rmp_eval_qualified_smallest_period_seconds{core=\"1\"}"),
        smallest
    );
}

#[test]
fn with_nic_the_metrics_carry_the_missed_cycles_and_the_longest_round_trip() {
    let (res, m) = finished_and_exported(Some("eth1"));
    assert_eq!(res["rests_on"], "round_trips");
    let p = &res["periods"][0];
    let labels = "{core=\"1\",nic=\"eth1\",period_us=\"1000\"}";
    assert_eq!(
        sample(
            &m,
            &format!("rmp_eval_qualified_missed_per_hour_at_most{labels}")
        ),
        p["missed_round_trips"]["per_hour_at_most"]
            .as_f64()
            .unwrap()
    );
    assert_eq!(
        sample(
            &m,
            &format!("rmp_eval_qualified_round_trip_max_seconds{labels}")
        ),
        p["result"]["rtt"]["max_us"].as_f64().unwrap() / 1e6
    );
}
