//! How `run --nic` ends when things go wrong: nothing answers, the answers stop, the user presses Ctrl+C; and what
//! it leaves behind (interface flags, also when someone changed them meanwhile) and prints into a pipe. Needs root;
//! CI is root.

mod common;
use common::nic as nic_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nic_support::*;

#[test]
fn no_reflector_is_one_line_and_exit_2_within_2_s() {
    if !common::require_root("no_reflector") {
        return;
    }
    let v = Veth::new();
    let flags = v.host_flags();
    for (mode, who) in [
        ("ecat", "no EtherCAT SubDevice answered on"),
        ("udp", "no ARP answer from 169.254.88.2 on"),
    ] {
        let t = Instant::now();
        let o = run_nic(&v.host, &["--mode", mode, "--iterations", "100"]);
        let took = t.elapsed();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(took < Duration::from_secs(2), "gave up after {took:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("rmp-eval: {who} {}", v.host)),
            "{err}"
        );
        assert!(
            o.stdout.is_empty(),
            "no report of nothing: {}",
            text(&o.stdout)
        );
    }
    assert_eq!(v.host_flags(), flags);
    // Not an interface, or not one that exists: refused before anything is sent.
    for bad in ["ncnosuch7", "a b", "../x"] {
        let o = run_nic(bad, &["--iterations", "10"]);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(text(&o.stderr).lines().count(), 1, "{}", text(&o.stderr));
    }
}

#[test]
fn reflector_killed_mid_run_reports_then_exits_2() {
    if !common::require_root("reflector_killed_mid_run") {
        return;
    }
    let v = Veth::new();
    let flags = v.host_flags();
    let r = v.reflect(&[]);
    let out = tempdir();
    let file = out.path().join("r.json");
    let child = nic_run(&v.host, &["--duration", "30", "--output"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    r.signal(libc::SIGKILL);
    let _ = r.wait();
    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("replies stopped on {}", v.host)),
        "{stderr}"
    );
    // What was measured before the replies stopped is reported, and saved.
    assert!(stdout.contains("Round trips:"), "{stdout}");
    assert!(stdout.contains("Verdict: incomplete"), "{stdout}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(j["verdict"], "incomplete");
    let measured = j["rtt"]["count"].as_u64().unwrap();
    assert!(
        measured > 100 && j["rtt"]["lost"].as_u64().unwrap() > 0,
        "{}",
        j["rtt"]
    );
    assert!(
        j["duration_s"].as_f64().unwrap() < 29.0,
        "it stopped by itself, long before --duration"
    );
    assert!(!stdout.contains('\x1b'), "piped output has no escape bytes");
    assert_eq!(v.host_flags(), flags);
}

#[test]
fn sigint_prints_the_final_report_and_writes_output() {
    if !common::require_root("sigint_final_report") {
        return;
    }
    let v = Veth::new();
    let flags = v.host_flags();
    let r = v.reflect(&[]);
    let out = tempdir();
    let file = out.path().join("r.json");
    let child = nic_run(&v.host, &["-v", "--output"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let _ = r.stop();
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.contains("Round trips:") && stdout.contains("Statistics based on"),
        "{stdout}"
    );
    assert!(stdout.contains("(stopped by a signal)"), "{stdout}");
    // -v: the timestamp rows; veth has no hardware timestamps, and says so.
    assert!(
        stdout.contains(&format!("HW timestamps: not supported by {}", v.host)),
        "{stdout}"
    );
    assert!(stdout.contains("SW timestamps: "), "{stdout}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["rtt"]["lost"], 0, "{}", j["rtt"]);
    assert!(j["rtt"]["count"].as_u64().unwrap() > 100);
    assert!(!stdout.contains('\x1b'), "piped output has no escape bytes");
    assert_eq!(v.host_flags(), flags);
}

#[test]
fn promiscuous_mode_someone_sets_during_a_run_is_put_back_when_it_ends() {
    if !common::require_root("promiscuous_mode_put_back_after_a_run") {
        return;
    }
    let v = Veth::new();
    let flags = v.host_flags();
    let r = v.reflect(&[]);
    let mut child = nic_run(&v.host, &["--duration", "30", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run's flags guard is taken before its sockets, so it is there once the sender thread runs.
    let started = Instant::now();
    while !has_thread(child.id(), "rmp-eval-send") {
        assert!(
            started.elapsed() < Duration::from_secs(10) && child.try_wait().unwrap().is_none(),
            "the run's sender thread did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Something flips promiscuous mode by the interface flag (as the original tool did) while the run measures.
    let o = Command::new("ip")
        .args(["link", "set", &v.host, "promisc", "on"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_ne!(v.host_flags(), flags, "IFF_PROMISC set during the run");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let _ = r.stop();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        v.host_flags(),
        flags,
        "the run put the flags back as they were when it started"
    );
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
fn loopback_a_bridge_and_a_tun_are_refused_as_what_they_are() {
    if !common::require_root("loopback_a_bridge_and_a_tun") {
        return;
    }
    // A bridge with a reflector behind one of its ports: frames would come back, but through a software switch.
    let b = Bridge::new(1);
    let _r = b.reflect(0, &[]);
    let in_ns = |nic: &str| {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &b.ns,
            BIN,
            "run",
            "--nic",
            nic,
            "--no-config",
        ])
        .args(["--iterations", "100"])
        .env(common::RESULTS_ENV, common::results_dir());
        c.output().unwrap()
    };
    let tun = Command::new("ip")
        .args(["-n", &b.ns, "tuntap", "add", "dev", "nctun0", "mode", "tun"])
        .status()
        .unwrap();
    assert!(tun.success());
    let cases = [
        (in_ns("br0"), "br0 is a bridge (ports hp, p0)"),
        (in_ns("nctun0"), "nctun0 is a tun device"),
        (
            run_nic("lo", &["--iterations", "100"]),
            "lo is the loopback interface",
        ),
    ];
    for (o, what) in cases {
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("rmp-eval: {what}")), "{err}");
        assert!(
            err.contains("cannot be reached through it: give --nic the wired Ethernet port"),
            "{err}"
        );
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    }
}
