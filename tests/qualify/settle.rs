//! Every qualify measurement waits until the machine has been up RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS
//! (/etc/default/rmp-eval, default 60): one made while a boot still settles would credit the boot's noise to a
//! step. The plan says so; a bad setting is refused before anything changes; a machine up less than that waits,
//! one up longer does not.

use super::trial_cycle::STATE;
use crate::common;
use common::fix::{Root, ok, text};

const SETTLE: &str = "RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS";
const WAITS: &str = "letting the boot settle until";

#[test]
fn a_bad_settle_setting_is_one_line_and_exit_2_before_anything_changes() {
    let r = Root::untuned();
    r.write("/etc/default/rmp-eval", &format!("{SETTLE}=soon\n"));
    let start = r.tree();
    let o = r.rmp("qualify", &["--core", "1", "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("{SETTLE}=soon")), "{err}");
    assert!(!r.exists(STATE));
    assert_eq!(r.tree(), start);
}

#[test]
fn the_plan_says_how_long_after_a_boot_a_measurement_starts() {
    let r = Root::untuned();
    let plan = |r: &Root| text(&r.rmp("qualify", &["--core", "1", "--periods", "1000"]));
    let out = plan(&r);
    assert!(
        out.contains("each measurement starts once the machine has been up 1.0 min"),
        "{out}"
    );
    r.write("/etc/default/rmp-eval", &format!("{SETTLE}=0\n"));
    let out = plan(&r);
    assert!(!out.contains("each measurement starts once"), "{out}");
    assert!(!r.exists(STATE));
}

/// qualify on the untuned tree, one period of 2 s: its baseline and its sweep measured on the live RT core.
fn qualify_up(uptime: &str) -> String {
    let r = Root::untuned();
    r.write("/proc/uptime", uptime);
    r.write("/etc/default/rmp-eval", &format!("{SETTLE}=3\n"));
    let o = r.rmp(
        "qualify",
        &[
            "--core",
            "1",
            "--seconds",
            "2",
            "--periods",
            "1000",
            "--yes",
        ],
    );
    ok(&o);
    text(&o)
}

#[test]
fn a_machine_up_less_than_the_settle_time_waits_before_each_measurement() {
    if !common::require_root("a_machine_up_less_than_the_settle_time_waits_before_each_measurement")
    {
        return;
    }
    let _live = common::lock::LIVE.shared();
    // A tree's uptime does not advance: each of the two measurements (baseline, 1000 µs) waits the rest.
    let out = qualify_up("1.20 0.50\n");
    let waits: Vec<&str> = out.lines().filter(|l| l.contains(WAITS)).collect();
    assert_eq!(waits.len(), 2, "{out}");
    assert!(
        waits[0].contains("qualify: up 1 s: letting the boot settle until 3 s after it"),
        "{out}"
    );
    let out = qualify_up("3.00 0.50\n");
    assert!(!out.contains(WAITS), "{out}");
}
