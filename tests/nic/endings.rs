//! How `run --nic` ends when things go wrong: nothing answers, the answers stop, the user presses Ctrl+C; and what
//! it leaves behind (interface flags, also when someone changed them meanwhile) and prints into a pipe. Needs root;
//! CI is root.

use crate::common;
use common::nic as nic_support;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nic_support::*;

#[test]
fn no_reflector_is_one_line_and_exit_2_within_2_s() {
    if !common::require_root("no_reflector") {
        return;
    }
    let _live = common::lock::LIVE.shared();
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

/// A `run --nic` of 30 s on a veth pair with a reflector behind it, spawned with its output piped and saved to
/// `file`; `what` is done to the link or the reflector 1.5 s in. Returns the output and the saved result.
fn stopped_run(
    v: &Veth,
    what: impl FnOnce(),
    file: &std::path::Path,
) -> (Output, serde_json::Value) {
    let child = nic_run(&v.host, &["--duration", "30", "--output"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    what();
    let o = child.wait_with_output().unwrap();
    let j = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    (o, j)
}

/// What every stopped run keeps: the report of what was measured, saved, ended long before --duration.
fn assert_reported(o: &Output, j: &serde_json::Value) {
    let stdout = text(&o.stdout);
    assert!(stdout.contains("Round trips:"), "{stdout}");
    let measured = j["rtt"]["count"].as_u64().unwrap();
    assert!(measured > 100, "{}", j["rtt"]);
    assert!(
        j["duration_s"].as_f64().unwrap() < 29.0,
        "it stopped by itself, long before --duration"
    );
    assert!(!stdout.contains('\x1b'), "piped output has no escape bytes");
}

/// A SubDevice that goes silent mid-run (the reflector killed; the link stays up) is a dropout: a shortfall of the
/// chain, exit 1, with the dropout in the result — not "could not do the job".
#[test]
fn a_silent_subdevice_mid_run_is_a_dropout_exit_1() {
    if !common::require_root("a_silent_subdevice_mid_run") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let flags = v.host_flags();
    let r = v.reflect(&[]);
    let out = tempdir();
    let (o, j) = stopped_run(&v, || r.signal(libc::SIGKILL), &out.path().join("r.json"));
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{stdout}{stderr}");
    assert_reported(&o, &j);
    assert_eq!(j["verdict"], "fail");
    let d = j["rtt"]["dropout"].as_str().unwrap_or_default();
    assert!(
        d.starts_with(&format!("replies stopped on {} after ", v.host)),
        "{}",
        j["rtt"]
    );
    assert!(
        d.contains("(nothing for 1 s) with the link up: the SubDevice or the chain"),
        "{d}"
    );
    assert!(j["rtt"]["lost"].as_u64().unwrap() > 0, "{}", j["rtt"]);
    let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Verdict: fail") && flat.contains("a dropout: replies stopped on"),
        "{stdout}"
    );
    assert_eq!(v.host_flags(), flags);
}

/// The far end's link going down (veth: the peer set down, so this end loses its carrier) is a dropout of the
/// chain too, and says the carrier went.
#[test]
fn the_far_ends_link_going_down_is_a_dropout_that_names_the_carrier() {
    if !common::require_root("the_far_ends_link_going_down") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let _r = v.reflect(&[]);
    let out = tempdir();
    let down = || {
        let s = Command::new("ip")
            .args(["-n", &v.ns, "link", "set", &v.peer, "down"])
            .status()
            .unwrap();
        assert!(s.success());
    };
    let (o, j) = stopped_run(&v, down, &out.path().join("r.json"));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert_reported(&o, &j);
    let d = j["rtt"]["dropout"].as_str().unwrap_or_default();
    assert!(
        d.contains(&format!("and {} lost its carrier", v.host)),
        "{}",
        j["rtt"]
    );
}

/// This machine's own link set down, or its interface deleted, mid-run: named as such with the sends the kernel
/// refused (exit 2, incomplete) — not blamed on the SubDevice.
#[test]
fn the_local_link_going_down_or_vanishing_is_named_with_the_refused_sends() {
    if !common::require_root("the_local_link_going_down_or_vanishing") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let cases: [(&str, &str, &str); 2] = [
        (
            "down",
            "the local link went down: {IF} was set down on this machine mid-run",
            "Network is down",
        ),
        (
            "del",
            "{IF} vanished mid-run (deleted, its driver unloaded or its adapter unplugged)",
            "No such device",
        ),
    ];
    for (how, says, errno) in cases {
        let v = Veth::new();
        let _r = v.reflect(&[]);
        let out = tempdir();
        let act = || {
            let args: &[&str] = if how == "down" {
                &["link", "set", &v.host, "down"]
            } else {
                &["link", "del", &v.host]
            };
            assert!(Command::new("ip").args(args).status().unwrap().success());
        };
        let (o, j) = stopped_run(&v, act, &out.path().join("r.json"));
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}{stderr}", text(&o.stdout));
        assert_reported(&o, &j);
        assert_eq!(j["verdict"], "incomplete");
        let says = says.replace("{IF}", &v.host);
        assert!(stderr.starts_with(&format!("rmp-eval: {says}")), "{stderr}");
        assert!(!stderr.contains("replies stopped"), "{stderr}");
        // About a thousand sends at 1 ms in the second before the run gave up, each refused by the kernel.
        let refused: u64 = stderr
            .split("the kernel refused ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no refused sends in: {stderr}"));
        assert!(refused > 100, "{stderr}");
        assert!(stderr.contains(&format!("send(s) ({errno}")), "{stderr}");
        assert_eq!(j["rtt"]["not_sent"].as_u64(), Some(refused), "{}", j["rtt"]);
    }
}

#[test]
fn sigint_prints_the_final_report_and_writes_output() {
    if !common::require_root("sigint_final_report") {
        return;
    }
    let _live = common::lock::LIVE.shared();
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
    assert!(stdout.contains("(stopped by Ctrl+C (SIGINT))"), "{stdout}");
    // -v: the timestamp rows; veth has no hardware timestamps, and says why (in the result too).
    let why = format!("{}'s driver has no hardware timestamps", v.host);
    assert!(
        stdout.contains(&format!("HW timestamps: not used: {why}")),
        "{stdout}"
    );
    assert!(stdout.contains("SW timestamps: "), "{stdout}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["rtt"]["stamps"]["why_software"], why.as_str());
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
    let _live = common::lock::LIVE.shared();
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
    let _live = common::lock::LIVE.shared();
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

/// A far end with a smaller MTU (veth drops longer frames with ENOBUFS): the refusal names that MTU and the
/// --pktlen that fits, not "No buffer space available" alone.
#[test]
fn a_send_refused_for_the_far_ends_smaller_mtu_names_that_mtu() {
    if !common::require_root("a_send_refused_for_the_far_ends_smaller_mtu") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let s = Command::new("ip")
        .args(["-n", &v.ns, "link", "set", &v.peer, "mtu", "500"])
        .status()
        .unwrap();
    assert!(s.success());
    let _r = v.reflect(&[]);
    for mode in ["ecat", "udp"] {
        let o = run_nic(
            &v.host,
            &["--mode", mode, "--pktlen", "1000", "--iterations", "100"],
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "rmp-eval: sending on {}: No buffer space available",
                v.host
            )),
            "{err}"
        );
        assert!(
            err.contains("the far end's MTU is 500") && err.contains("give --pktlen 514 or less"),
            "{err}"
        );
    }
}
