//! `rmp-eval run --nic` against `rmp-eval reflect` on the other end of a veth pair (the peer in its own network
//! namespace), in the three modes, with the frames decoded by tshark. Needs root; CI is root.

mod common;
use common::nic as nic_support;

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
    let hist = rmp_eval::measure::dist::decode(rtt["hdr"].as_str().unwrap()).unwrap();
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
    assert_eq!(labels, ["Sender", "Receiver"]);
    assert_eq!(
        v["series"][0]["count"],
        frames - 1,
        "periods between the sender's wakeups"
    );
}

#[test]
fn ecat_round_trips_through_reflect_and_tshark_sees_our_fields() {
    if !root_or_skip("ecat_round_trips") {
        return;
    }
    let v = Veth::new();
    let flags = v.host_flags();
    let r = v.reflect(&[]);
    // 200 periods: 201 frames; the capture takes the first 40 on the wire (preflight and run, requests and replies).
    let cap = Capture::start(&v.host, "ether proto 0x88a4", 40);
    let o = run_nic(&v.host, &["--iterations", "200", "--json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let j = json(&o);
    assert_all_matched(&j, 201, "ecat");
    assert_eq!(j["rtt"]["wkc"], 1, "one SubDevice");
    let (_, out, _) = r.stop();
    assert!(out.contains("EtherCAT"), "{out}");
    assert_eq!(v.host_flags(), flags, "interface flags as before");

    let rows = cap.fields(
        &[
            "eth.src",
            "ecatf.type",
            "ecat.cmd",
            "ecat.idx",
            "ecat.ado",
            "ecat.subframe.length",
            "ecat.cnt",
        ],
        &[],
    );
    assert!(rows.len() >= 10, "{rows:?}");
    let rows: Vec<Vec<&str>> = rows.iter().map(|r| r.split(';').collect()).collect();
    let (reqs, reps): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r[6] == "0,0");
    let mut last_idx = None;
    for req in &reqs {
        // Request: our locally administered MAC, BRD + NOP, datagram lengths 2 and 12, working counters 0.
        assert_eq!(req[0], "02:52:4d:50:45:01", "{req:?}");
        assert_eq!(req[1], "0x0001", "EtherCAT type 1: commands");
        assert_eq!(
            (req[2], req[4], req[5]),
            ("0x07,0x00", "0x0000,0x0000", "2,12"),
            "{req:?}"
        );
        let idx = req[3].split(',').next().unwrap();
        assert_eq!(
            req[3],
            format!("{idx},{idx}"),
            "both datagrams carry the frame's index"
        );
        let n = u8::from_str_radix(idx.trim_start_matches("0x"), 16).unwrap();
        if let Some(prev) = last_idx {
            assert_eq!(
                n,
                u8::wrapping_add(prev, 1),
                "a new index per frame: {reqs:?}"
            );
        }
        last_idx = Some(n);
    }
    // Replies: the index of a request, BRD counted once by the SubDevice, NOP untouched, bit 0x02 in the MAC.
    assert!(reps.len() >= 4, "{rows:?}");
    for rep in &reps {
        assert_eq!(rep[6], "1,0", "{rep:?}");
        assert_eq!(
            rep[0], "02:52:4d:50:45:01",
            "already locally administered: the 0x02 bit stays set"
        );
        assert!(
            reqs.iter().any(|q| q[3] == rep[3]),
            "reply {rep:?} answers a captured request"
        );
    }
}

#[test]
fn raw_and_udp_modes_with_pktlen() {
    if !root_or_skip("raw_and_udp_modes_with_pktlen") {
        return;
    }
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
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    assert_all_matched(&json(&o), 101, "raw");

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
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    assert_all_matched(&json(&o), 101, "udp");
    let (_, out, _) = r.stop();
    assert!(out.contains(" raw, ") && out.contains(" UDP;"), "{out}");
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
