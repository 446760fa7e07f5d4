//! Verdicts and exit statuses a user can act on: a remedy only where its step would
//! change something, "pending" for what waits for a reboot, warnings for what only a newer kernel changes, and
//! an instruction for every finding no step repairs. Fixture roots: the real Debian 12 PREEMPT_RT captures and
//! the hand-made seed machine (tests/fixtures/README.md).

use crate::common;

use std::path::Path;

use common::check::*;

fn copy_fixture(name: &str) -> tempfile::TempDir {
    fixture_copy(name).0
}

fn finding<'a>(doc: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn write(root: &Path, path: &str, text: &str) {
    std::fs::write(root.join(path.trim_start_matches('/')), text).unwrap();
}

#[test]
fn futex_hash_before_6_17_is_a_warning_that_says_what_would_change_it() {
    let (code, doc) = check_json(&fixture("debian12-rt-qemu-isolated"), &["--core", "1"]);
    assert_eq!(code, Some(1), "other checks fail on this capture");
    let f = finding(&doc, "futex_hash");
    assert_eq!(f["status"], "warn");
    assert!(f["remedy"].is_null());
    assert!(f["by_hand"].as_str().unwrap().contains("Linux 6.17"), "{f}");
    assert_eq!(doc["summary"]["warn"], 1);
    assert_eq!(doc["summary"]["fail"], 7);
}

#[test]
fn after_fix_boot_changes_are_pending_then_warnings_alone_exit_4() {
    let d = copy_fixture("debian12-rt-qemu-isolated");
    let root = d.path().join("root");
    let r = root.to_str().unwrap();
    let o = run(&["--root", r, "fix", "--core", "1", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // A live kernel moves an IRQ at its next interrupt; a file tree does not: do what the kernel would.
    for e in std::fs::read_dir(root.join("proc/irq")).unwrap() {
        let dir = e.unwrap().path();
        if let Ok(a) = std::fs::read_to_string(dir.join("smp_affinity_list")) {
            std::fs::write(dir.join("effective_affinity_list"), a).unwrap();
        }
    }
    let (code, doc) = check_json(&root, &["--core", "1"]);
    for id in ["skew_tick", "irqaffinity"] {
        let f = finding(&doc, id);
        assert_eq!(f["status"], "pending", "{f}");
        assert!(f["remedy"].is_null() && f["by_hand"].is_null(), "{f}");
    }
    assert_eq!(doc["summary"]["fail"], 0, "{doc}");
    assert_eq!(code, Some(5), "nothing failed, a reboot is due");
    let o = run(&["--root", r, "check", "--core", "1"]);
    let out = text(&o.stdout);
    assert!(!out.contains("repairs:"), "{out}");
    assert!(out.contains("2 pending reboot"), "{out}");

    // The reboot: the kernel now runs with what fix set, and booted after fix's journal was written.
    let cmdline = std::fs::read_to_string(root.join("proc/cmdline")).unwrap();
    let added = std::fs::read_to_string(root.join("var/lib/rmp-eval/cmdline")).unwrap();
    write(
        &root,
        "/proc/cmdline",
        &format!("{} {}\n", cmdline.trim(), added.trim()),
    );
    let stat = std::fs::read_to_string(root.join("proc/stat")).unwrap();
    let later = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 60;
    let stat: String = stat
        .lines()
        .map(|l| {
            if l.starts_with("btime ") {
                format!("btime {later}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    write(&root, "/proc/stat", &stat);
    let (code, doc) = check_json(&root, &["--core", "1"]);
    assert_eq!(finding(&doc, "skew_tick")["status"], "pass");
    assert_eq!(finding(&doc, "futex_hash")["status"], "warn");
    assert_eq!(code, Some(4), "only a warning left: {doc}");
}

#[test]
fn a_remedy_is_named_only_where_its_step_would_change_the_verdict() {
    // The seed machine runs the performance governor with an open range (800 MHz – 4.1 GHz): the governor step
    // has nothing to change, so the frequency finding must not send the user to it.
    let (_, doc) = check_json(&fixture("seed-i3-13100te"), &["--core", "3"]);
    assert_eq!(status(&doc, "governor"), "pass");
    let f = finding(&doc, "cpu_frequency");
    assert_eq!(f["status"], "fail");
    assert!(f["remedy"].is_null(), "{f}");
    assert!(
        f["by_hand"].as_str().unwrap().contains("scaling_min_freq"),
        "{f}"
    );
    // A kernel without NO_HZ_FULL ignores nohz_full=: not a failure fix's cmdline step could repair. The
    // development VM's kernel has no nohz_full file; its snapshot predates the record of what a machine lacks,
    // which is added here as `snapshot` now writes it.
    let d = copy_fixture("vm-firecracker-snapshot");
    let root = d.path().join("root");
    write(
        &root,
        "/rmp-eval-unreadable.json",
        r#"{"unreadable":{},"absent":["/sys/devices/system/cpu/nohz_full"]}"#,
    );
    let (_, doc) = check_json(&root, &["--core", "1"]);
    let f = finding(&doc, "nohz_full");
    assert_eq!(f["status"], "warn");
    assert!(f["remedy"].is_null(), "{f}");
    assert!(
        f["by_hand"].as_str().unwrap().contains("CONFIG_NO_HZ_FULL"),
        "{f}"
    );
}

#[test]
fn every_finding_no_step_repairs_says_what_to_do_in_the_text() {
    let o = run(&[
        "--root",
        fixture("vm-firecracker-snapshot").to_str().unwrap(),
        "check",
        "--core",
        "1",
    ]);
    let out = text(&o.stdout);
    let block = out.split("By hand:\n").nth(1).expect("a By hand block");
    // Wrapped to 80 columns: compare with the line breaks undone.
    let hand = block.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        hand.contains("PREEMPT_RT active: install a PREEMPT_RT kernel")
            && hand.contains("linux-image-rt-amd64"),
        "{hand}"
    );
    assert!(
        hand.contains("no boot loader configuration found"),
        "{hand}"
    );
    for l in out.lines().filter(|l| l.contains("[by hand, below]")) {
        let title = l.split("  ").next().unwrap().trim();
        assert!(hand.contains(title), "{title} has no advice in\n{hand}");
    }
}

#[test]
fn cstates_follow_the_idle_driver_in_use() {
    // This development VM: intel_idle.max_cstate reads 9, the driver in use is haltpoll (no deep C-states).
    let d = copy_fixture("vm-firecracker-snapshot");
    let root = d.path().join("root");
    write(
        &root,
        "/sys/devices/system/cpu/cpuidle/current_driver",
        "haltpoll\n",
    );
    write(&root, "/sys/module/intel_idle/parameters/max_cstate", "9\n");
    let (_, doc) = check_json(&root, &["--core", "1"]);
    let (st, detail) = verdict(&doc, "cstates");
    assert_eq!(
        (st.as_str(), detail.as_str()),
        ("pass", "cpuidle driver haltpoll (poll, then halt)")
    );
    write(
        &root,
        "/sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle\n",
    );
    let (_, doc) = check_json(&root, &["--core", "1"]);
    assert_eq!(verdict(&doc, "cstates").0, "fail");
}
