//! At the instant the first RT thread of a run starts, every other thread of the process is already kept off the
//! RT CPUs (the session's one setup sequence), for the cyclic loop, a thread set and a NIC run. The masks are
//! written by the binary's test seam (RMP_EVAL_TEST_THREADS_FILE, src/measure/session/rt.rs) from /proc/self/task.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common;
use common::nic::{Veth, nic_run};
use common::run::{assert_measured, root_tree, run_on};

const SEAM: &str = "RMP_EVAL_TEST_THREADS_FILE";

/// "0-2,5" → [0, 1, 2, 5].
fn cpu_list(s: &str) -> Vec<usize> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .flat_map(|p| match p.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<usize>>(),
            None => vec![p.parse().unwrap()],
        })
        .collect()
}

/// Runs `cmd` with the seam and asserts what it wrote: at least one SCHED_FIFO thread and one other, and no
/// other thread allowed on a CPU a SCHED_FIFO thread is pinned to.
fn assert_confined(mut cmd: Command) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("threads");
    let o = cmd.env(SEAM, &file).output().unwrap();
    assert_measured(&o);
    let text = std::fs::read_to_string(&file).expect("the first RT thread wrote the threads");
    assert_threads(&text, &file);
}

fn assert_threads(text: &str, file: &Path) {
    // "TID NAME POLICY CPUS": the name may hold spaces, the last two fields never do.
    let rows: Vec<(String, u32, Vec<usize>)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let n = f.len();
            (
                f[1..n - 2].join(" "),
                f[n - 2].parse().unwrap(),
                cpu_list(f[n - 1]),
            )
        })
        .collect();
    let rt: BTreeSet<usize> = rows
        .iter()
        .filter(|r| r.1 == 1)
        .flat_map(|r| r.2.iter().copied())
        .collect();
    assert!(!rt.is_empty(), "no SCHED_FIFO thread in {file:?}:\n{text}");
    let others: Vec<_> = rows.iter().filter(|r| r.1 != 1).collect();
    assert!(!others.is_empty(), "no other thread in {file:?}:\n{text}");
    for (name, _, cpus) in others {
        assert!(
            cpus.iter().all(|c| !rt.contains(c)),
            "{name} may run on the RT CPU(s) {rt:?} when the first RT thread starts:\n{text}"
        );
    }
}

#[test]
fn the_cyclic_loop_starts_with_every_other_thread_off_its_core() {
    if !common::require_root("confined cyclic") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    assert_confined(run_on(root.path(), &["--duration", "1", "--json"]));
}

#[test]
fn a_thread_set_starts_with_every_other_thread_off_its_core() {
    if !common::require_root("confined thread set") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    assert_confined(run_on(
        root.path(),
        &["--profile", "linuxcnc", "--duration", "1", "--json"],
    ));
}

#[test]
fn a_nic_run_starts_with_every_other_thread_off_its_cores() {
    if !common::require_root("confined NIC run") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let _r = v.reflect(&[]);
    assert_confined(nic_run(&v.host, &["--iterations", "200", "--json"]));
}

#[test]
fn the_check_sees_a_thread_on_the_rt_core() {
    let text = "10 rmp-eval 0 0-1\n11 rmp-eval-rt 1 1\n";
    let r = std::panic::catch_unwind(|| assert_threads(text, Path::new("x")));
    assert!(r.is_err());
    assert_threads("10 rmp-eval 0 0\n11 rmp-eval-rt 1 1\n", Path::new("x"));
}
