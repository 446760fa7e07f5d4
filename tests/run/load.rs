//! `run --load`: stress-ng (tests/install-deps.sh installs it) runs on the housekeeping CPUs only, is recorded in
//! the result, and leaves nothing behind after a normal end, Ctrl+C (SIGINT), SIGTERM or `kill -9` of rmp-eval.

use crate::common;
use common::run as run_common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use run_common::*;
use serde_json::Value;

fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid …": comm may hold spaces, so split after the last ')'.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Live (not zombie) processes descending from `root`, with their names.
fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let mut p = pid;
        let mut hops = 0;
        while let Some(pp) = ppid(p) {
            if pp == root {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                out.push((pid, comm.trim().to_string()));
                break;
            }
            if pp <= 1 || hops > 16 {
                break;
            }
            p = pp;
            hops += 1;
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .map(|r| !r.1.trim_start().starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

/// Starts a loaded run and waits until its stress-ng workers are up; returns them. The caller waits for the
/// child (clippy cannot see through the returned tuple). `--duration` must leave time to see them: on a loaded
/// machine stress-ng can take seconds to fork its workers, and a run that ended first takes them with it.
#[allow(clippy::zombie_processes)]
fn start(root: &str, extra: &[&str]) -> (Child, Vec<(u32, String)>) {
    let mut child = Command::new(bin())
        .args([
            "run",
            "--root",
            root,
            "--no-config",
            "--load",
            "cpu,vm",
            "--json",
        ])
        .args(extra)
        .env("RMP_EVAL_CHECKPOINT_S", "0.5")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        let d = descendants(child.id());
        if d.iter()
            .filter(|(_, c)| c.starts_with("stress-ng-"))
            .count()
            >= 2
        {
            eprintln!("stress-ng workers up after {:?}", t.elapsed());
            return (child, d);
        }
        // A run that ended before its workers were seen says why, at once.
        if let Ok(Some(status)) = child.try_wait() {
            let o = child.wait_with_output().unwrap();
            panic!(
                "the run ended ({status}) after {:?} before its stress-ng workers were seen: {}",
                t.elapsed(),
                text(&o.stderr)
            );
        }
        // Generous: other test processes may keep both CPUs busy for a long while.
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no stress-ng workers within 60 s: {d:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every process of `procs` gone (a pid now held by another program does not count: pids are reused).
fn assert_all_gone(procs: &[(u32, String)], how: &str) {
    let still = |(p, c): &&(u32, String)| {
        alive(*p)
            && std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|now| now.trim() == c)
    };
    // Generous: the kernel delivers the kills at once, but a loaded machine may take seconds to run the exits.
    let t = Instant::now();
    while procs.iter().any(|p| still(&p)) && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<_> = procs.iter().filter(still).collect();
    assert!(left.is_empty(), "after {how}, still running: {left:?}");
}

#[test]
fn load_runs_on_housekeeping_cpus_and_ends_with_the_run() {
    if !common::require_root("load_runs_on_housekeeping_cpus_and_ends_with_the_run") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    if !std::path::Path::new("/usr/bin/stress-ng").exists()
        && !common::cannot_run("load", "no stress-ng (tests/install-deps.sh)")
    {
        return;
    }
    let root = root_tree();
    let r = root.path().to_str().unwrap();
    let core = common::rt_core();
    let (child, procs) = start(r, &["--duration", "10s"]);
    for (pid, comm) in &procs {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            let list = l.split(':').nth(1).unwrap().trim();
            let cpus: Vec<usize> = list
                .split(',')
                .flat_map(|part| match part.split_once('-') {
                    Some((a, b)) => {
                        (a.parse::<usize>().unwrap()..=b.parse().unwrap()).collect::<Vec<_>>()
                    }
                    None => vec![part.parse().unwrap()],
                })
                .collect();
            assert!(
                !cpus.contains(&core),
                "{comm} ({pid}) may run on the RT core {core}: {list}"
            );
        }
    }
    let o = child.wait_with_output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0) | Some(1) | Some(3)),
        "{}",
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["load"]["kinds"], serde_json::json!(["cpu", "vm"]), "{v}");
    assert!(!v["load"]["cpus"].as_array().unwrap().contains(&core.into()));
    assert_all_gone(&procs, "a normal end");
}

#[test]
fn no_stress_ng_left_after_sigint_sigterm_or_kill_9() {
    if !common::require_root("no_stress_ng_left_after_sigint_sigterm_or_kill_9") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    if !std::path::Path::new("/usr/bin/stress-ng").exists()
        && !common::cannot_run("load", "no stress-ng (tests/install-deps.sh)")
    {
        return;
    }
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGKILL] {
        let root = root_tree();
        let r = root.path().to_str().unwrap();
        let (mut child, procs) = start(r, &["--duration", "60s"]);
        // stress-ng starts before the RT thread: a signal before its first period leaves nothing to report
        // (exit 2, seen under load). Once a checkpoint is saved, periods were measured.
        wait_for_checkpoint(root.path(), &mut child);
        kill(Pid::from_raw(child.id() as i32), sig).unwrap();
        let o = child.wait_with_output().unwrap();
        if sig != Signal::SIGKILL {
            // The final result is still printed, with the load in it.
            assert!(
                matches!(o.status.code(), Some(0) | Some(1) | Some(3)),
                "{sig}: {}",
                text(&o.stderr)
            );
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["interrupted"], true);
            assert_eq!(v["load"]["kinds"][0], "cpu");
        }
        assert_all_gone(&procs, &format!("{sig}"));
    }
}
