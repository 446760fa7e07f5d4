//! `rmp-eval run --nic IF --path af_xdp` on a veth pair (the peer in its own network namespace): round trips
//! through the AF_XDP socket against `rmp-eval reflect` and against the independent Python reflector, the interface
//! still carrying other traffic (ping) meanwhile, and the XDP program gone after every kind of ending — normal,
//! SIGTERM, an error, kill -9 (then the next run settles the record). Needs root; CI is root.

use crate::common;
use common::nic as nic_support;

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use nic_support::*;
use serde_json::Value;

/// What `ip link show IF` says of the interface's XDP program: "native" (xdp), "generic" (xdpgeneric), another
/// mode's word, or None.
fn xdp_shown(iface: &str) -> Option<String> {
    let o = Command::new("ip")
        .args(["-o", "link", "show", iface])
        .output()
        .unwrap();
    let line = text(&o.stdout);
    let word = line.split_whitespace().find(|w| w.starts_with("xdp"))?;
    Some(match word {
        "xdp" => "native".into(),
        "xdpgeneric" => "generic".into(),
        other => other.into(),
    })
}

/// Waits up to 10 s for the run to have its program attached; the mode `ip` shows.
fn wait_attached(iface: &str, run: &mut Child) -> String {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if let Some(m) = xdp_shown(iface) {
            return m;
        }
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no XDP program appeared on {iface}");
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)))
}

/// Every frame answered through the AF_XDP path, timed in user space (no kernel stamps on this path).
fn assert_xdp_result(v: &Value, shown: Option<&str>) {
    let rtt = &v["rtt"];
    assert_eq!(rtt["path"], "af_xdp", "{}", brief(rtt));
    assert!(rtt["count"].as_u64().unwrap() > 100, "{}", brief(rtt));
    assert_eq!(rtt["lost"], 0, "{}", brief(rtt));
    assert_eq!(rtt["unmatched"], 0, "{}", brief(rtt));
    assert_eq!(rtt["duplicates"], 0, "{}", brief(rtt));
    let x = &rtt["xdp"];
    let mode = x["xdp_mode"].as_str().unwrap();
    assert!(mode == "native" || mode == "generic", "{x}");
    if let Some(s) = shown {
        assert_eq!(
            mode, s,
            "the result's mode is the one `ip link` showed during the run"
        );
    }
    if mode == "generic" {
        assert!(x["why_generic"].is_string(), "{x}");
    }
    // veth has no zero-copy AF_XDP (no ndo_xsk_wakeup): the kernel refuses the zero-copy bind with EOPNOTSUPP.
    assert_eq!(x["zero_copy"], false, "veth has no zero-copy AF_XDP: {x}");
    assert_eq!(
        x["why_copy"], "Operation not supported (os error 95)",
        "{x}"
    );
    assert_eq!(x["queue"], 0);
    let st = &rtt["stamps"];
    assert_eq!(st["send_time"], rtt["count"], "{st}");
    let (min, p50) = (
        rtt["min_us"].as_f64().unwrap(),
        rtt["p50_us"].as_f64().unwrap(),
    );
    assert!(0.0 < min && min <= p50 && p50 < 1e6, "{}", brief(rtt));
}

fn brief(rtt: &Value) -> Value {
    let mut r = rtt.clone();
    if let Some(o) = r.as_object_mut() {
        o.remove("hdr");
    }
    r
}

/// The record a run keeps while its program is attached.
fn record(iface: &str) -> std::path::PathBuf {
    // src/measure/nic/xdp.rs: RECORD_DIR.
    std::path::Path::new("/run/rmp-eval/xdp").join(key(iface))
}

fn sigterm(c: &Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
}

#[test]
fn round_trips_through_af_xdp_with_ping_still_answered_and_nothing_left() {
    if !common::require_root("af_xdp_round_trips") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let ip = |args: &[&str]| assert!(Command::new("ip").args(args).status().unwrap().success());
    ip(&["addr", "add", "169.254.77.1/24", "dev", &v.host]);
    ip(&[
        "-n",
        &v.ns,
        "addr",
        "add",
        "169.254.77.2/24",
        "dev",
        &v.peer,
    ]);
    let r = v.reflect(&[]);
    let mut run = nic_run(&v.host, &["--path", "af_xdp", "--duration", "3", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let shown = wait_attached(&v.host, &mut run);
    // ARP and ICMP go through the program (XDP_PASS) to the stack while the probes go to the socket.
    let ping = Command::new("ping")
        .args(["-c", "3", "-i", "0.2", "-W", "2", "169.254.77.2"])
        .output()
        .expect("ping (iputils-ping) runs");
    let still = xdp_shown(&v.host);
    let o = run.wait_with_output().unwrap();
    let _ = r.stop();
    assert!(
        ping.status.success(),
        "ping across the veth during the run: {}{}",
        text(&ping.stdout),
        text(&ping.stderr)
    );
    assert_eq!(
        still.as_deref(),
        Some(shown.as_str()),
        "attached during the ping"
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    assert_xdp_result(&json(&o), Some(&shown));
    assert_eq!(
        xdp_shown(&v.host),
        None,
        "the program is detached at the end"
    );
    assert!(!record(&v.host).exists(), "the record is removed");
}

#[test]
fn an_independent_reflector_answers_through_af_xdp() {
    if !common::require_root("af_xdp_independent_reflector") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.faulty(&[]);
    let o = run_nic(
        &v.host,
        &["--path", "af_xdp", "--iterations", "300", "--json"],
    );
    let _ = r.stop();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let val = json(&o);
    assert_xdp_result(&val, None);
    assert_eq!(val["rtt"]["wkc_errors"], 0);
    assert_eq!(xdp_shown(&v.host), None);
}

/// Zero-copy is asked for first; veth refuses it, and the report says so in one line beside the copy mode it got.
#[test]
fn veths_refusal_of_zero_copy_is_one_line_beside_copy_mode() {
    if !common::require_root("af_xdp_zero_copy_refused") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let o = run_nic(&v.host, &["--path", "af_xdp", "--iterations", "200"]);
    let _ = r.stop();
    let out = text(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{out}{}",
        text(&o.stderr)
    );
    let path: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Path: AF_XDP"))
        .collect();
    assert!(path.len() == 1 && path[0].contains(", copy mode;"), "{out}");
    let refused: Vec<&str> = out.lines().filter(|l| l.contains("zero-copy")).collect();
    assert_eq!(
        refused,
        ["  zero-copy refused: Operation not supported (os error 95)"],
        "{out}"
    );
    assert_eq!(xdp_shown(&v.host), None);
}

#[test]
fn sigterm_and_an_error_leave_no_program() {
    if !common::require_root("af_xdp_sigterm_error") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    // An error after the attach: nothing answers, so the preflight fails.
    let o = run_nic(&v.host, &["--path", "af_xdp", "--duration", "3"]);
    assert!(!o.status.success(), "no reflector: the preflight fails");
    assert!(
        text(&o.stderr).contains("no EtherCAT SubDevice answered"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(xdp_shown(&v.host), None, "detached after the error");
    assert!(!record(&v.host).exists());
    // SIGTERM mid-run: the session's stop flag ends it like Ctrl+C, with a result.
    let r = v.reflect(&[]);
    let mut run = nic_run(&v.host, &["--path", "af_xdp", "--duration", "30", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_attached(&v.host, &mut run);
    std::thread::sleep(Duration::from_millis(500));
    sigterm(&run);
    let o = run.wait_with_output().unwrap();
    let _ = r.stop();
    assert!(o.status.code().is_some(), "ended by itself after SIGTERM");
    assert_eq!(xdp_shown(&v.host), None, "detached after SIGTERM");
    assert!(!record(&v.host).exists());
}

#[test]
fn after_kill_9_the_next_run_settles_the_record() {
    if !common::require_root("af_xdp_kill9") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let mut run = nic_run(&v.host, &["--path", "af_xdp", "--duration", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_attached(&v.host, &mut run);
    assert!(record(&v.host).exists(), "recorded while attached");
    run.kill().unwrap();
    run.wait().unwrap();
    // The record outlives the process; the kernel ends the bpf_link with it (5.9 on), so the program may be gone.
    assert!(record(&v.host).exists(), "a killed run leaves its record");
    let o = run_nic(
        &v.host,
        &["--path", "af_xdp", "--iterations", "50", "--json"],
    );
    let _ = r.stop();
    let said = text(&o.stderr);
    assert!(
        said.contains(&format!("earlier run on {}", v.host))
            || said.contains(&format!("killed run left on {}", v.host)),
        "the next run says what it found: {said}"
    );
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{said}");
    assert_eq!(xdp_shown(&v.host), None);
    assert!(!record(&v.host).exists(), "record consumed");
}

#[test]
fn a_program_already_there_is_refused_and_left_alone() {
    if !common::require_root("af_xdp_foreign_program") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    // Someone's program in generic mode (iproute2 loads our own object: any program will do).
    attach_generic_by_netlink(&v.host);
    let o = run_nic(&v.host, &["--path", "af_xdp", "--duration", "2"]);
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("already has an XDP program"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(
        xdp_shown(&v.host).as_deref(),
        Some("generic"),
        "left in place"
    );
    assert!(!record(&v.host).exists());
}

#[test]
fn a_queue_the_veth_lacks_is_refused_before_anything_changes() {
    if !common::require_root("af_xdp_rxq") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    for args in [
        &["--path", "af_xdp", "--rxq", "5", "--duration", "1"][..],
        &[
            "--path",
            "af_xdp",
            "--txq",
            "0",
            "--rxq",
            "1",
            "--duration",
            "1",
        ][..],
        &["--path", "af_xdp", "--mode", "udp", "--duration", "1"][..],
    ] {
        let o = run_nic(&v.host, args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert_eq!(xdp_shown(&v.host), None);
        assert!(!record(&v.host).exists());
    }
}

#[test]
fn af_xdp_without_a_nic_is_a_usage_error() {
    let o = Command::new(BIN)
        .args(["run", "--path", "af_xdp", "--duration", "1", "--no-config"])
        .env(common::RESULTS_ENV, common::results_dir())
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--path af_xdp") && err.contains("--nic"),
        "{err}"
    );
}

#[test]
fn a_killed_runs_netlink_attached_program_is_detached_by_the_next_run_of_either_path() {
    if !common::require_root("af_xdp_netlink_leftover") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    // What a run killed on a kernel without XDP bpf_links (before 5.9) leaves: rmp-eval's program attached through
    // netlink, which outlives the process, and its record. iproute2 attaches the build's own object that way.
    attach_generic_by_netlink(&v.host);
    let ifindex = std::fs::read_to_string(format!("/sys/class/net/{}/ifindex", v.host)).unwrap();
    std::fs::create_dir_all("/run/rmp-eval/xdp").unwrap();
    std::fs::write(record(&v.host), format!("{} generic\n", ifindex.trim())).unwrap();
    // An AF_PACKET run: the leftover would take the probe's replies from it.
    let o = run_nic(&v.host, &["--iterations", "50", "--json"]);
    let _ = r.stop();
    let said = text(&o.stderr);
    assert!(
        said.contains(&format!(
            "detached the XDP program (generic) an earlier, killed run left on {}",
            v.host
        )),
        "{said}"
    );
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{said}");
    let val = json(&o);
    assert_eq!(val["rtt"]["path"], "af_packet");
    assert_eq!(val["rtt"]["lost"], 0, "{}", brief(&val["rtt"]));
    assert_eq!(xdp_shown(&v.host), None);
    assert!(!record(&v.host).exists(), "record consumed");
}

/// The build's own XDP object attached to `dev` in generic mode through netlink by iproute2, as no rmp-eval run
/// does on kernels with XDP bpf_links: a program that outlives any process.
fn attach_generic_by_netlink(dev: &str) {
    let obj = concat!(env!("OUT_DIR"), "/probe.bpf.o");
    let st = Command::new("ip")
        .args([
            "link",
            "set",
            "dev",
            dev,
            "xdpgeneric",
            "obj",
            obj,
            "sec",
            "xdp",
        ])
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", text(&st.stderr));
}

/// This machine's link set down for 500 ms mid-run: the transmit descriptors already on the AF_XDP ring when the
/// kicks start failing stay there and go out once the link is back, so they are sent (late), not "not sent"; what
/// the socket then cannot take is its own full ring, said as such, not as the kernel's refusal.
#[test]
fn frames_a_refused_kick_left_on_the_ring_are_sent_late_not_counted_unsent() {
    if !common::require_root("af_xdp_link_down_frames") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let mut run = nic_run(
        &v.host,
        &[
            "--path",
            "af_xdp",
            "--duration",
            "3",
            "--budget-us",
            "200000",
            "--json",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    wait_attached(&v.host, &mut run);
    std::thread::sleep(Duration::from_millis(700));
    let ip = |s: &str| {
        let ok = Command::new("ip")
            .args(["link", "set", &v.host, s])
            .status()
            .unwrap();
        assert!(ok.success(), "ip link set {s}");
    };
    ip("down");
    std::thread::sleep(Duration::from_millis(500));
    ip("up");
    let o = run.wait_with_output().unwrap();
    let _ = r.stop();
    let err = text(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{err}");
    let j = json(&o);
    let rtt = brief(&j["rtt"]);
    let x = &rtt["xdp"];
    let late = rtt["late"].as_u64().unwrap();
    let sent_late = x["sent_late"].as_u64().unwrap_or(0);
    // Only a frame that waited on the ring for the link takes over 200 ms to come back.
    assert!(sent_late > 0, "{rtt}");
    assert_eq!(late, sent_late, "{rtt}");
    // Every frame not sent is one the full ring kept back: none was left on it at the end.
    let not_sent = rtt["not_sent"].as_u64().unwrap();
    assert!(not_sent > 0, "{rtt}");
    assert_eq!(x["ring_full"].as_u64(), Some(not_sent), "{rtt}");
    // Frames on the wire when the link went down may be lost; the 128 that waited are not among them.
    assert!(rtt["lost"].as_u64().unwrap() < sent_late, "{rtt}");
}
