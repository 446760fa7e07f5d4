//! The Firmware checks through the binary on `--root` trees: the hand-made seed machine (an Intel i3-13100TE,
//! RT core 3) with its /dev/cpu/3/msr as a sparse file holding the registers the checks read, read through Host
//! as the live machine's msr driver is; without that file; and as an AMD machine.

use crate::common;

use std::os::unix::fs::FileExt;
use std::process::Command;
use std::time::Instant;

use common::check::*;

const SMI_COUNT: u64 = 0x34;
const APIC_BASE: u64 = 0x1b;
const PKG_CST_CONFIG_CONTROL: u64 = 0xe2;
const MISC_ENABLE: u64 = 0x1a0;

const FIRMWARE: [&str; 6] = [
    "smi_rate",
    "cstate_limit",
    "turbo_firmware",
    "idle_driver",
    "x2apic",
    "tsc_invariant",
];

/// A copy of the seed machine; with `regs`, its /dev/cpu/3/msr is a sparse file with each value's 8
/// little-endian bytes at the register's offset (the msr driver's pread layout).
fn seed(regs: &[(u64, u64)]) -> tempfile::TempDir {
    let d = tempfile::Builder::new().prefix("ck-fw").tempdir().unwrap();
    let st = Command::new("cp")
        .arg("-a")
        .arg(fixture("seed-i3-13100te"))
        .arg(d.path().join("root"))
        .status()
        .unwrap();
    assert!(st.success());
    if !regs.is_empty() {
        let dir = d.path().join("root/dev/cpu/3");
        std::fs::create_dir_all(&dir).unwrap();
        let f = std::fs::File::create(dir.join("msr")).unwrap();
        for &(reg, v) in regs {
            f.write_all_at(&v.to_le_bytes(), reg).unwrap();
        }
    }
    d
}

fn root(d: &tempfile::TempDir) -> std::path::PathBuf {
    d.path().join("root")
}

fn ids(doc: &serde_json::Value) -> Vec<(String, String)> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["section"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Registers as firmware leaves a board tuned by half: 37 SMIs since reset, package C-states unlimited (code 7)
/// and locked, turbo disabled in firmware, x2APIC on.
const HALF_TUNED: [(u64, u64); 4] = [
    (SMI_COUNT, 37),
    (PKG_CST_CONFIG_CONTROL, 0x1e00_8407),
    (MISC_ENABLE, 0x40_0085_0089),
    (APIC_BASE, 0xfee0_0d00),
];

#[test]
fn registers_in_a_tree_give_the_firmware_verdicts_in_their_section() {
    let d = seed(&HALF_TUNED);
    let (code, doc) = check_json(&root(&d), &["--nic", "enp2s0"]);
    assert_eq!(code, Some(1), "other checks fail on the seed machine");
    let all = ids(&doc);
    for id in FIRMWARE {
        let s = all.iter().find(|(i, _)| i == id);
        assert_eq!(s.map(|(_, s)| s.as_str()), Some("firmware"), "{id}");
    }
    // Reported between the core's checks and the NIC's.
    let first = all.iter().position(|(_, s)| s == "firmware").unwrap();
    let last = all.iter().rposition(|(_, s)| s == "firmware").unwrap();
    assert!(
        all[..first]
            .iter()
            .all(|(_, s)| s == "system" || s == "core")
    );
    assert!(all[last + 1..].iter().all(|(_, s)| s == "nic"));
    assert_eq!(last - first + 1, FIRMWARE.len());

    let (s, dt) = verdict(&doc, "cstate_limit");
    assert_eq!(s, "warn", "{dt}");
    assert!(
        dt.starts_with("limit code 7:") && dt.contains("CFG Lock on"),
        "{dt}"
    );
    assert_eq!(status(&doc, "turbo_firmware"), "pass");
    assert_eq!(status(&doc, "x2apic"), "pass");
    // The tree's cpuinfo has an invariant TSC and its kernel keeps time with it.
    assert_eq!(status(&doc, "tsc_invariant"), "pass");
    let (s, dt) = verdict(&doc, "idle_driver");
    assert_eq!(
        (
            s.as_str(),
            dt.starts_with("acpi_idle (intel_idle.max_cstate=0)")
        ),
        ("info", true),
        "{dt}"
    );
    // A tree is one reading: no rate, and no pass.
    let (s, dt) = verdict(&doc, "smi_rate");
    assert_eq!(s, "unknown");
    assert!(
        dt.starts_with("a captured tree: MSR_SMI_COUNT 37 since reset"),
        "{dt}"
    );
    // The warning says what to set in the BIOS.
    let c = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "cstate_limit")
        .unwrap();
    assert!(c["remedy"].is_null());
    assert!(
        c["by_hand"]
            .as_str()
            .unwrap()
            .contains("Package C-State Limit"),
        "{c}"
    );
}

#[test]
fn smi_seconds_zero_is_not_measured_and_a_tree_never_waits() {
    let d = seed(&HALF_TUNED);
    let (_, doc) = check_json(&root(&d), &["--smi-seconds", "0"]);
    assert_eq!(
        verdict(&doc, "smi_rate"),
        ("unknown".into(), "not measured (--smi-seconds 0)".into())
    );
    let t = Instant::now();
    let (_, doc) = check_json(&root(&d), &["--smi-seconds", "30"]);
    assert!(t.elapsed().as_secs() < 15, "check waited on a tree");
    assert_eq!(status(&doc, "smi_rate"), "unknown");
    for bad in ["601", "-1", "1.5", "x"] {
        let o = run(&[
            "--root",
            root(&d).to_str().unwrap(),
            "check",
            "--smi-seconds",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "--smi-seconds {bad}");
    }
}

#[test]
fn without_the_msr_file_the_registers_are_unknown_with_the_reason() {
    let d = seed(&[]);
    let (code, doc) = check_json(&root(&d), &[]);
    assert_eq!(code, Some(1));
    for id in ["smi_rate", "cstate_limit", "turbo_firmware"] {
        let (s, dt) = verdict(&doc, id);
        assert_eq!(s, "unknown", "{id}");
        assert_eq!(
            dt,
            "/dev/cpu/3/msr missing: this tree holds no MSRs (`snapshot` does not capture them)",
            "{id}"
        );
    }
    let (s, dt) = verdict(&doc, "x2apic");
    assert_eq!(s, "unknown");
    assert!(
        dt.starts_with("the CPU offers x2APIC (cpuinfo), the mode is unread"),
        "{dt}"
    );
}

#[test]
fn an_amd_machine_has_no_intel_registers_even_where_the_file_answers() {
    let d = seed(&HALF_TUNED);
    let info = root(&d).join("proc/cpuinfo");
    let text = std::fs::read_to_string(&info).unwrap();
    std::fs::write(&info, text.replace("GenuineIntel", "AuthenticAMD")).unwrap();
    let (_, doc) = check_json(&root(&d), &[]);
    for id in ["smi_rate", "cstate_limit", "turbo_firmware"] {
        let (s, dt) = verdict(&doc, id);
        assert_eq!(s, "unknown", "{id}");
        assert!(dt.starts_with("AMD processors have no "), "{id}: {dt}");
    }
    // IA32_APIC_BASE is AMD's too.
    assert_eq!(status(&doc, "x2apic"), "pass");
}

#[test]
fn the_text_report_has_a_firmware_section_with_its_by_hand_advice() {
    let d = seed(&HALF_TUNED);
    let o = run(&["--root", root(&d).to_str().unwrap(), "--no-color", "check"]);
    let out = text(&o.stdout);
    let core = out.find("\nCore 3 Checks\n").unwrap();
    let fw = out.find("\nFirmware Checks\n").expect(&out);
    assert!(core < fw, "{out}");
    assert!(out.contains("Package C-states limited by BIOS"), "{out}");
    // The block is word-wrapped: compare its words.
    let hand = out[out.find("By hand:").expect(&out)..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        hand.contains(
            "Package C-states limited by BIOS: in the BIOS setup set \"Package C-State Limit\""
        ),
        "{hand}"
    );
}
