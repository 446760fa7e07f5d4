//! `rmp-eval reflect` against a MainDevice no one here wrote (pysoem, which bundles SOEM), and its exits.
//! Needs root (network namespaces); CI is root.

use crate::common;
use common::nic as nic_support;

use std::process::Command;

use common::tshark::*;
use nic_support::*;

#[test]
fn pysoem_config_init_finds_one_subdevice() {
    if !common::require_root("pysoem_config_init_finds_one_subdevice") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let Some(py) = pysoem_python() else { return };
    let v = Veth::new();
    let r = v.reflect(&[]);
    // Six frames, not two: a detection SOEM repeats puts a late reply before the next request.
    let cap = Capture::start(&v.host, "ether proto 0x88a4", 6);
    let o = Command::new(&py)
        .args([
            "-c",
            &format!("{PYSOEM_DETECT}\nprint('found', n, len(m.slaves))\nm.close()"),
        ])
        .arg(&v.host)
        .output()
        .unwrap();
    let (code, out, err) = r.stop();
    let py_out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "pysoem: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        py_out.trim(),
        "found 1 1",
        "SOEM's detection BRD must see working counter 1"
    );
    assert_eq!(code, 0, "reflect exits 0 on SIGINT: {err}");
    // SOEM reads every SubDevice's EEPROM through many datagrams: all of them were answered and counted.
    let line = out
        .lines()
        .find(|l| l.starts_with("reflect: answered"))
        .unwrap();
    let n: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(n > 10 && line.contains(&format!("{n} EtherCAT")), "{out}");
    // SOEM's first request (the capture's first frame: it was live before SOEM started) and its answer, as
    // tshark decodes them: the request leaves with
    // working counter 0 from SOEM's MAC, the reply (same command and index) has bit 0x02 set in its source MAC, as
    // a real ESC returns it, and working counter 1.
    let rows = cap.fields(&["eth.src", "ecat.cmd", "ecat.idx", "ecat.cnt"], &[]);
    let rows: Vec<Vec<&str>> = rows.iter().map(|r| r.split(';').collect()).collect();
    let req = rows
        .iter()
        .position(|r| r[0] == "01:01:01:01:01:01")
        .unwrap_or_else(|| panic!("no request from SOEM: {rows:?}"));
    assert_eq!(
        req, 0,
        "the capture begins with SOEM's first request: {rows:?}"
    );
    let rep = rows[req + 1..]
        .iter()
        .find(|r| r[0] != rows[req][0] && (r[1], r[2]) == (rows[req][1], rows[req][2]))
        .unwrap_or_else(|| panic!("no reply to {:?}: {rows:?}", rows[req]));
    assert_eq!(rows[req][3], "0", "{rows:?}");
    assert_eq!((rep[0], rep[3]), ("03:01:01:01:01:01", "1"), "{rows:?}");
}

#[test]
fn reflect_count_stops_after_n_and_bad_names_exit_2() {
    if !common::require_root("reflect_count_stops_after_n") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let Some(py) = pysoem_python() else { return };
    let v = Veth::new();
    let r = v.reflect(&["--count", "3"]);
    // config_init sends far more than 3 frames; the reflector answers 3 and exits by itself.
    let _ = Command::new(&py)
        .args(["-c", "import sys, pysoem\nm = pysoem.Master()\nm.open(sys.argv[1])\nm.config_init()\nm.close()"])
        .arg(&v.host)
        .output()
        .unwrap();
    let (code, out, _) = r.wait();
    assert_eq!(code, 0);
    assert!(out.contains("answered 3 frames"), "{out}");

    for bad in ["ncnosuch9", "a/b", "eth0:1", "sixteen-bytes-xx"] {
        let o = Command::new(BIN)
            .args(["reflect", "--nic", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("rmp-eval: "), "{err}");
    }
}

#[test]
fn promiscuous_reflect_restores_the_flags() {
    if !common::require_root("promiscuous_reflect_restores_the_flags") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let before = v.peer_flags();
    let r = v.reflect(&["--promisc"]);
    let during = v.peer_flags();
    let (code, _, err) = r.stop();
    let after = v.peer_flags();
    let promisc =
        |f: &str| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).unwrap() & 0x100 != 0;
    assert!(!promisc(&before), "{before}");
    assert!(
        promisc(&during),
        "--promisc puts the interface in promiscuous mode: {during}"
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(before, after, "flags identical before and after");
    // Killed without a chance to clean up, the kernel still drops the socket's promiscuous membership.
    let r = v.reflect(&["--promisc"]);
    assert!(promisc(&v.peer_flags()));
    r.signal(libc::SIGKILL);
    let _ = r.wait();
    assert_eq!(before, v.peer_flags());
}

#[test]
fn flags_guard_puts_back_what_someone_changed() {
    if !common::require_root("flags_guard_puts_back_what_someone_changed") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let before = v.host_flags();
    {
        let _g = rmp_eval::measure::nic::netif::FlagsGuard::new(&v.host).unwrap();
        // Something flips promiscuous mode by the interface flag (as the original did) while the guard lives.
        let o = Command::new("ip")
            .args(["link", "set", &v.host, "promisc", "on"])
            .output()
            .unwrap();
        assert!(o.status.success());
        assert_ne!(v.host_flags(), before);
    }
    assert_eq!(
        v.host_flags(),
        before,
        "dropping the guard restored the flags"
    );
}

/// Opens argv[1] and detects the SubDevices: `n` is what config_init returned. SOEM waits 20 ms for its detection
/// broadcast's answer (EC_TIMEOUTSAFE), then returns -1 (no frame); on a loaded 2-vCPU machine the reflector can
/// answer later, so a detection that got no frame is tried again (up to 5 times). A wrong count is not retried.
const PYSOEM_DETECT: &str = "import sys, pysoem
m = pysoem.Master()
m.open(sys.argv[1])
for _ in range(5):
    n = m.config_init()
    if n != -1:
        break";

// SOEM's frames time out after 2 ms (EC_TIMEOUTRET); on a loaded 2-vCPU machine an answer can come later, so a
// state is read again (up to 5 times) before it counts.
const PYSOEM_STATES: &str = "def states(m, want):
    for _ in range(5):
        m.state_check(want, 2000000)
        m.read_state()
        got = [s.state for s in m.slaves]
        if all(g & 0x0f == want for g in got):
            break
    return [hex(s.state) for s in m.slaves]
print('found', n, len(m.slaves))
print('after config_init', states(m, pysoem.PREOP_STATE))
m.state = pysoem.SAFEOP_STATE
m.write_state()
m.state_check(pysoem.SAFEOP_STATE, 200000)
print('asked for safe-op', states(m, pysoem.PREOP_STATE), [hex(s.al_status) for s in m.slaves])
m.close()";

#[test]
fn pysoem_finds_n_subdevices_that_reach_pre_op_and_refuse_safe_op() {
    if !common::require_root("pysoem_finds_n_subdevices") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let Some(py) = pysoem_python() else { return };
    let v = Veth::new();
    let r = v.reflect(&["--subdevices", "3"]);
    let o = Command::new(&py)
        .args(["-c", &format!("{PYSOEM_DETECT}\n{PYSOEM_STATES}")])
        .arg(&v.host)
        .output()
        .unwrap();
    let (code, out, err) = r.stop();
    assert!(o.status.success(), "pysoem: {}", text(&o.stderr));
    let lines: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        [
            "found 3 3",
            // SOEM's config_init ends by requesting PRE-OP: an ESC with no application gets there.
            "after config_init ['0x2', '0x2', '0x2']",
            // SAFE-OP needs process data: refused with the error flag and AL status code 0x0011.
            "asked for safe-op ['0x12', '0x12', '0x12'] ['0x11', '0x11', '0x11']",
        ]
    );
    assert_eq!(code, 0, "{err}");
    // The station addresses SOEM gave them (0x1001…) are what reflect ends with.
    assert!(
        out.contains("(station:AL status) 4097:0x0012 4098:0x0012 4099:0x0012"),
        "{out}"
    );
}

#[test]
fn two_reflects_on_one_segment_answer_once_each_and_never_storm() {
    if !common::require_root("two_reflects_on_one_segment") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    assert!(
        tshark(),
        "tshark missing: tests/install-deps.sh installs it"
    );
    let b = Bridge::new(2);
    let r0 = b.reflect(0, &[]);
    let r1 = b.reflect(1, &[]);
    // EtherCAT for 5 s (shortened from the 10 s for CI time), raw and UDP for 1 s each.
    for (mode, secs, filter) in [
        ("ecat", 5, "ether proto 0x88a4"),
        ("raw", 1, "ether proto 0x88b5"),
        ("udp", 1, "udp port 7"),
    ] {
        let dir = tempdir();
        let (mut cap, pcap) = capture_for(&b.host, filter, secs + 2, dir.path());
        let o = run_nic(
            &b.host,
            &["--mode", mode, "--duration", &secs.to_string(), "--json"],
        );
        // Stopped as soon as the run is done (SIGINT: tshark writes out what it has).
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(cap.id() as i32, libc::SIGINT) };
        let _ = cap.wait();
        assert!(
            o.status.code().is_some_and(|c| c < 2 || c == 3),
            "{mode}: {}",
            text(&o.stderr)
        );
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let count = j["rtt"]["count"].as_u64().unwrap();
        let rows = read_fields(&pcap, &["eth.src", "frame.len"]);
        // Requests come from the run (its MAC, bit 0x02 clear for EtherCAT); everything else is an answer.
        let host_mac =
            std::fs::read_to_string(format!("/sys/class/net/{}/address", b.host)).unwrap();
        let first = u8::from_str_radix(&host_mac[..2], 16).unwrap();
        let req_src = if mode == "ecat" {
            format!("{:02x}{}", first & !0x02, &host_mac.trim()[2..])
        } else {
            host_mac.trim().to_string()
        };
        let requests = rows
            .iter()
            .filter(|r| r.starts_with(&format!("{req_src};")))
            .count() as u64;
        let answers = rows.len() as u64 - requests;
        // tshark may miss a few frames on a busy machine; the run's own count bounds what was sent.
        let sent = count + j["rtt"]["lost"].as_u64().unwrap();
        assert!(
            requests * 10 >= count * 8 && count > 100 * u64::from(secs),
            "{mode}: {requests} requests captured, {count} measured"
        );
        assert!(
            answers <= 2 * requests + 20 && (rows.len() as u64) <= 3 * sent + 30,
            "{mode}: {answers} answers to {requests} requests ({sent} sent): at most one per reflector, no storm"
        );
        if mode != "udp" {
            // Both answered (broadcast reaches both); the run counted the second answer as a duplicate.
            assert!(
                answers > requests,
                "{mode}: {answers} answers to {requests} requests"
            );
            let dups = j["rtt"]["duplicates"].as_u64().unwrap();
            // (Most: a second answer still in flight when the run stops, or dropped on a busy machine, is not seen.)
            assert!(
                2 * dups >= count,
                "{mode}: {dups} duplicates for {count} replies"
            );
            assert_eq!(j["verdict"], "fail", "{mode}: a frame answered twice fails");
        }
    }
    for r in [r0, r1] {
        let (code, out, err) = r.stop();
        assert_eq!(code, 0, "{err}");
        // Each saw the other's answers and left them alone.
        let n: u64 = out
            .split("UDP (and")
            .nth(1)
            .and_then(|t| t.split("; ").nth(1))
            .and_then(|t| t.split_whitespace().next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        assert!(n > 1000, "answers not answered again: {out}");
    }
}

#[test]
fn reflect_rides_through_a_link_flap_and_reports_it() {
    if !common::require_root("reflect_rides_through_a_link_flap") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let mut r = v.reflect(&[]);
    let run = std::thread::spawn({
        let host = v.host.clone();
        move || run_nic(&host, &["--duration", "3", "--json"])
    });
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let ns = |up: &str| {
        let o = Command::new("ip")
            .args(["-n", &v.ns, "link", "set", &v.peer, up])
            .output()
            .unwrap();
        assert!(o.status.success());
    };
    ns("down");
    std::thread::sleep(std::time::Duration::from_millis(400));
    ns("up");
    let o = run.join().unwrap();
    assert!(r.alive(), "reflect still running after the flap");
    let (code, out, err) = r.stop();
    assert_eq!(code, 0, "{out}{err}");
    let last = out.lines().rev().nth(1).unwrap_or_default();
    assert!(
        last.contains("receive errors") && !last.contains(" 0 receive errors"),
        "the link going down is counted: {out}"
    );
    assert!(last.contains("Network is down"), "{out}");
    // The run saw frames lost during the flap, not "replies stopped".
    assert!(
        o.status.code().is_some_and(|c| c < 2 || c == 3),
        "{}",
        text(&o.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(j["error"].is_null(), "{j}");
    assert!(j["rtt"]["lost"].as_u64().unwrap() > 0, "{}", j["rtt"]);
}

#[test]
fn reflect_counts_a_frame_it_cannot_send_back_and_answers_the_next() {
    if !common::require_root("reflect_counts_a_frame_it_cannot_send_back") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    // The peer's MTU 4 bytes below ours: a veth still delivers a frame up to MTU + 14 + 4 (room for a VLAN tag),
    // but reflect cannot send the same untagged frame back (EMSGSIZE).
    let o = Command::new("ip")
        .args(["-n", &v.ns, "link", "set", &v.peer, "mtu", "1496"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut r = v.reflect(&[]);
    let o = run_nic(&v.host, &["--pktlen", "1514", "--iterations", "20"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "nothing came back: {}",
        text(&o.stderr)
    );
    assert!(r.alive(), "reflect still running after a send error");
    // Frames of the default length are answered again (counted by reflect itself: the run's own verdict on this
    // busy machine is not the point here).
    let _ = run_nic(&v.host, &["--iterations", "50"]);
    let (code, out, err) = r.stop();
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("reflect: answered"))
        .unwrap();
    assert!(
        !line.contains(" 0 send errors") && line.contains("Message too long"),
        "{line}"
    );
    let answered: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(answered >= 1, "the next frames were answered: {line}");
}
