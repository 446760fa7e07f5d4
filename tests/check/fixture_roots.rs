//! `check --root` on fixture roots: the seed machine line for line, the two real captures, the hand-made desktop
//! and Raspberry Pi 4, and a root full of garbage.

use crate::common;
use ck_util::*;
use common::check as ck_util;

/// Normalises a report line to the seed's form: single spaces, no "[fix: …]" hint.
fn norm(line: &str) -> String {
    let l = line.split("  [fix:").next().unwrap_or(line);
    let l = l.split("  [by hand").next().unwrap_or(l);
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn seed_machine_gives_the_original_verdicts_line_for_line() {
    let root = fixture("seed-i3-13100te");
    let o = run(&["--root", root.to_str().unwrap(), "check", "--nic", "enp2s0"]);
    let out = text(&o.stdout);
    let ours: Vec<String> = out.lines().map(norm).collect();
    let expected = std::fs::read_to_string(fixture("expected/seed-000-check-lines.txt")).unwrap();
    let mut last = 0;
    for want in expected
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let pos = ours
            .iter()
            .position(|l| *l == want)
            .unwrap_or_else(|| panic!("seed line missing: {want}\n--- ours:\n{out}"));
        assert!(pos > last, "seed line out of order: {want}");
        last = pos;
    }
    // The header names the CPU and kernel as the seed's does.
    assert!(
        out.contains("CPU: 13th Gen Intel(R) Core(TM) i3-13100TE (4 logical, 4 physical)"),
        "{out}"
    );
    assert!(out.contains("Kernel: Linux 6.12.43+deb13-rt-amd64 #1 SMP PREEMPT_RT Debian 6.12.43-1 (2025-08-27) x86_64"));
    assert!(out.contains("\nCore 3 Checks\n") && out.contains("\nNIC enp2s0 Checks\n"));
    // cpu_frequency and turbo fail there, so check reports a shortfall.
    assert_eq!(o.status.code(), Some(1));
    assert!(out.lines().any(|l| l.starts_with("Summary: ")), "{out}");
}

#[test]
fn seed_machine_json_and_remedies() {
    let (code, doc) = check_json(&fixture("seed-i3-13100te"), &["--nic", "enp2s0"]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["core"], 3);
    for c in doc["checks"].as_array().unwrap() {
        for k in ["id", "section", "title", "status", "detail", "remedy"] {
            assert!(c.get(k).is_some(), "{k} missing in {c}");
        }
        if c["status"] != "fail" {
            assert!(c["remedy"].is_null(), "remedy on a non-failure: {c}");
        }
    }
    let rem = |id: &str| {
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()["remedy"]
            .clone()
    };
    assert_eq!(rem("turbo"), "turbo");
    // The governor is already performance there: the governor step would not change the open range.
    assert!(rem("cpu_frequency").is_null());
    assert!(rem("nic_quiet").is_null(), "no fix step removes addresses");
    assert_eq!(
        doc["summary"]["fail"].as_u64().unwrap() as usize,
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "fail")
            .count()
    );
}

#[test]
fn captured_rt_guest_isolated_and_untuned() {
    // Verdicts the capture's README names as correct.
    let (code, iso) = check_json(&fixture("debian12-rt-qemu-isolated"), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(iso["core"], 1, "default core is the last CPU");
    for id in [
        "preempt_rt",
        "core_isolated",
        "nohz_full",
        "rcu_nocbs",
        "swap",
    ] {
        assert_eq!(status(&iso, id), "pass", "{id}: {:?}", verdict(&iso, id));
    }
    for id in ["governor", "turbo"] {
        assert_eq!(status(&iso, id), "unknown", "{id}");
    }
    let (_, un) = check_json(&fixture("debian12-rt-qemu-untuned"), &[]);
    for id in ["core_isolated", "nohz_full", "rcu_nocbs"] {
        assert_eq!(status(&un, id), "fail", "{id}: {:?}", verdict(&un, id));
    }
    // nohz_full reads "(null)" there: shown as an empty list, not as a CPU list to parse.
    assert_eq!(verdict(&un, "nohz_full").1, "CPU1 not in nohz_full: (none)");
    assert_eq!(status(&un, "preempt_rt"), "pass");
}

#[test]
fn untuned_smt_desktop() {
    let (code, d) = check_json(&fixture("desktop-i7-smt-untuned"), &["--nic", "enp3s0"]);
    assert_eq!(code, Some(1));
    assert_eq!(d["core"], 7);
    assert_eq!(
        verdict(&d, "smt_sibling"),
        ("fail".into(), "sibling CPU3 not isolated".into())
    );
    assert_eq!(
        verdict(&d, "governor"),
        ("fail".into(), "governor=powersave".into())
    );
    assert_eq!(
        verdict(&d, "turbo"),
        ("fail".into(), "intel_pstate/no_turbo=0".into())
    );
    assert_eq!(status(&d, "preempt_rt"), "fail");
    assert!(verdict(&d, "swap").1.starts_with("active: /dev/nvme0n1p3"));
    assert!(verdict(&d, "idle_states").1.contains("C6 85 µs"));
    assert_eq!(status(&d, "irqbalance"), "fail");
    assert_eq!(
        verdict(&d, "nic_quiet").1,
        "1 IPv4 address, 2 IPv6 addresses, the IPv4 default route, the IPv6 default route"
    );
    assert_eq!(verdict(&d, "nic_irqs_pinned").1, "not pinned: 124");
    assert_eq!(verdict(&d, "nic_speed").0, "fail");
    // With --nic the NIC's own IRQ is not "unrelated"; the others on CPU7 are.
    let unrelated = verdict(&d, "unrelated_irqs").1;
    assert!(
        unrelated.contains("16 i801_smbus") && !unrelated.contains("enp3s0"),
        "{unrelated}"
    );
    // SMT: 8 logical on 4 physical cores.
    assert!(
        d["host"]["cpu"]
            .as_str()
            .unwrap()
            .ends_with("(8 logical, 4 physical)")
    );
}

#[test]
fn raspberry_pi_4_arm64() {
    let root = fixture("rpi4-arm64");
    let (code, p) = check_json(&root, &["--nic", "eth0"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        verdict(&p, "clocksource"),
        ("pass".into(), "arch_sys_counter (ARM standard)".into())
    );
    assert_eq!(
        verdict(&p, "turbo"),
        ("unknown".into(), "no boost knobs".into())
    );
    assert_eq!(verdict(&p, "governor").0, "pass");
    assert_eq!(
        verdict(&p, "cpu_frequency").1,
        "cur=1800000 kHz, min=600000 kHz, max=1800000 kHz"
    );
    assert_eq!(status(&p, "tsc_reliable"), "info");
    assert_eq!(status(&p, "cstates"), "pass");
    assert_eq!(verdict(&p, "nic_link").1, "operstate=down");
    assert_eq!(verdict(&p, "nic_irqs_pinned").1, "not pinned: 38,39");
    assert_eq!(verdict(&p, "nic_quiet").1, "1 IPv4 address");
    assert!(verdict(&p, "nic_driver").1.starts_with("bcmgenet"));
    assert_eq!(
        p["host"]["cpu"],
        "Raspberry Pi 4 Model B Rev 1.5 (Cortex-A72) (4 logical, 4 physical)"
    );
    assert!(
        p["host"]["kernel"]
            .as_str()
            .unwrap()
            .ends_with("PREEMPT_RT Mon Jan 27 02:47:25 AEDT 2025 aarch64")
    );
}

#[test]
fn garbage_root_gives_a_verdict_for_every_check_and_no_panic() {
    // The committed garbage tree plus a huge (sparse) file, made here rather than committed.
    let tmp = tempfile::Builder::new()
        .prefix("ck-garbage")
        .tempdir()
        .unwrap();
    let src = fixture("garbage");
    let o = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", src.display()))
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let huge = std::fs::File::create(tmp.path().join("proc/cpuinfo")).unwrap();
    huge.set_len(100 * 1024 * 1024).unwrap();
    // Process checks run only with --pid/--process.
    let ids: Vec<&str> = rmp_eval::registry::CHECKS
        .iter()
        .filter(|c| c.section != rmp_eval::checks::Section::Process)
        .map(|c| c.id.as_str())
        .collect();
    for extra in [
        &[][..],
        &["--nic", "eth0"],
        &["--core", "1", "--nic", "eth0"],
    ] {
        let (code, doc) = check_json_noting(
            tmp.path(),
            extra,
            "online CPUs taken as the cpuN directories",
        );
        assert!(matches!(code, Some(0 | 1 | 4 | 5)), "exit {code:?}");
        let got: Vec<&str> = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        let want: Vec<&str> = if extra.is_empty() {
            rmp_eval::registry::CHECKS
                .iter()
                .filter(|c| c.section != rmp_eval::checks::Section::Nic)
                .map(|c| c.id.as_str())
                .filter(|id| ids.contains(id))
                .collect()
        } else {
            ids.clone()
        };
        assert_eq!(got, want);
        for c in doc["checks"].as_array().unwrap() {
            assert!(
                ["pass", "fail", "warn", "pending", "unknown", "info"]
                    .contains(&c["status"].as_str().unwrap())
            );
            assert!(
                c["detail"]
                    .as_str()
                    .unwrap()
                    .chars()
                    .all(|ch| !ch.is_control()),
                "{c}"
            );
        }
    }
    // Text mode too: no control characters from the garbage reach the terminal.
    let o = run(&[
        "--root",
        tmp.path().to_str().unwrap(),
        "check",
        "--nic",
        "eth0",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !text(&o.stdout).chars().any(|c| c.is_control() && c != '\n'),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn this_vm_captured_with_snapshot() {
    // tests/fixtures/vm-firecracker-snapshot: the development VM, taken with `rmp-eval snapshot`.
    let (code, v) = check_json(&fixture("vm-firecracker-snapshot"), &["--nic", "eth0"]);
    assert_eq!(code, Some(1));
    assert_eq!(v["core"], 1);
    assert_eq!(verdict(&v, "clocksource"), ("pass".into(), "tsc".into()));
    assert_eq!(verdict(&v, "preempt_rt").0, "fail");
    // This VM's kernel has no nohz_full file, but the snapshot was taken before snapshots recorded what the
    // machine lacked: absent from the tree is not captured (tests/check/verdicts.rs has the recorded case).
    let (s, d) = verdict(&v, "nohz_full");
    assert_eq!(s, "unknown", "{d}");
    assert!(d.contains("not captured"), "{d}");
    assert_eq!(
        verdict(&v, "futex_hash").0,
        "pass",
        "from the snapshot's recorded prctl result"
    );
    assert_eq!(verdict(&v, "nic_irqs_pinned").1, "not pinned: 37,38,39");
    assert_eq!(
        verdict(&v, "nic_quiet").1,
        "1 IPv4 address, 2 IPv6 addresses, the IPv4 default route, the IPv6 default route"
    );
    assert_eq!(verdict(&v, "nic_driver").1, "virtio_net: virtual NIC");
    // ethtool readings recorded by the snapshot stand in for the ioctl.
    assert_eq!(
        verdict(&v, "nic_coalesce"),
        ("pass".into(), "rx-usecs=0, adaptive-rx=off".into())
    );
    assert_eq!(
        verdict(&v, "nic_eee"),
        ("pass".into(), "no EEE support".into())
    );
    // A root without recorded readings cannot tell.
    let (_, pi) = check_json(&fixture("rpi4-arm64"), &["--nic", "eth0"]);
    assert_eq!(
        verdict(&pi, "nic_coalesce").1,
        "needs the live machine or a snapshot"
    );
    let (_, seed) = check_json(&fixture("seed-i3-13100te"), &["--nic", "enp2s0"]);
    assert_eq!(
        verdict(&seed, "nic_coalesce").1,
        "rx-usecs=3, adaptive-rx=off"
    );
    assert_eq!(
        verdict(&seed, "nic_eee"),
        ("fail".into(), "EEE enabled and active".into())
    );
    assert!(
        v["host"]["kernel"]
            .as_str()
            .unwrap()
            .starts_with("Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC")
    );
}
