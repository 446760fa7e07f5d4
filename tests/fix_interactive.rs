//! The terminal path: fix on a pseudo-terminal (util-linux `script`), steps picked in the MultiSelect (failing
//! ones preselected; space toggles, enter accepts) and the Confirm after the diffs. Keys go through the pty.

mod common;
use common::fix as fix_support;
use fix_support::{BIN, Root, diff};

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs fix under `script` and types `keys` (each after a short pause, as a person would).
fn fix_on_a_terminal(r: &Root, keys: &[&str]) -> (Option<i32>, String) {
    let cmd = format!(
        "{BIN} fix --root {} --core 1 --only sysctl,workqueue --no-measure",
        r.dir.path().display()
    );
    let mut child = Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux script");
    let mut stdin = child.stdin.take().unwrap();
    for k in keys {
        std::thread::sleep(std::time::Duration::from_millis(700));
        stdin.write_all(k.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn pick_steps_and_confirm_on_a_terminal() {
    let r = Root::untuned();
    // Space deselects the first step (sysctl), enter accepts, y confirms: only the workqueue mask changes.
    let (code, out) = fix_on_a_terminal(&r, &[" ", "\r", "y"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Apply these changes?"), "{out}");
    assert_eq!(r.read("/sys/devices/virtual/workqueue/cpumask"), "1\n");
    assert_eq!(
        r.read("/proc/sys/kernel/timer_migration"),
        "1\n",
        "sysctl was deselected"
    );
    let saved = r.read("/var/lib/rmp-eval/runtime.json");
    assert!(saved.contains("workqueue"), "{saved}");
    assert_eq!(r.rmp("rollback", &["--yes"]).status.code(), Some(0));
}

#[test]
fn saying_no_goes_back_to_the_steps_and_esc_leaves_changing_nothing() {
    let r = Root::untuned();
    let start = r.tree();
    // Enter accepts, n goes back to the picker (it used to end fix), q leaves it.
    let (code, out) = fix_on_a_terminal(&r, &["\r", "n", "q"]);
    assert_eq!(code, Some(0), "{out}");
    let confirm = out.find("Apply these changes?").expect(&out);
    let last_picker = out.rfind("Steps to apply").expect(&out);
    assert!(
        last_picker > confirm,
        "n did not go back to the picker:\n{out}"
    );
    assert!(out.contains("Nothing applied"), "{out}");
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn after_no_a_new_pick_is_applied() {
    let r = Root::untuned();
    // Accept all, say n, then deselect sysctl (the first item, still preselected), accept, say y.
    let (code, out) = fix_on_a_terminal(&r, &["\r", "n", " ", "\r", "y"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(r.read("/sys/devices/virtual/workqueue/cpumask"), "1\n");
    assert_eq!(r.read("/proc/sys/kernel/timer_migration"), "1\n", "{out}");
    assert_eq!(r.rmp("rollback", &["--yes"]).status.code(), Some(0));
}

#[test]
fn the_diffs_and_risks_come_before_the_picker() {
    let r = Root::untuned();
    let (_, out) = fix_on_a_terminal(&r, &["q"]);
    let picker = out.find("Steps to apply").expect(&out);
    for shown in [
        "/sys/devices/virtual/workqueue/cpumask: 3 → 1",
        "+kernel.timer_migration = 0",
        "risk: RT throttling off",
    ] {
        let at = out
            .find(shown)
            .unwrap_or_else(|| panic!("{shown} not shown:\n{out}"));
        assert!(at < picker, "{shown} after the picker:\n{out}");
    }
}
