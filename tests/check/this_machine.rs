//! `check` on this machine, compared with values the test reads itself; and `snapshot` of this machine giving
//! the same verdicts under --root.

use crate::common;
use ck_util::*;
use common::check as ck_util;
use std::fs;

fn live() -> (Option<i32>, serde_json::Value) {
    let o = run(&["check", "--json"]);
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    (o.status.code(), serde_json::from_slice(&o.stdout).unwrap())
}

fn read(p: &str) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

#[test]
fn live_verdicts_match_what_the_test_reads() {
    let _live = common::lock::LIVE.shared();
    let (code, doc) = live();
    let any_fail = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["status"] == "fail");
    assert_eq!(code, Some(if any_fail { 1 } else { 0 }));

    let last = common::rt_core();
    assert_eq!(
        doc["core"].as_u64().unwrap() as usize,
        last,
        "default core = last online CPU"
    );

    let tm = read("/proc/sys/kernel/timer_migration").unwrap();
    assert_eq!(
        verdict(&doc, "timer_migration"),
        (
            if tm == "0" { "pass" } else { "fail" }.into(),
            format!("timer_migration={tm}")
        )
    );
    let rt = read("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    assert_eq!(
        status(&doc, "rt_throttling"),
        if rt == "-1" { "pass" } else { "fail" }
    );

    let swaps = fs::read_to_string("/proc/swaps").unwrap();
    assert_eq!(
        status(&doc, "swap"),
        if swaps.lines().count() > 1 {
            "fail"
        } else {
            "pass"
        }
    );

    let isolated = read("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let iso: Vec<usize> = rmp_eval::parse::cpulist::parse(&isolated).unwrap();
    assert_eq!(
        status(&doc, "core_isolated"),
        if iso.contains(&last) && last != 0 {
            "pass"
        } else {
            "fail"
        }
    );

    let cs = read("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap();
    let (st, detail) = verdict(&doc, "clocksource");
    assert!(detail.starts_with(&cs), "{detail} vs {cs}");
    if ["tsc", "hpet"].contains(&cs.as_str()) {
        assert_eq!(st, "pass");
    }

    let gov = read(&format!(
        "/sys/devices/system/cpu/cpu{last}/cpufreq/scaling_governor"
    ));
    match gov {
        None => assert_eq!(status(&doc, "governor"), "unknown"),
        Some(g) => assert_eq!(verdict(&doc, "governor").1, format!("governor={g}")),
    }
    let realtime = read("/sys/kernel/realtime");
    let version = read("/proc/sys/kernel/version").unwrap();
    let rt_kernel = realtime.as_deref() == Some("1") || version.contains("PREEMPT_RT");
    assert_eq!(status(&doc, "preempt_rt") == "pass", rt_kernel);
}

#[test]
fn live_nic_checks_on_the_first_real_interface() {
    let _live = common::lock::LIVE.shared();
    let Some(nic) = fs::read_dir("/sys/class/net")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // A device's interface: not loopback, nor a veth or bridge another test makes and removes meanwhile.
        .filter(|n| std::path::Path::new(&format!("/sys/class/net/{n}/device")).exists())
        .find(|n| read(&format!("/sys/class/net/{n}/operstate")).as_deref() == Some("up"))
    else {
        return;
    };
    let o = run(&["check", "--json", "--nic", &nic]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(verdict(&doc, "nic_present").0, "pass");
    assert_eq!(
        verdict(&doc, "nic_link"),
        ("pass".into(), "operstate=up".into())
    );
    let rps_zero = fs::read_dir(format!("/sys/class/net/{nic}/queues"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .all(|e| {
            fs::read_to_string(e.path().join("rps_cpus"))
                .unwrap()
                .trim()
                .chars()
                .all(|c| c == '0' || c == ',')
        });
    assert_eq!(status(&doc, "rps"), if rps_zero { "pass" } else { "fail" });

    // Interrupt coalescing as the ethtool program reports it (when installed and the driver supports it).
    if let Ok(o) = std::process::Command::new("ethtool")
        .args(["-c", &nic])
        .output()
    {
        let out = text(&o.stdout);
        let usecs = out
            .lines()
            .find_map(|l| l.strip_prefix("rx-usecs:"))
            .map(|v| v.trim().to_string());
        let adaptive = out
            .lines()
            .find_map(|l| l.strip_prefix("Adaptive RX:"))
            .map(|v| v.trim().starts_with("on"));
        if let (true, Some(u), Some(a)) = (o.status.success(), usecs, adaptive) {
            let want = format!("rx-usecs={u}, adaptive-rx={}", if a { "on" } else { "off" });
            assert_eq!(verdict(&doc, "nic_coalesce").1, want);
            assert_eq!(
                status(&doc, "nic_coalesce"),
                if u == "0" && !a { "pass" } else { "fail" }
            );
        }
    }
    // Loopback has neither coalescing nor EEE.
    let o = run(&["check", "--json", "--nic", "lo"]);
    let lo: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        verdict(&lo, "nic_coalesce"),
        ("info".into(), "driver has no interrupt coalescing".into())
    );
    assert_eq!(
        verdict(&lo, "nic_eee"),
        ("pass".into(), "no EEE support".into())
    );
}

#[test]
fn snapshot_gives_the_same_verdicts_under_root() {
    let _live = common::lock::LIVE.shared();
    let tmp = tempfile::Builder::new()
        .prefix("ck-snap")
        .tempdir()
        .unwrap();
    let tgz = tmp.path().join("snap.tar.gz");
    let o = run(&["snapshot", tgz.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let dir = tmp.path().join("root");
    fs::create_dir(&dir).unwrap();
    let f = fs::File::open(&tgz).unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(f))
        .unpack(&dir)
        .unwrap();
    let (_, live) = live();
    let (_, snap) = check_json(&dir, &[]);
    for c in live["checks"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        // Threads come and go between the two runs (the checker itself is one).
        if id == "rt_core_threads" {
            continue;
        }
        assert_eq!(
            c["status"],
            snap_status(&snap, id),
            "{id}: live {c} vs snapshot {:?}",
            verdict(&snap, id)
        );
    }
    assert_eq!(live["host"]["kernel"], snap["host"]["kernel"]);
    assert_eq!(live["host"]["cpu"], snap["host"]["cpu"]);
    assert_eq!(live["host"]["firmware"], snap["host"]["firmware"]);
}

fn snap_status(doc: &serde_json::Value, id: &str) -> serde_json::Value {
    serde_json::Value::String(status(doc, id))
}

#[test]
fn snapshot_of_a_root_reproduces_it() {
    // Snapshot of a fixture root (through --root): the copy gives identical verdicts and details.
    let tmp = tempfile::Builder::new()
        .prefix("ck-snap2")
        .tempdir()
        .unwrap();
    let out = tmp.path().join("copy");
    let src = fixture("seed-i3-13100te");
    snapshot(&src, &out);
    let (_, a) = check_json(&src, &["--nic", "enp2s0"]);
    let (_, b) = check_json(&out, &["--nic", "enp2s0"]);
    assert_eq!(a["checks"], b["checks"]);
    // Exactly what the checks read: no file the checks never open (the fixture's README is not copied).
    assert!(!out.join("README.md").exists());
    assert!(out.join("proc/cmdline").exists());
    // A second snapshot into a non-empty directory is refused.
    assert_eq!(snapshot_of(&src, &out).status.code(), Some(2));
}

/// The SMBIOS identity travels with a snapshot: a tree made of the seed machine plus the real Advantech UNO-127's
/// /sys/class/dmi/id (tests/fixtures/samples/dmi), its link kept as the kernel lays it out.
#[test]
fn snapshot_keeps_the_machines_smbios_identity() {
    let tmp = tempfile::Builder::new().prefix("ck-dmi").tempdir().unwrap();
    let src = tmp.path().join("src");
    let cp = |from: std::path::PathBuf, to: &std::path::Path| {
        let st = std::process::Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .unwrap();
        assert!(st.success());
    };
    cp(fixture("seed-i3-13100te"), &src);
    // Merged into its /sys: sys/devices/virtual/dmi/id and the link sys/class/dmi/id.
    cp(
        fixture("samples/dmi/advantech-uno-127/sys/."),
        &src.join("sys"),
    );
    assert!(
        fs::symlink_metadata(src.join("sys/class/dmi/id"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let out = tmp.path().join("copy");
    snapshot(&src, &out);
    let (_, a) = check_json(&src, &["--nic", "enp2s0"]);
    let (_, b) = check_json(&out, &["--nic", "enp2s0"]);
    assert_eq!(a["host"]["firmware"]["product"], "UNO-127", "{}", a["host"]);
    assert_eq!(a["host"]["firmware"], b["host"]["firmware"]);
    assert_eq!(b["host"]["firmware"]["bios_version"], "V1.13");
    let o = run(&["--root", out.to_str().unwrap(), "check"]);
    assert!(
        text(&o.stdout).contains(
            "Machine: Advantech UNO-127 (board Advantech UNO-127) | BIOS: American Megatrends International, LLC. \
             V1.13 (08/01/2023)\n"
        ),
        "{}",
        text(&o.stdout)
    );
}
