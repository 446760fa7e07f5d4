//! `run --nic IF --trace`: the receive path of the replies read back from the kernel's trace of every CPU, on a
//! veth pair whose other end is in a namespace of our own with `rmp-eval reflect` pinned to one CPU. Where NET_RX
//! runs is moved by the test (RPS on our end or not), and the JSON must follow it: (a) no RPS — the reply is
//! handed to the stack and NET_RX runs on the reflector's CPU, in its send; the receiver is woken from there and
//! runs on the RT core; (b) RPS of our end = the RT core — NET_RX moves to the RT core and is blamed on `rps`.
//! Live machine: tracefs is mounted if needed and put back; the test takes the live-test lock.

use crate::common;

use serde_json::Value;

/// The RT core rmp-eval picks by default: the last online CPU; the reflector goes on another.
fn cpus() -> (usize, usize) {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpus = rmp_eval::parse::cpulist::parse(online.trim()).unwrap();
    let core = *cpus.iter().max().unwrap();
    let other = *cpus.iter().find(|&&c| c != core).expect("two CPUs");
    (core, other)
}

fn tracefs_state() -> (bool, String) {
    let mounted = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some("/sys/kernel/tracing"));
    let clock = std::fs::read_to_string("/sys/kernel/tracing/trace_clock").unwrap_or_default();
    (mounted, clock)
}

/// One traced NIC run against a reflector pinned to `other`; RPS of our end set to `rps` first when given.
fn traced_run(v: &common::nic::Veth, core: usize, other: usize, rps: Option<usize>) -> Value {
    if let Some(cpu) = rps {
        std::fs::write(
            format!("/sys/class/net/{}/queues/rx-0/rps_cpus", v.host),
            format!("{:x}", 1u64 << cpu),
        )
        .unwrap();
    }
    let mut c = v.in_ns("taskset");
    c.args([
        "-c",
        &other.to_string(),
        common::nic::BIN,
        "reflect",
        "--nic",
        &v.peer,
    ]);
    let refl = common::nic::Reflector::start(c, "reflect: answering");
    let o = common::nic::nic_run(&v.host, &["--json", "--duration", "2"])
        .args(["--core", &core.to_string(), "--trace", "--break-us", "1"])
        .output()
        .unwrap();
    drop(refl);
    common::run::assert_measured(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The receive paths of the kept replies that the trace shows whole (a window can miss events when the
/// kernel drops some under load: those are left out, the rest must agree).
fn whole_paths(doc: &Value) -> Vec<&Value> {
    let t = &doc["trace"];
    let ex = t["explained"].as_array().unwrap();
    assert!(!ex.is_empty(), "no reply kept: {t}");
    let whole: Vec<&Value> = ex
        .iter()
        .map(|e| &e["path"])
        .filter(|p| {
            ["netif_rx", "net_rx", "received", "woken", "running"]
                .iter()
                .all(|k| p[k].is_object())
        })
        .collect();
    assert!(!whole.is_empty(), "no whole receive path among {ex:#?}");
    whole
}

#[test]
fn the_receive_path_follows_where_net_rx_runs() {
    if !common::require_root("the_receive_path_follows_where_net_rx_runs") {
        return;
    }
    let _lock = common::lock::LIVE.alone();
    let (core, other) = cpus();
    let before = tracefs_state();
    let v = common::nic::Veth::new();

    // (a) No RPS: the reflector's send hands the reply to our end (netif_rx) and runs NET_RX itself, on its CPU.
    let doc = traced_run(&v, core, other, None);
    assert_eq!(tracefs_state(), before, "tracefs put back as it was");
    let t = &doc["trace"];
    assert_eq!(t["nic"], v.host.as_str());
    // Every CPU's binary pages, merged in time order (x86_64: every event decodable).
    if cfg!(target_arch = "x86_64") {
        assert_eq!(t["reader"], "raw", "{t}");
    }
    for p in whole_paths(&doc) {
        assert_eq!(p["nic"], v.host.as_str());
        assert_eq!(p["netif_rx"]["cpu"], other, "{p:#}");
        assert_eq!(p["net_rx"]["cpu"], other, "{p:#}");
        assert_eq!(p["received"]["cpu"], other, "{p:#}");
        // Woken from the reflector's CPU, to run on the RT core (the receiver's default CPU).
        assert_eq!(p["woken"]["cpu"], other, "{p:#}");
        assert_eq!(p["woken_cpu"], core, "{p:#}");
        assert_eq!(p["running"]["cpu"], core, "{p:#}");
        assert_eq!(p["running"]["name"], "rmp-eval-recv");
        assert!(p["irq"].is_null(), "a veth has no IRQ: {p:#}");
        let names: Vec<&str> = p["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["wire_and_peer", "kernel_receive", "wakeup", "receiver"]
        );
        // NET_RX on a housekeeping CPU is not interference: no fix step is named for it.
        assert_eq!(p["phases"][1]["remedy"]["kind"], "none", "{p:#}");
    }
    let raw = std::fs::read_to_string(t["file"].as_str().unwrap()).unwrap();
    assert!(raw.contains(&format!("netif_receive_skb: dev={} ", v.host)));
    assert!(raw.contains("rmp-eval c="));

    // (b) RPS of our end = the RT core: the frame still enters on the reflector's CPU, NET_RX moves to the core.
    let doc = traced_run(&v, core, other, Some(core));
    assert_eq!(tracefs_state(), before, "tracefs put back as it was");
    let whole = whole_paths(&doc);
    for p in &whole {
        assert_eq!(p["netif_rx"]["cpu"], other, "{p:#}");
        assert_eq!(p["net_rx"]["cpu"], core, "{p:#}");
        assert_eq!(p["received"]["cpu"], core, "{p:#}");
        assert_eq!(p["phases"][1]["remedy"]["id"], "rps", "{p:#}");
    }
    let ex = doc["trace"]["explained"].as_array().unwrap();
    assert!(
        ex.iter()
            .any(|e| e["culprits"].as_array().unwrap().iter().any(|c| {
                c["kind"] == "softirq"
                    && c["name"] == "NET_RX"
                    && c["cpu"] == core
                    && c["remedy"]["id"] == "rps"
            })),
        "NET_RX on CPU {core} not blamed on rps: {ex:#?}"
    );
}

#[test]
fn a_request_with_no_reply_is_shown_leaving_and_nothing_arriving() {
    if !common::require_root("a_request_with_no_reply_is_shown_leaving_and_nothing_arriving") {
        return;
    }
    let _lock = common::lock::LIVE.alone();
    let (core, _) = cpus();
    let before = tracefs_state();
    let v = common::nic::Veth::new();
    // Every 25th request is swallowed by the peer: it leaves, and nothing comes back for it.
    let r = v.faulty(&["--drop-every", "25"]);
    let o = common::nic::nic_run(&v.host, &["--json", "--duration", "2"])
        .args(["--core", &core.to_string(), "--trace"])
        .output()
        .unwrap();
    let _ = r.stop();
    assert_eq!(tracefs_state(), before, "tracefs put back as it was");
    let code = o.status.code();
    assert!(
        matches!(code, Some(0..=3)),
        "run exit {code:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let lost = doc["rtt"]["lost"].as_u64().unwrap();
    assert!(lost >= 10, "{}", doc["rtt"]);
    let t = &doc["trace"];
    // Every gap between two replies is counted; the first five are kept and explained.
    assert!(t["unanswered"].as_u64().unwrap() >= 10, "{t}");
    let lf = t["lost_frames"].as_array().unwrap();
    assert!(lf.len() >= 5, "{t}");
    let explained_frames: Vec<u64> = t["explained"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cycle"].as_u64().unwrap())
        .collect();
    let mut quiet = 0;
    for e in lf {
        let f = e["cycle"].as_u64().unwrap();
        assert!(!explained_frames.contains(&f), "frame {f} was answered");
        assert!(
            e["verdict"]
                .as_str()
                .unwrap()
                .starts_with(&format!("frame {f}: no reply — it left")),
            "{e:#}"
        );
        // It left: the sender's transmit on our end, on the sender's CPU, with rc 0.
        let l = &e["lost"];
        assert_eq!(l["nic"], v.host.as_str());
        assert_eq!(l["sent"]["name"], "net_dev_xmit rc=0", "{e:#}");
        assert_eq!(l["sent"]["cpu"], core, "{e:#}");
        assert!(l["sent"]["at_us"].as_f64().unwrap() >= 0.0);
        assert_eq!(l["remedy"]["kind"], "none");
        quiet += usize::from(l["arrived"].is_null());
    }
    // Nothing came back before the next send (a late reply to an earlier frame could, under load: not for most).
    assert!(quiet * 2 > lf.len(), "{lf:#?}");
    let raw = std::fs::read_to_string(t["file"].as_str().unwrap()).unwrap();
    assert!(raw.contains("got no reply") && raw.contains("tracing_mark_write: rmp-eval s="));
}
