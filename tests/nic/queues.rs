//! `run --nic IF --txq N / --rxq N` on veth pairs with four queues a side, against `rmp-eval reflect` (root).
//! Which queue the frames left on is read from the peer's own per-queue counters with ethtool(8) — veth counts
//! each receive queue's frames once its NAPI path is on (GRO on at the peer, TSO off here) — not from rmp-eval.

use crate::common;
use common::nic::*;

use std::process::Command;
use std::time::{Duration, Instant};

const RECORDS: &str = "/run/rmp-eval/queues";

fn record(iface: &str) -> std::path::PathBuf {
    std::path::Path::new(RECORDS).join(key(iface))
}

fn ethtool_ok(c: &mut Command) {
    let o = c.output().expect("ethtool runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// A 4-queue pair whose peer counts every received frame per queue.
fn counted_pair() -> Veth {
    let v = Veth::with_queues(4);
    ethtool_ok(Command::new("ethtool").args(["-K", &v.host, "tso", "off"]));
    ethtool_ok(v.in_ns("ethtool").args(["-K", &v.peer, "gro", "on"]));
    v
}

/// The peer's frames per receive queue (ethtool -S: rx_queue_N_xdp_packets).
fn peer_queues(v: &Veth) -> Vec<u64> {
    let o = v.in_ns("ethtool").args(["-S", &v.peer]).output().unwrap();
    let s = text(&o.stdout);
    (0..4)
        .map(|q| {
            let key = format!("rx_queue_{q}_xdp_packets:");
            s.lines()
                .find_map(|l| l.trim().strip_prefix(&key))
                .unwrap_or_else(|| panic!("no {key} in {s}"))
                .trim()
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_queue_beyond_the_count_is_exit_2_before_anything_changes() {
    if !common::require_root("a_queue_beyond_the_count_is_exit_2_before_anything_changes") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::with_queues(4);
    let before = xps(&v.host);
    for (args, said) in [(["--txq", "4"], "--txq 4: "), (["--rxq", "9"], "--rxq 9: ")] {
        let o = run_nic(&v.host, &[args[0], args[1], "--duration", "1"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(said) && err.contains("has 4"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    assert_eq!(xps(&v.host), before);
    assert!(!record(&v.host).exists());
}

#[test]
fn frames_leave_on_the_transmit_queue_asked_for() {
    if !common::require_root("frames_leave_on_the_transmit_queue_asked_for") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = counted_pair();
    let _r = v.reflect(&[]);
    let core = common::rt_core().to_string();
    let before = xps(&v.host);
    for q in [1usize, 3] {
        let c0 = peer_queues(&v);
        let o = run_nic(
            &v.host,
            &[
                "--txq",
                &q.to_string(),
                "--core",
                &core,
                "--duration",
                "2",
                "--json",
            ],
        );
        let err = text(&o.stderr);
        assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{err}");
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let rtt = &j["rtt"];
        let frames = rtt["count"].as_u64().unwrap() + rtt["lost"].as_u64().unwrap();
        assert!(frames > 500, "{rtt}");
        let c1 = peer_queues(&v);
        let got: Vec<u64> = c1.iter().zip(&c0).map(|(a, b)| a - b).collect();
        assert!(got[q] >= frames, "queue {q}: {got:?} for {frames} frames");
        let elsewhere: u64 = got.iter().sum::<u64>() - got[q];
        // The kernel's own frames (IPv6 router solicitations, …) may leave on any queue: a handful at most.
        assert!(elsewhere < 20, "queue {q}: {got:?}");
        assert_eq!(rtt["queue"]["txq"], q as u64, "{rtt}");
        let notes = rtt["queue"]["notes"].to_string();
        assert!(
            notes.contains("veth"),
            "veth has no per-queue TX counter: {notes}"
        );
        assert_eq!(xps(&v.host), before, "XPS put back after queue {q}");
        assert!(!record(&v.host).exists());
    }
}

#[test]
fn a_receive_queue_on_veth_is_refused_naming_the_driver() {
    if !common::require_root("a_receive_queue_on_veth_is_refused_naming_the_driver") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::with_queues(4);
    let _r = v.reflect(&[]);
    let before = xps(&v.host);
    let o = run_nic(&v.host, &["--rxq", "1", "--txq", "2", "--duration", "1"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--rxq 1") && err.contains("(veth) has no receive flow rules"),
        "{err}"
    );
    assert_eq!(xps(&v.host), before);
    assert!(!record(&v.host).exists());
}

#[test]
fn a_killed_runs_steering_is_put_back_by_the_next_run() {
    if !common::require_root("a_killed_runs_steering_is_put_back_by_the_next_run") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::with_queues(4);
    let _r = v.reflect(&[]);
    let core = common::rt_core();
    let before = xps(&v.host);
    // Both runs keep their records in a directory of their own: any other NIC run would put the killed one's back.
    let records = tempdir();
    let kept = records.path().join(key(&v.host));
    let mut child = nic_run(
        &v.host,
        &[
            "--txq",
            "2",
            "--core",
            &core.to_string(),
            "--duration",
            "60",
            "--json",
        ],
    );
    let mut child = with_records_of_its_own(&mut child, RECORDS, records.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while xps(&v.host) == before {
        assert!(t.elapsed() < Duration::from_secs(20), "XPS never changed");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(xps(&v.host), before, "SIGKILL leaves the steering in place");
    assert!(kept.exists(), "…and its record");
    let o = with_records_of_its_own(
        &mut nic_run(&v.host, &["--duration", "1"]),
        RECORDS,
        records.path(),
    )
    .output()
    .unwrap();
    let all = text(&o.stdout) + &text(&o.stderr);
    assert!(
        all.contains(&format!("restored the queue steering of {}", v.host)),
        "{all}"
    );
    assert_eq!(xps(&v.host), before);
    assert!(!kept.exists());
}
