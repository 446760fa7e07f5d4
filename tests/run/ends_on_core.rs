//! A run's process ends on its RT core, with no other thread left: the core has held the process's page tables
//! since its loop ended, and their teardown at exit, done from another CPU, would be a TLB-shootdown IPI to it.
//! What the binary's test seam (RMP_EVAL_TEST_END_FILE, src/measure/session/rt.rs) writes at that point: the number of
//! threads left and the ending thread's allowed CPUs, checked against the core the result names.

use std::process::Command;

use crate::common;
use common::nic::{Veth, nic_run};
use common::run::{assert_measured, root_tree, run_on};

const SEAM: &str = "RMP_EVAL_TEST_END_FILE";

/// Runs `cmd` with the seam: one thread left, allowed on the result's core only.
fn assert_ends_on_core(mut cmd: Command) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("end");
    let o = cmd.env(SEAM, &file).output().unwrap();
    assert_measured(&o);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the run's JSON");
    let core = r["core"].as_u64().expect("the result names its core");
    let text = std::fs::read_to_string(&file).expect("the run wrote where it ends");
    assert_eq!(
        text,
        format!("1 {core}\n"),
        "threads left, CPUs of the last one"
    );
}

#[test]
fn a_cyclic_run_ends_on_its_core() {
    if !common::require_root("cyclic run's end") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    assert_ends_on_core(run_on(root.path(), &["--duration", "1", "--json"]));
}

#[test]
fn a_thread_set_ends_on_its_core() {
    if !common::require_root("thread set's end") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    assert_ends_on_core(run_on(
        root.path(),
        &["--profile", "linuxcnc", "--duration", "1", "--json"],
    ));
}

#[test]
fn a_nic_run_ends_on_its_core() {
    if !common::require_root("NIC run's end") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let _r = v.reflect(&[]);
    assert_ends_on_core(nic_run(&v.host, &["--iterations", "200", "--json"]));
}
