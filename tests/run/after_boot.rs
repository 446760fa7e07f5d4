//! The after-boot measurement, short of the reboot itself (that is the VM suite's 9-after-boot): an armed
//! measurement is pending in `check` and refused by `compare` without arguments; `after-boot` measures what fix
//! measured before, saves `after`, writes the report and disarms itself, so that a second boot measures nothing;
//! `compare` then shows the pair; rollback disarms an armed one. Real 1 s cyclic runs (root: SCHED_FIFO).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::run::{bin, root_tree};

fn rmp(root: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn after_boot_check(root: &Path) -> (String, String) {
    let o = rmp(root, &["check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "after_boot")
        .unwrap()
        .clone();
    (
        c["status"].as_str().unwrap().into(),
        c["detail"].as_str().unwrap().into(),
    )
}

fn results(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("var/lib/rmp-eval/results"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn measures_once_after_the_reboot_then_compare_shows_the_pair() {
    if !common::require_root("measures_once_after_the_reboot_then_compare_shows_the_pair") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let r = root_tree();
    let root = r.path();
    std::fs::create_dir_all(root.join("etc/default")).unwrap();
    std::fs::write(
        root.join("etc/default/rmp-eval"),
        "RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS=0\n",
    )
    .unwrap();
    // The tree's online list is this machine's (root_tree copies it).
    let core = common::rt_core();
    // fix's "before": a real run, saved under the root.
    let o = rmp(root, &["run", "--duration", "1", "--no-config"]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", out(&o));
    let before = root
        .join("var/lib/rmp-eval/results")
        .join(&results(root)[0]);
    let armed = serde_json::json!({
        "version": 1, "armed": "2026-12-03T08:00:00Z", "before": before, "core": core, "nic": null,
        "mode": "ecat", "period_us": 1000, "seconds": 1.0
    });
    let arm = || {
        std::fs::write(
            root.join("var/lib/rmp-eval/after-boot.json"),
            armed.to_string(),
        )
        .unwrap()
    };
    arm();
    let (st, d) = after_boot_check(root);
    assert_eq!(st, "pending", "{d}");
    assert!(
        d.contains(&format!("measures 1 s on CPU{core} at the next boot")),
        "{d}"
    );
    let o = rmp(root, &["compare"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("still pending"), "{}", out(&o));

    let o = rmp(root, &["after-boot"]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        !root.join("var/lib/rmp-eval/after-boot.json").exists(),
        "not disarmed"
    );
    let report =
        std::fs::read_to_string(root.join("var/lib/rmp-eval/after-boot-report.txt")).unwrap();
    assert!(report.contains(&before.display().to_string()), "{report}");
    let names = results(root);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[1].ends_with("-after.json"), "{names:?}");
    let (st, d) = after_boot_check(root);
    assert_eq!(
        (st.as_str(), d.contains("measured after the reboot")),
        ("info", true),
        "{d}"
    );

    let o = rmp(root, &["compare", "--json"]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 3)), "{}", out(&o));
    let text = out(&o);
    assert!(text.contains(&names[1]), "{text}");

    // The next boot: nothing armed, nothing measured.
    let o = rmp(root, &["after-boot"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains("nothing armed"), "{}", out(&o));
    assert_eq!(results(root).len(), 2);

    // rollback disarms an armed measurement (here with an empty journal).
    arm();
    let o = rmp(root, &["rollback", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(out(&o).contains("disarmed"), "{}", out(&o));
    assert!(!root.join("var/lib/rmp-eval/after-boot.json").exists());
}

#[test]
fn compare_without_arguments_and_nothing_measured_says_what_to_give() {
    let r = root_tree();
    let o = rmp(r.path(), &["compare"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("give BEFORE and AFTER"), "{err}");
}
