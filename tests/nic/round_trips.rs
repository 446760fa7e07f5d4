//! `rmp-eval run --nic` against `rmp-eval reflect` on the other end of a veth pair (the peer in its own network
//! namespace), in the three modes, with the frames decoded by tshark. Needs root; CI is root.

use crate::common;
use common::nic as nic_support;

use common::tshark::*;
use nic_support::*;
use serde_json::Value;

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)))
}

/// Every frame answered, counted once, with a round-trip time between 0 and one second.
fn assert_all_matched(v: &Value, frames: u64, mode: &str) {
    let rtt = &v["rtt"];
    assert_eq!(v["mode"], mode);
    assert_eq!(rtt["count"], frames, "{rtt}");
    assert_eq!(rtt["lost"], 0, "{rtt}");
    assert_eq!(rtt["unmatched"], 0, "{rtt}");
    assert_eq!(
        rtt["timestamps"], "software",
        "veth has no hardware timestamps"
    );
    let (min, p50, max) = (
        rtt["min_us"].as_f64().unwrap(),
        rtt["p50_us"].as_f64().unwrap(),
        rtt["max_us"].as_f64().unwrap(),
    );
    assert!(0.0 < min && min <= p50 && p50 <= max && max < 1e6, "{rtt}");
    let hist = rmp_eval::measure::result::dist::decode(rtt["hdr"].as_str().unwrap()).unwrap();
    assert_eq!(
        hist.len(),
        frames,
        "the stored histogram holds every round trip"
    );
    // Kernel stamps at both ends measured the round trips, not the sender's clock (the fallback).
    let st = &rtt["stamps"];
    let (sw, fallback) = (
        st["software"].as_u64().unwrap(),
        st["send_time"].as_u64().unwrap(),
    );
    assert_eq!(sw + fallback, frames, "{st}");
    assert!(
        sw >= frames / 2,
        "TX stamps read back from the error queue: {st}"
    );
    assert_eq!(st["hardware_supported"], false);
    let labels: Vec<&str> = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    // EtherCAT through reflect (a SubDevice with DC): the frames' arrival at it too.
    if mode == "ecat" {
        assert_eq!(labels, ["Sender", "Receiver", "Arrival"]);
    } else {
        assert_eq!(labels, ["Sender", "Receiver"]);
    }
    assert_eq!(
        v["series"][0]["count"],
        frames - 1,
        "periods between the sender's wakeups"
    );
}

#[test]
fn ecat_round_trips_through_reflect_and_tshark_sees_our_fields() {
    if !common::require_root("ecat_round_trips") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let flags = v.host_flags();
    let r = v.reflect(&[]);
    // 200 periods: up to 201 frames (one a wakeup, missed periods none); the capture takes the first 40 on the wire (preflight and run, requests and replies).
    let cap = Capture::start(&v.host, "ether proto 0x88a4", 40);
    let o = run_nic(&v.host, &["--iterations", "200", "--json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let j = json(&o);
    assert_all_matched(&j, frames_sent(&j), "ecat");
    assert_eq!(j["rtt"]["wkc"], 1, "one SubDevice");
    let (_, out, _) = r.stop();
    assert!(out.contains("EtherCAT"), "{out}");
    assert_eq!(v.host_flags(), flags, "interface flags as before");
    // The source MAC is the interface's, with bit 0x02 clear in a request and set in the answer (as an ESC does).
    let mac = std::fs::read_to_string(format!("/sys/class/net/{}/address", v.host)).unwrap();
    let first = u8::from_str_radix(&mac[..2], 16).unwrap();
    let req_src = format!("{:02x}{}", first & !0x02, &mac.trim()[2..]);
    let rep_src = format!("{:02x}{}", first | 0x02, &mac.trim()[2..]);

    let rows = cap.fields(
        &[
            "eth.src",
            "ecatf.type",
            "ecat.cmd",
            "ecat.idx",
            "ecat.ado",
            "ecat.subframe.length",
            "ecat.cnt",
            "frame.len",
        ],
        &[],
    );
    assert!(rows.len() >= 10, "{rows:?}");
    let rows: Vec<Vec<&str>> = rows.iter().map(|r| r.split(';').collect()).collect();
    let (reqs, reps): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r[6] == "0,0,0,0");
    let mut idxs = Vec::new();
    for req in &reqs {
        // Request: the interface's MAC (bit 0x02 clear), BRD + NOP, then the arrival datagrams (APRD of 0x0918
        // before BWR to 0x0900), datagram lengths 2, 12, 8 and 4, working counters 0.
        assert_eq!(req[0], req_src, "{req:?}");
        assert_eq!(
            req[7], "90",
            "54 bytes of EtherCAT and 36 of arrival datagrams: {req:?}"
        );
        assert_eq!(req[1], "0x0001", "EtherCAT type 1: commands");
        assert_eq!(
            (req[2], req[4], req[5]),
            (
                "0x07,0x00,0x01,0x08",
                "0x0000,0x0000,0x0918,0x0900",
                "2,12,8,4"
            ),
            "{req:?}"
        );
        let idx = req[3].split(',').next().unwrap();
        assert_eq!(
            req[3],
            format!("{idx},{idx},{idx},{idx}"),
            "every datagram carries the frame's index"
        );
        idxs.push(u8::from_str_radix(idx.trim_start_matches("0x"), 16).unwrap());
    }
    // The capture is whole (live before the run: common::tshark's sentinel), so each request carries the next
    // index.
    assert!(
        idxs.windows(2).all(|w| w[1] == w[0].wrapping_add(1)),
        "the next index in every frame: {idxs:02x?}"
    );
    // Replies: the index of a request, BRD counted once by the SubDevice, NOP untouched, the read of the
    // receive time and the latching write counted once, bit 0x02 in the MAC.
    assert!(reps.len() >= 4, "{rows:?}");
    for rep in &reps {
        assert_eq!(rep[6], "1,0,1,1", "{rep:?}");
        assert_eq!(rep[0], rep_src, "{rep:?}");
    }
    // Each answers a captured request.
    let orphans = reps
        .iter()
        .filter(|rep| !reqs.iter().any(|q| q[3] == rep[3]))
        .count();
    assert_eq!(orphans, 0, "replies to no captured request: {rows:?}");
}

#[test]
fn raw_and_udp_modes_with_pktlen() {
    if !common::require_root("raw_and_udp_modes_with_pktlen") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let o = run_nic(
        &v.host,
        &[
            "--mode",
            "raw",
            "--pktlen",
            "128",
            "--iterations",
            "100",
            "--json",
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let j = json(&o);
    assert_all_matched(&j, frames_sent(&j), "raw");

    let cap = Capture::start(&v.host, "udp port 7", 20);
    let o = run_nic(
        &v.host,
        &[
            "--mode",
            "udp",
            "--pktlen",
            "200",
            "--iterations",
            "100",
            "--json",
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let j = json(&o);
    assert_all_matched(&j, frames_sent(&j), "udp");
    let (_, out, _) = r.stop();
    assert!(out.contains(" raw, ") && out.contains(" UDP (and"), "{out}");
    // tshark checks both checksums of the frames we built without an IP stack, and of the echoes.
    let rows = cap.fields(
        &[
            "frame.len",
            "udp.srcport",
            "udp.dstport",
            "ip.checksum.status",
            "udp.checksum.status",
        ],
        &[
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ],
    );
    assert_eq!(rows.len(), 20, "{rows:?}");
    // Requests (length, ports, IPv4 and UDP checksums good) and their echoes, in whatever order the preflight's
    // first exchanges took.
    for r in &rows {
        assert!(r == "200;34997;7;1;1" || r == "200;7;34997;1;1", "{rows:?}");
    }
    assert!(
        rows.iter().any(|r| r == "200;7;34997;1;1"),
        "an echo was captured: {rows:?}"
    );
    let o = run_nic(&v.host, &["--mode", "udp", "--pktlen", "30"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--pktlen below the UDP minimum is refused"
    );
}

/// The run's JSON and exit code (0 or 1: it measured), with `extra` arguments.
fn measured(iface: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let o = run_nic(iface, &args);
    let code = o.status.code().unwrap_or(-1);
    assert!(matches!(code, 0 | 1 | 3), "{}", text(&o.stderr));
    (code, json(&o))
}

#[test]
fn working_counter_errors_fail_the_run() {
    if !common::require_root("working_counter_errors_fail_the_run") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    // A chain of two where every tenth answer comes back with WKC 1: one SubDevice missed the datagram.
    let r = v.faulty(&["--wkc", "2", "--wkc-fault-every", "10"]);
    let (code, j) = measured(&v.host, &["--iterations", "300"]);
    let (_, out, _) = r.stop();
    let rtt = &brief(&j["rtt"]);
    assert_eq!(
        rtt["expected_wkc"], 2,
        "learned from the preflight's replies: {rtt}"
    );
    let errors = rtt["wkc_errors"].as_u64().unwrap();
    assert!((25..=31).contains(&errors), "{rtt} {out}");
    assert_eq!(rtt["wkc_seen"]["1"].as_u64(), Some(errors), "{rtt}");
    assert_eq!(
        rtt["wkc_seen"]["2"].as_u64().unwrap() + errors,
        rtt["count"].as_u64().unwrap(),
        "{rtt}"
    );
    assert_eq!((code, &j["verdict"]), (1, &Value::from("fail")));

    // --expect-wkc against a reflect standing in for three: right, then wrong.
    let r = v.reflect(&["--subdevices", "3"]);
    let (_, j) = measured(&v.host, &["--iterations", "50", "--expect-wkc", "3"]);
    let rtt = &brief(&j["rtt"]);
    assert_eq!(
        (rtt["expected_wkc"].as_u64(), rtt["wkc_errors"].as_u64()),
        (Some(3), Some(0)),
        "{rtt}"
    );
    assert_eq!(rtt["wkc_seen"]["3"], rtt["count"], "{rtt}");
    assert_eq!(
        rtt["esc"],
        serde_json::json!({"type": 0x52, "revision": 1}),
        "which device answered"
    );
    let (o, j) = run_nic_with_result(&v.host, &["--iterations", "50", "--expect-wkc", "2"]);
    let _ = r.stop();
    assert_eq!(o.status.code(), Some(1));
    let report = text(&o.stdout);
    let n = frames_sent(&j);
    assert!(
        report.contains(&format!(
            "Working counter: expected 2, {n} error(s); seen 3: {n}"
        )),
        "{report}"
    );
    // The verdict is wrapped at 80 columns, and where depends on how many periods came late before it.
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("{n} working counter error(s)")),
        "{report}"
    );
}

#[test]
fn late_replies_are_missed_cycles() {
    if !common::require_root("late_replies_are_missed_cycles") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.faulty(&["--delay-ms", "5"]);
    let (o, j) = run_nic_with_result(&v.host, &["--iterations", "200"]);
    let report = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{report}{}", text(&o.stderr));
    assert!(
        report.contains(&format!(
            "{} reply(ies) after the 1000 us budget: for a MainDevice each is a missed cycle",
            frames_sent(&j)
        )),
        "every reply is 5 ms late: {report}"
    );
    // With a budget of 200 ms the same replies are (mostly: the Python reflector's queue can stall) in time.
    let (_, j) = measured(&v.host, &["--iterations", "200", "--budget-us", "200000"]);
    let _ = r.stop();
    let rtt = brief(&j["rtt"]);
    assert!(rtt["late"].as_u64().unwrap() < 20, "{rtt}");
    assert_eq!(rtt["budget_us"], 200000.0);
    assert!(rtt["min_us"].as_f64().unwrap() > 4000.0, "{rtt}");
}

#[test]
fn frames_not_sent_are_not_lost_frames() {
    if !common::require_root("frames_not_sent_are_not_lost_frames") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    // The link goes down only once the sender measures (its RT thread started, after the preflight): a link down
    // during the preflight would be "no SubDevice answered" instead, however long the machine took to get there.
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("threads");
    let mut cmd = nic_run(&v.host, &["--duration", "3", "--json"]);
    cmd.env("RMP_EVAL_TEST_THREADS_FILE", &started);
    let run = std::thread::spawn(move || cmd.output().unwrap());
    while !started.exists() {
        assert!(
            !run.is_finished(),
            "the run ended before its RT thread started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    // Our own interface down for 300 ms mid-run: send() fails with ENETDOWN, nothing reaches the wire.
    let ip = |s: &str| {
        std::process::Command::new("ip")
            .args(["link", "set", &v.host, s])
            .status()
            .unwrap()
    };
    assert!(ip("down").success());
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(ip("up").success());
    let o = run.join().unwrap();
    let _ = r.stop();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let j = json(&o);
    let rtt = &brief(&j["rtt"]);
    let not_sent = rtt["not_sent"].as_u64().unwrap();
    assert!(not_sent > 100, "{rtt}");
    assert!(
        rtt["lost"].as_u64().unwrap() < not_sent,
        "not sent is not lost: {rtt}"
    );
}

#[test]
fn pktlen_over_the_mtu_is_refused_before_anything_is_sent() {
    if !common::require_root("pktlen_over_the_mtu") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let ok = std::process::Command::new("ip")
        .args(["link", "set", &v.host, "mtu", "1000"])
        .status()
        .unwrap();
    assert!(ok.success());
    for mode in ["ecat", "raw", "udp"] {
        let o = run_nic(
            &v.host,
            &["--mode", mode, "--pktlen", "1200", "--iterations", "10"],
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(
            err.trim(),
            format!(
                "rmp-eval: --pktlen 1200: {mode} frames are 60 to 1014 bytes here (the interface MTU 1000 + 14)"
            )
        );
    }
    let help = text(
        &std::process::Command::new(BIN)
            .args(["run", "--help"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(
        help.split_whitespace().collect::<Vec<_>>().join(" ").contains(
            "in every mode (Ethernet header included, FCS not): 60 (the default) to the interface MTU + 14"
        ),
        "{help}"
    );
}

#[test]
fn udp_mode_reaches_a_stock_rfc_862_echo_service() {
    if !common::require_root("udp_mode_reaches_a_stock_echo") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    // The peer: an ordinary host with an address and an RFC 862 echo on UDP port 7 (Python's socket module, the
    // kernel's UDP/IP and ARP); nothing of ours.
    let ok = std::process::Command::new("ip")
        .args([
            "-n",
            &v.ns,
            "addr",
            "add",
            "192.168.77.2/24",
            "dev",
            &v.peer,
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    let mut echo = v.in_ns("python3");
    echo.args(["-c", RFC862_ECHO]);
    let mut echo = Kill(echo.spawn().unwrap());
    // Python may take seconds to start on a loaded machine: wait until the socket on port 7 is bound.
    let bound = || {
        let udp = v.in_ns("cat").arg("/proc/net/udp").output().unwrap();
        String::from_utf8_lossy(&udp.stdout).lines().any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|a| a.ends_with(":0007"))
        })
    };
    let t0 = std::time::Instant::now();
    while !bound() {
        assert!(
            t0.elapsed().as_secs() < 20,
            "the echo service never bound port 7"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (_, j) = measured(
        &v.host,
        &[
            "--mode",
            "udp",
            "--local-ip",
            "192.168.77.1",
            "--peer-ip",
            "192.168.77.2",
            "--iterations",
            "300",
        ],
    );
    assert!(
        echo.0.try_wait().unwrap().is_none(),
        "the echo service still serves"
    );
    let rtt = &brief(&j["rtt"]);
    assert!(rtt["count"].as_u64().unwrap() >= 295, "{rtt}");
    // A peer address nobody has: ARP finds no one, said in one line, exit 2.
    let o = run_nic(
        &v.host,
        &[
            "--mode",
            "udp",
            "--local-ip",
            "192.168.77.1",
            "--peer-ip",
            "192.168.77.9",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("rmp-eval: no ARP answer from 192.168.77.9 on"),
        "{}",
        text(&o.stderr)
    );
}

const RFC862_ECHO: &str = "import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('0.0.0.0', 7))
while True:
    d, a = s.recvfrom(2048)
    s.sendto(d, a)";

/// The round-trip summary without its histogram (which can be megabytes), for assertion messages.
fn brief(rtt: &Value) -> Value {
    let mut r = rtt.clone();
    if let Some(o) = r.as_object_mut() {
        o.remove("histogram");
        o.remove("hdr");
    }
    r
}

struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn hardware_timestamp_records_of_a_crashed_run_are_restored_by_the_next() {
    if !common::require_root("hardware_timestamp_records") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    // What a run killed with -9 after switching hardware timestamps on leaves behind (its record of the old setting),
    // in a records directory of the run's own (`with_records_of_its_own`).
    let mine = tempfile::Builder::new()
        .prefix("nc-rec-")
        .tempdir()
        .unwrap();
    let rec = mine.path().join(key(&v.host));
    std::fs::write(&rec, "0 0 0\n").unwrap();
    let mut cmd = nic_run(&v.host, &["--iterations", "20"]);
    with_records_of_its_own(
        &mut cmd,
        rmp_eval::measure::nic::tstamp::RECORD_DIR,
        mine.path(),
    );
    let o = cmd.output().unwrap();
    let _ = r.stop();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let said = format!("{}{}", text(&o.stdout), text(&o.stderr));
    // veth has no hardware timestamps: the restore is tried, said, and the record consumed.
    assert!(
        said.contains(&format!("hardware timestamping of {}", v.host)),
        "{said}"
    );
    assert!(!rec.exists(), "record consumed");
}
