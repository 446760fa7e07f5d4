//! What a NIC run's verdict holds the chain to beyond lost and late frames — every reply answers one request of
//! this run, once — and what it refuses up front; against peers written apart from rmp-eval
//! (tests/nic_faulty_reflector.py) and `reflect` on veth pairs and bridges in namespaces. Needs root; CI is root.

use crate::common;
use common::nic as nic_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nic_support::*;
use serde_json::Value;

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)))
}

/// Process `pid` has a thread named `name`.
fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
        })
        .unwrap_or(false)
}

#[test]
fn a_reflector_answering_every_frame_twice_fails_the_verdict() {
    if !common::require_root("a_reflector_answering_twice") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.faulty(&["--twice"]);
    let o = run_nic(&v.host, &["--iterations", "300", "--json"]);
    let j = json(&o);
    let rtt = &j["rtt"];
    let (count, dups) = (
        rtt["count"].as_u64().unwrap(),
        rtt["duplicates"].as_u64().unwrap(),
    );
    // Each frame measured once; its second answer is a duplicate (a few may still be in flight at the end).
    assert!(count >= 290 && dups + 10 >= count && dups <= count, "{rtt}");
    assert_eq!(
        rtt["unmatched"], 0,
        "a second answer is not a stranger: {rtt}"
    );
    assert_eq!(
        (o.status.code(), &j["verdict"]),
        (Some(1), &Value::from("fail")),
        "{rtt}"
    );
    // The report says why.
    let o = run_nic(&v.host, &["--iterations", "100"]);
    let _ = r.stop();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let report = text(&o.stdout);
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("duplicate reply(ies) (a frame answered more than once"),
        "{report}"
    );
}

#[test]
fn a_second_main_device_on_the_same_nic_is_refused_with_one_line() {
    if !common::require_root("a_second_main_device_on_the_same_nic") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let first = nic_run(&v.host, &["--duration", "30", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !has_thread(first.id(), "rmp-eval-send") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the first run did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = run_nic(&v.host, &["--iterations", "100"]);
    let err = text(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("another rmp-eval run is measuring on {}", v.host)),
        "{err}"
    );
    assert!(second.stdout.is_empty(), "{}", text(&second.stdout));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let o = first.wait_with_output().unwrap();
    let _ = r.stop();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let j = json(&o);
    assert_eq!(
        (&j["rtt"]["unmatched"], &j["rtt"]["duplicates"]),
        (&0.into(), &0.into())
    );
    // Once it has ended, the NIC is free again.
    let r = v.reflect(&[]);
    let o = run_nic(&v.host, &["--iterations", "50"]);
    let _ = r.stop();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn two_main_devices_on_one_segment_never_take_each_others_replies() {
    if !common::require_root("two_main_devices_on_one_segment") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    // One SubDevice (reflect on end 0), two MainDevices: ours on the host end, another inside the bridge's
    // namespace on end 1. Each sees the other's replies too (EtherCAT replies are broadcast).
    let b = Bridge::new(2);
    let r = b.reflect(0, &[]);
    let mut other = Command::new("ip");
    other
        .args([
            "netns",
            "exec",
            &b.ns,
            BIN,
            "run",
            "--nic",
            &b.ends[1],
            "--no-config",
        ])
        .args(["--duration", "3", "--json"])
        .env(common::RESULTS_ENV, common::results_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let other = other.spawn().unwrap();
    let ours = run_nic(&b.host, &["--duration", "3", "--json"]);
    let theirs = other.wait_with_output().unwrap();
    let _ = r.stop();
    for (who, o) in [("ours", &ours), ("theirs", &theirs)] {
        let j = json(o);
        let rtt = &j["rtt"];
        let (count, unmatched) = (
            rtt["count"].as_u64().unwrap(),
            rtt["unmatched"].as_u64().unwrap(),
        );
        // Each run measured its own frames, lost none to the other, and saw the other's replies as strangers.
        assert!(count > 500, "{who}: {rtt}");
        assert_eq!(rtt["lost"], 0, "{who}: {rtt}");
        assert_eq!(
            rtt["duplicates"], 0,
            "{who}: the other's replies are not taken for ours: {rtt}"
        );
        assert!(unmatched > 100, "{who}: {rtt}");
        assert_eq!(j["verdict"], "fail", "{who}: {rtt}");
        assert_eq!(o.status.code(), Some(1), "{who}");
    }
}

#[test]
fn the_expected_working_counter_is_learned_from_agreeing_preflight_replies() {
    if !common::require_root("expected_wkc_from_the_preflight") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    // A chain of two where every tenth answer comes back with WKC 1, the very first among them.
    let r = v.faulty(&["--wkc", "2", "--wkc-fault-every", "10", "--fault-first"]);
    let o = run_nic(&v.host, &["--iterations", "300", "--json"]);
    let _ = r.stop();
    let j = json(&o);
    let rtt = &j["rtt"];
    assert_eq!(rtt["expected_wkc"], 2, "not the first reply's 1: {rtt}");
    assert_eq!(
        rtt["preflight_wkc"],
        serde_json::json!([1, 2, 2, 2, 2]),
        "{rtt}"
    );
    assert_eq!(rtt["wkc"], 2, "the value most replies carried: {rtt}");
    // The errors blamed are the faulty tenth, not the good nine tenths.
    let errors = rtt["wkc_errors"].as_u64().unwrap();
    assert!((25..=31).contains(&errors), "{rtt}");
    assert_eq!(rtt["wkc_seen"]["1"].as_u64(), Some(errors), "{rtt}");
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains(
            "disagree on the working counter (1, 2, 2, 2, 2): the first said 1, expecting 2"
        ) && err.contains("--expect-wkc"),
        "{err}"
    );
    // The report shows the distribution, and where the expectation came from.
    let r = v.faulty(&["--wkc", "2", "--wkc-fault-every", "10", "--fault-first"]);
    let o = run_nic(&v.host, &["--iterations", "100"]);
    let _ = r.stop();
    let report = text(&o.stdout);
    // -i 100 spans 100 periods, some of which a loaded machine misses: the replies carrying 2 are the replies
    // less the tenth that carried 1, as the report's own "seen" figures say.
    let said = |pat: &str| -> Vec<u64> {
        let at = report
            .find(pat)
            .unwrap_or_else(|| panic!("no {pat:?} in {report}"))
            + pat.len();
        report[at..]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .take(3)
            .map(|t| t.parse().unwrap())
            .collect()
    };
    let (good, replies) = (
        said("working counter 2 in ")[0],
        said("working counter 2 in ")[1],
    );
    // "seen 1: X, 2: Y": the numbers after it are X, 2 and Y.
    let seen = [said("seen 1: ")[0], said("seen 1: ")[2]];
    assert_eq!((seen[1], seen[0] + seen[1]), (good, replies), "{report}");
    assert!(good > 0 && seen[0] > 0 && good > seen[0], "{report}");
    assert!(
        report.contains("Working counter: expected 2 (learned from the preflight: 1, 2, 2, 2, 2)"),
        "{report}"
    );
    // Agreeing replies say nothing.
    let r = v.faulty(&["--wkc", "3"]);
    let o = run_nic(&v.host, &["--iterations", "50", "--json"]);
    let _ = r.stop();
    assert!(!text(&o.stderr).contains("disagree"), "{}", text(&o.stderr));
    assert_eq!(
        json(&o)["rtt"]["preflight_wkc"],
        serde_json::json!([3, 3, 3, 3, 3])
    );
}
