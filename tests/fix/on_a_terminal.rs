//! The terminal path: fix on a pseudo-terminal (util-linux `script`), steps picked in the MultiSelect after the
//! diffs (failing ones preselected; space toggles, Enter applies: the one question). Keys go through the pty.

use crate::common;
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
    let mut child = common::on_a_terminal("", &cmd)
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
fn one_question_picks_the_steps_and_applies_them() {
    let r = Root::untuned();
    // Space deselects the first step (sysctl), Enter applies: only the workqueue mask changes, nothing else asked.
    let (code, out) = fix_on_a_terminal(&r, &[" ", "\r"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("Apply these changes?"), "{out}");
    assert!(
        out.contains("Enter applies the steps picked below: the changes, then what each took"),
        "{out}"
    );
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
fn nothing_picked_asks_again_and_q_leaves_changing_nothing() {
    let r = Root::untuned();
    let start = r.tree();
    // Both steps deselected (space, down, space), Enter: asked again; q leaves.
    let (code, out) = fix_on_a_terminal(&r, &[" ", "\x1b[B", " ", "\r", "q"]);
    assert_eq!(code, Some(0), "{out}");
    let none = out.find("No step picked").expect(&out);
    let last_picker = out.rfind("Steps to apply").expect(&out);
    assert!(last_picker > none, "not asked again:\n{out}");
    assert!(out.contains("Nothing applied"), "{out}");
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
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

/// fix on this machine (its before/after measured) under `script`: each key typed once the text before it is on
/// the screen, as a person reads and answers (an empty key only waits). Returns the exit status and everything shown.
fn live_fix_on_a_terminal(core: usize, keys: &[(&str, &str)]) -> (Option<i32>, String) {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let cmd = format!("{BIN} fix --core {core} --only workqueue --measure-seconds 3");
    let mut child = common::on_a_terminal("", &cmd)
        .env(common::RESULTS_ENV, common::results_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux script");
    let shown = Arc::new(Mutex::new(Vec::new()));
    let mut stdout = child.stdout.take().unwrap();
    let reader = {
        let shown = Arc::clone(&shown);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                shown.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let text = |s: &Arc<Mutex<Vec<u8>>>| String::from_utf8_lossy(&s.lock().unwrap()).into_owned();
    let mut stdin = child.stdin.take().unwrap();
    // Each text is looked for after the one before it (the after's live view repeats the before's).
    let mut from = 0;
    for (after, key) in keys {
        let since = std::time::Instant::now();
        loop {
            let t = text(&shown);
            if let Some(at) = t.get(from..).and_then(|rest| rest.find(after)) {
                from += at + after.len();
                break;
            }
            assert!(
                since.elapsed() < std::time::Duration::from_secs(180),
                "{after:?} never shown:\n{t}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        stdin.write_all(key.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    reader.join().unwrap();
    (status.code(), text(&shown))
}

/// The machine's workqueue mask, put back when dropped, and a rollback of whatever journal the test left.
struct LiveMask {
    path: &'static str,
    was: String,
}
impl LiveMask {
    fn take() -> Option<LiveMask> {
        let path = "/sys/devices/virtual/workqueue/cpumask";
        let was = std::fs::read_to_string(path).ok()?;
        Some(LiveMask { path, was })
    }
    fn now(&self) -> String {
        std::fs::read_to_string(self.path).unwrap()
    }
}
impl Drop for LiveMask {
    fn drop(&mut self) {
        let _ = Command::new(BIN).args(["rollback", "--yes"]).output();
        let _ = std::fs::write(self.path, &self.was);
    }
}

/// Root, the live lock, no journal of someone else's fix, a workqueue mask: what the live terminal tests need.
fn live_terminal(test: &str) -> Option<(common::lock::Hold, LiveMask)> {
    if !common::require_root(test) {
        return None;
    }
    let lock = common::lock::LIVE.alone();
    let host = rmp_eval::host::Host::live();
    if !rmp_eval::fix::journal::load_all(&host).unwrap().is_empty() {
        common::cannot_run(test, "this machine has a fix journal already");
        return None;
    }
    let Some(mask) = LiveMask::take() else {
        common::cannot_run(test, "no workqueue cpumask");
        return None;
    };
    Some((lock, mask))
}

/// A result fix saved, named on its line of the comparison ("Before: PATH", after the live view's escapes).
fn saved(out: &str, head: &str) -> serde_json::Value {
    let path = out
        .lines()
        .find_map(|l| Some(&l[l.find(head)? + head.len()..]))
        .unwrap_or_else(|| panic!("no {head} line:\n{out}"))
        .trim();
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn r_during_fixs_before_measurement_resets_nothing() {
    let Some((_lock, mask)) = live_terminal("r_during_fixs_before_measurement_resets_nothing")
    else {
        return;
    };
    let core = common::rt_core();
    // The live view's r resets a run; fix's before and after are compared, so each must cover its 3 s.
    let (code, out) =
        live_fix_on_a_terminal(core, &[("Steps to apply", "\r"), ("Elapsed 00:00:01", "r")]);
    assert_eq!(code, Some(0), "{out}");
    // The one question said what its Enter starts, and for how long.
    assert!(
        out.contains(&format!("first 3 s measuring CPU {core} as it is")),
        "{out}"
    );
    let (before, after) = (saved(&out, "Before:"), saved(&out, "After:"));
    for r in [&before, &after] {
        assert_eq!(r["resets"].as_u64().unwrap_or(0), 0, "{r}");
        assert!(r["duration_s"].as_f64().unwrap() >= 2.99, "{r}");
    }
    assert!(!out.contains("differ in length"), "{out}");
    assert!(
        out.contains("(q or Ctrl+C stops)") && !out.contains("r resets"),
        "{out}"
    );
    assert_ne!(mask.now(), mask.was, "fix applied nothing:\n{out}");
}

#[test]
fn stopping_fixs_before_measurement_stops_fix_before_any_change() {
    let Some((_lock, mask)) =
        live_terminal("stopping_fixs_before_measurement_stops_fix_before_any_change")
    else {
        return;
    };
    let core = common::rt_core();
    // q in the live view, then Ctrl+C (the pty turns it into SIGINT): each ends the before early, and a cut-short
    // before is no baseline to apply on.
    for key in ["q", "\x03"] {
        let (code, out) =
            live_fix_on_a_terminal(core, &[("Steps to apply", "\r"), ("Elapsed 00:00:01", key)]);
        assert_eq!(code, Some(2), "{key:?}:\n{out}");
        assert!(
            out.contains("the before measurement was stopped after")
                && out.contains("nothing was changed"),
            "{key:?}:\n{out}"
        );
        assert!(!out.contains("Measuring after"), "{key:?}:\n{out}");
        assert_eq!(mask.now(), mask.was, "{key:?}:\n{out}");
        let host = rmp_eval::host::Host::live();
        assert!(
            rmp_eval::fix::journal::load_all(&host).unwrap().is_empty(),
            "{key:?}"
        );
    }
}

#[test]
fn an_after_measurement_stopped_early_is_not_compared() {
    let Some((_lock, mask)) = live_terminal("an_after_measurement_stopped_early_is_not_compared")
    else {
        return;
    };
    let core = common::rt_core();
    // q a second into the after: the changes are in, but a 1 s after against a 3 s before ranks the runs.
    let (code, out) = live_fix_on_a_terminal(
        core,
        &[
            ("Steps to apply", "\r"),
            ("Measuring after", ""),
            ("Elapsed 00:00:01", "q"),
        ],
    );
    let after = &out[out.find("Measuring after").expect(&out)..];
    assert!(after.contains("Elapsed 00:00:01"), "{out}");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("No comparison: the after measurement was stopped after")
            && out.contains("rmp-eval rollback"),
        "{out}"
    );
    assert!(!out.contains("Verdict:"), "{out}");
    assert_ne!(mask.now(), mask.was, "the changes are applied:\n{out}");
}
