//! When the frames reached the SubDevice (its distributed clock's latch, read by `run --nic` in EtherCAT mode):
//! against the capture stamps of the same frames on the SubDevice's side, without DC, and with departure jitter
//! injected on the MainDevice's side. Needs root; CI is root.

use std::collections::BTreeMap;

use crate::common;
use common::nic::*;
use common::tshark::*;
use serde_json::Value;

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)))
}

fn labels(v: &Value) -> Vec<String> {
    v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap().to_string())
        .collect()
}

fn arrival(v: &Value) -> &Value {
    &v["rtt"]["arrival"]
}

/// Offsets in our probe frame (with the arrival datagrams): the NOP's mark and the APRD's 8 bytes of data.
const MARK_AT: usize = 40;
const LATCH_AT: usize = 64;

/// From a capture: each request's capture stamp, and each reply's capture stamp and latch (the receive time its
/// APRD of 0x0918 read: the frame before's), by the sequence number in the NOP's mark.
#[allow(clippy::type_complexity)]
fn requests_and_replies(
    frames: &[(u64, Vec<u8>)],
) -> (BTreeMap<u32, u64>, BTreeMap<u32, (u64, u64)>) {
    let (mut req, mut rep) = (BTreeMap::new(), BTreeMap::new());
    for (t, f) in frames {
        if f.len() < LATCH_AT + 8 || &f[MARK_AT..MARK_AT + 4] != b"RMPE" {
            continue;
        }
        let seq = u32::from_be_bytes(f[MARK_AT + 8..MARK_AT + 12].try_into().unwrap());
        if f[6] & 0x02 != 0 {
            let latch = u64::from_le_bytes(f[LATCH_AT..LATCH_AT + 8].try_into().unwrap());
            rep.insert(seq, (*t, latch));
        } else {
            req.insert(seq, *t);
        }
    }
    (req, rep)
}

fn quantile(v: &mut [i64], q: f64) -> i64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn arrival_latches_agree_with_the_capture_on_the_subdevice_side() {
    if !common::require_root("arrival_latches_agree_with_the_capture") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    // Both directions on the reflector's end, in its namespace: 400 of the ~2 × 301 frames.
    let cap = Capture::start_in(&v.ns, &v.peer, "ether proto 0x88a4", 400);
    let o = run_nic(&v.host, &["--iterations", "300", "--json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let j = json(&o);
    r.stop();
    assert_eq!(j["rtt"]["arrival"]["measured"], true, "{}", j["rtt"]);
    assert_eq!(labels(&j), ["Sender", "Receiver", "Arrival"]);
    let frames = cap.frames();
    let (req, rep) = requests_and_replies(&frames);
    // Frame k's latch came back with the reply to k+1; consecutive frames give one interval each way.
    let latch: BTreeMap<u32, u64> = rep
        .iter()
        .map(|(&seq, &(_, l))| (seq.wrapping_sub(1), l))
        .filter(|(_, l)| *l != 0)
        .collect();
    let mut diffs = Vec::new();
    for (&k, &l) in &latch {
        let (Some(&lp), Some(&t), Some(&tp)) = (
            latch.get(&k.wrapping_sub(1)),
            req.get(&k),
            req.get(&k.wrapping_sub(1)),
        ) else {
            continue;
        };
        diffs.push((l as i64 - lp as i64) - (t as i64 - tp as i64));
    }
    assert!(
        diffs.len() >= 100,
        "{} intervals matched of {} frames",
        diffs.len(),
        frames.len()
    );
    let mut abs: Vec<i64> = diffs.iter().map(|d| d.abs()).collect();
    let (p50, p99, max) = (
        quantile(&mut abs, 0.5),
        quantile(&mut abs, 0.99),
        quantile(&mut abs, 1.0),
    );
    eprintln!(
        "latched vs captured arrival intervals, |difference| ns: p50 {p50}, p99 {p99}, max {max} ({} intervals)",
        abs.len()
    );
    // reflect latches the kernel's receive stamp of the frame, the capture stamps the same frame on the same
    // interface: the same time but for the capture file's resolution. Per frame a generous bound, the median
    // well inside it.
    assert!(
        max < 1_000_000,
        "a latched interval 1 ms off the capture's: {max} ns"
    );
    assert!(p50 <= 2_000, "median |difference| {p50} ns");
}

#[test]
fn without_distributed_clocks_arrival_is_not_measured_and_the_run_is_otherwise_unchanged() {
    if !common::require_root("without_distributed_clocks_arrival_is_not_measured") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    // A SubDevice without DC: the read of 0x0918 keeps WKC 0.
    let r = v.reflect(&["--no-dc"]);
    let o = run_nic(&v.host, &["--iterations", "100", "--json"]);
    r.stop();
    let j = json(&o);
    let a = arrival(&j);
    assert_eq!(a["measured"], false, "{a}");
    assert!(a["why_not"].as_str().unwrap().contains("WKC 0"), "{a}");
    assert_eq!(labels(&j), ["Sender", "Receiver"]);
    assert_eq!(
        (j["rtt"]["count"].as_u64(), j["rtt"]["wkc"].as_u64()),
        (Some(frames_sent(&j)), Some(1))
    );
    assert_eq!(j["rtt"]["wkc_errors"], 0, "{}", j["rtt"]);
    // The fault reflector (written apart) counts every datagram but latches nothing: reads 0.
    let r = v.faulty(&[]);
    let o = run_nic(&v.host, &["--iterations", "100", "--json"]);
    r.stop();
    let j = json(&o);
    let a = arrival(&j);
    assert!(a["why_not"].as_str().unwrap().contains("read 0"), "{a}");
    assert_eq!(labels(&j), ["Sender", "Receiver"]);
    // Left out: the frames of earlier versions, 60 bytes.
    let r = v.reflect(&[]);
    let o = run_nic(&v.host, &["--iterations", "50", "--json", "--no-arrival"]);
    r.stop();
    let j = json(&o);
    assert!(
        arrival(&j)["why_not"]
            .as_str()
            .unwrap()
            .contains("--no-arrival")
    );
    assert_eq!(arrival(&j)["frame_bytes_added"], 0);
    assert_eq!(labels(&j), ["Sender", "Receiver"]);
}

fn series<'a>(v: &'a Value, label: &str) -> &'a Value {
    v["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == label)
        .unwrap_or_else(|| panic!("no {label} series: {v}"))
}

fn us(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn median(mut v: Vec<i64>) -> i64 {
    assert!(!v.is_empty());
    quantile(&mut v, 0.5)
}

/// The injected delay, µs, and the period (the default, 1000 µs).
const DELAY_US: u32 = 400;
const PERIOD_NS: i64 = 1_000_000;

/// `run --nic` on veth against `reflect`, each frame whose sequence number is a multiple of `every` sent
/// DELAY_US after its cycle's start (the `test-seams` build's RMP_EVAL_TEST_SEND_DELAY; None: no delay).
fn run_delayed(v: &Veth, every: Option<u32>) -> Value {
    let mut c = nic_run(
        &v.host,
        &["--iterations", "2000", "--json", "--sync0-shift", "2000"],
    );
    if let Some(n) = every {
        c.env("RMP_EVAL_TEST_SEND_DELAY", format!("{n}:{DELAY_US}"));
    }
    let o = c.output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let j = json(&o);
    assert_eq!(arrival(&j)["measured"], true, "{}", arrival(&j));
    j
}

/// A delay injected on the MainDevice's side, after the sender's wakeup and before the frame leaves (as a qdisc,
/// a driver's ring or DMA delays it): every third frame 400 µs late. Judged against the injected pattern itself,
/// never against a time of this machine: the latches the run read (the replies, captured on the MainDevice's
/// interface) put +400 µs into exactly the intervals that end at a delayed frame and −400 µs into those that start
/// at one, 0 elsewhere; the run's Arrival series carries it where its Sender series does not. Then every frame
/// late: the SYNC0 margin shrinks by the delay, the intervals stay as they were.
#[test]
fn an_injected_departure_delay_shows_in_exactly_the_delayed_frames_arrivals() {
    if !common::require_root("an_injected_departure_delay_shows_in_exactly_the_delayed_frames") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let calm = run_delayed(&v, None);
    // Both directions on the MainDevice's end: ~2 × 2,000 frames, fewer than the run's to end promptly.
    let cap = Capture::start(&v.host, "ether proto 0x88a4", 3600);
    let third = run_delayed(&v, Some(3));
    let every = run_delayed(&v, Some(1));
    r.stop();
    let d = i64::from(DELAY_US) * 1000;
    let (req, rep) = requests_and_replies(&cap.frames());
    // Frame k's latch came back with the reply to k+1.
    let latch: BTreeMap<u32, u64> = rep
        .iter()
        .map(|(&s, &(_, l))| (s.wrapping_sub(1), l))
        .collect();
    let mut into: [Vec<i64>; 3] = Default::default();
    let mut rtt: [Vec<i64>; 3] = Default::default();
    for (&k, &l) in &latch {
        if let Some(&lp) = latch.get(&k.wrapping_sub(1)) {
            into[(k % 3) as usize].push(l as i64 - lp as i64 - PERIOD_NS);
        }
        if let (Some(&t), Some(&(back, _))) = (req.get(&k), rep.get(&k)) {
            rtt[(k % 3) as usize].push(back as i64 - t as i64);
        }
    }
    assert!(
        into.iter().all(|c| c.len() >= 300),
        "intervals per class: {:?}",
        into.each_ref().map(Vec::len)
    );
    let got = into.map(median);
    eprintln!(
        "median arrival interval deviation (ns) into frames k % 3 = 0, 1, 2: {got:?}; injected {d}"
    );
    for (r, want) in [(0, d), (1, -d), (2, 0)] {
        assert!(
            (got[r] - want).abs() < d / 2,
            "intervals into frames k % 3 = {r}: median {} ns, injected pattern {want} ns (all: {got:?})",
            got[r]
        );
    }
    // Printed, not compared: the capture sees a request as it leaves, after the delay, so its round trip cannot
    // hold the delay; what differs between the classes is the reflector's turnaround, hundreds of µs under load.
    let rtt = rtt.map(median);
    eprintln!("median captured round trip (ns) of frames k % 3 = 0, 1, 2: {rtt:?}");
    // The run's own series: two intervals in three off by the delay, so the Arrival's median |deviation| is it;
    // the sender's wakeup, read before the delay, does not move.
    let (arr, snd) = (
        us(&series(&third, "Arrival")["p50_us"]),
        us(&series(&third, "Sender")["p50_us"]),
    );
    let calm_arr = us(&series(&calm, "Arrival")["p50_us"]);
    eprintln!("median |deviation| (us): Arrival {calm_arr} → {arr}, Sender {snd}");
    let half = f64::from(DELAY_US) / 2.0;
    assert!(
        (arr - f64::from(DELAY_US)).abs() < half,
        "Arrival p50 {arr} us"
    );
    assert!(
        snd < half && calm_arr < half,
        "Sender {snd}, calm Arrival {calm_arr}"
    );
    // Every frame late by the delay: the arrival after the cycle's start (SYNC0's margin) moves by it, the
    // intervals between arrivals do not. The round trips are printed, not compared: on veth their median moves
    // by hundreds of µs from one run to the next (the frame-by-frame comparison above is within one run).
    let after = |j: &Value| us(&arrival(j)["sync0"]["after_start"]["p50_us"]);
    let rtt_p50 = |j: &Value| us(&j["rtt"]["p50_us"]);
    let moved = after(&every) - after(&calm);
    eprintln!(
        "median arrival after the cycle's start: {} → {} us; median round trip {} → {} us",
        after(&calm),
        after(&every),
        rtt_p50(&calm),
        rtt_p50(&every)
    );
    assert!(
        (moved - f64::from(DELAY_US)).abs() < half,
        "moved {moved} us"
    );
    assert!(us(&series(&every, "Arrival")["p50_us"]) < half);
}

/// `--sync0-shift` on veth against `reflect`'s distributed clock: the arrivals after each cycle's start, drift
/// removed, judged against a shift no frame can meet (0: every judged frame late) and one every frame meets.
#[test]
fn the_sync0_margin_judges_every_frame_against_the_shift() {
    if !common::require_root("the_sync0_margin_judges_every_frame_against_the_shift") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let run = |shift: &str| {
        let o = run_nic(
            &v.host,
            &["--iterations", "1500", "--json", "--sync0-shift", shift],
        );
        let j = json(&o);
        let s = arrival(&j)["sync0"].clone();
        assert!(s.is_object(), "no sync0: {}", arrival(&j));
        eprintln!("--sync0-shift {shift} on veth: {s}");
        (j, s)
    };
    let (j, s) = run("0");
    let frames = s["frames"].as_u64().unwrap();
    // 8 blocks of 128 latches settle the clocks' line; the rest of the ~1,500 are judged.
    assert_eq!(s["settling"], 1024, "{s}");
    assert!(
        frames > 0 && frames + 1024 <= arrival(&j)["latches"].as_u64().unwrap(),
        "{s}"
    );
    // A frame reaches the SubDevice after its scheduled send: every arrival after the start, so with SYNC0 at
    // the cycle's start every frame judged was late.
    let a = &s["after_start"];
    assert!(a["min_us"].as_f64().unwrap() > 0.0, "{s}");
    assert_eq!(s["late"], frames, "{s}");
    let max = a["max_us"].as_f64().unwrap();
    assert_eq!(s["smallest_shift_us"].as_f64().unwrap(), max.ceil(), "{s}");
    assert!(s["min_margin_us"].as_f64().unwrap() < 0.0, "{s}");
    assert_eq!(s["late_rate"]["cycles"], frames, "{s}");
    // A shift of a second: no frame of this run came that late (the run stops on a reply a second late).
    let (_, s) = run("1000000");
    assert_eq!(s["late"], 0, "{s}");
    assert!(s["min_margin_us"].as_f64().unwrap() > 0.0, "{s}");
    r.stop();
    // Without DC: not measured, and no margin said.
    let r = v.reflect(&["--no-dc"]);
    let o = run_nic(
        &v.host,
        &["--iterations", "100", "--json", "--sync0-shift", "500"],
    );
    r.stop();
    let j = json(&o);
    assert_eq!(arrival(&j)["measured"], false);
    assert!(arrival(&j).get("sync0").is_none(), "{}", arrival(&j));
    // With the arrival datagrams left out there is nothing to judge: refused in one line.
    let o = run_nic(
        &v.host,
        &["--iterations", "10", "--no-arrival", "--sync0-shift", "500"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}
