//! Ctrl+C (SIGINT) and SIGTERM end a run cleanly: the final report is printed, --output and results/ are written,
//! and the process exits with the run's status (0/1), not by the signal.

use crate::common;
use common::run as run_common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use run_common::*;
use serde_json::Value;

fn interrupted_run(sig: Signal) {
    let root = root_tree();
    let out_file = root.path().join("out.json");
    let mut child = Command::new(bin())
        .args([
            "run",
            "--root",
            root.path().to_str().unwrap(),
            "--no-config",
            "--output",
        ])
        .arg(&out_file)
        .env("RMP_EVAL_CHECKPOINT_S", "0.5")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once it has measured for 0.5 s (there is no --duration: only the signal ends it).
    wait_for_checkpoint(root.path(), &mut child);
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "did not stop");
    let stdout = text(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{sig:?}: {:?} {}",
        o.status,
        text(&o.stderr)
    );
    assert!(stdout.contains("Target period: 1000 us"), "{stdout}");
    let words = match sig {
        Signal::SIGTERM => ("(stopped by SIGTERM)", "sigterm"),
        _ => ("(stopped by Ctrl+C (SIGINT))", "sigint"),
    };
    assert!(stdout.contains(words.0), "{stdout}");
    assert!(stdout.contains("Saved: "), "{stdout}");
    let v: Value =
        serde_json::from_slice(&std::fs::read(&out_file).expect("--output written")).unwrap();
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["stopped_by"], words.1);
    let count = v["series"][0]["count"].as_u64().unwrap();
    assert!(count > 0, "no period recorded in 0.5 s");
    let saved = results(root.path());
    assert_eq!(saved.len(), 1);
    let file: Value = serde_json::from_slice(&std::fs::read(&saved[0]).unwrap()).unwrap();
    assert_eq!(file, v);
}

#[test]
fn sigint_gives_the_final_report_and_the_output_file() {
    let _live = common::lock::LIVE.shared();
    if common::require_root("sigint") {
        interrupted_run(Signal::SIGINT);
    }
}

#[test]
fn sigterm_gives_the_final_report_and_the_output_file() {
    let _live = common::lock::LIVE.shared();
    if common::require_root("sigterm") {
        interrupted_run(Signal::SIGTERM);
    }
}
