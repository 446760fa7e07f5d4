//! Reading a customer's machine safely (issue 17): check, snapshot and compare on generated hostile trees and
//! files. Every tree is generated here from the real capture (tests/gen); nothing needs root.

mod common;
mod machine_gen;

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ck_util::{bin, text};
use common::check as ck_util;

/// Runs rmp-eval, killing it if it has not finished after `limit`: a hang is a failure, not a slow pass.
pub fn run_limited(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rmp-eval");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rmp-eval {args:?} still running after {limit:?} (hung)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const HANG: Duration = Duration::from_secs(120);

fn tree(cpus: usize, irqs: usize, threads: usize) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("ck-untr")
        .tempdir()
        .unwrap();
    machine_gen::generate(
        d.path(),
        &machine_gen::Machine {
            cpus,
            irqs,
            threads,
        },
    )
    .unwrap();
    d
}

fn mkfifo(p: &Path) {
    let _ = fs::remove_file(p);
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {} / {}", text(&o.stdout), text(&o.stderr)))
}

fn verdict(doc: &serde_json::Value, id: &str) -> (String, String) {
    ck_util::verdict(doc, id)
}

fn check(root: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec!["--root", root.to_str().unwrap(), "check", "--json"];
    args.extend_from_slice(extra);
    let o = run_limited(&args, HANG);
    (o.status.code(), json(&o))
}

#[test]
fn item1_fifos_do_not_hang_check_or_snapshot() {
    let d = tree(4, 8, 16);
    let r = d.path();
    for f in [
        "proc/interrupts",
        "proc/cmdline",
        "sys/devices/system/cpu/isolated",
        "proc/irq/default_smp_affinity",
        "proc/1000/task/1000/stat",
    ] {
        mkfifo(&r.join(f));
    }
    let (code, doc) = check(r, &[]);
    assert_eq!(code, Some(1));
    for id in [
        "core_isolated",
        "unrelated_irqs",
        "default_affinity",
        "rcu_nocbs",
    ] {
        let (s, detail) = verdict(&doc, id);
        assert_eq!(s, "unknown", "{id}: {detail}");
        assert!(
            detail.contains("not a regular file (FIFO)"),
            "{id}: {detail}"
        );
    }
    let out = r.parent().unwrap().join(format!("{}-snap", r.display()));
    let o = run_limited(
        &[
            "--root",
            r.to_str().unwrap(),
            "snapshot",
            out.to_str().unwrap(),
        ],
        HANG,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (_, copy) = check(&out, &[]);
    assert_eq!(
        doc["checks"], copy["checks"],
        "the copy says what the source said"
    );
    fs::remove_dir_all(&out).unwrap();
}
