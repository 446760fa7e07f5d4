//! No page fault in the RT loops of a NIC run — the sender, the receiver — nor in `reflect` answering them: each
//! thread's fault counters, read after the first frames and again near the end, do not move (memory locked and
//! stacks pre-faulted before the loops start; the page-fault test in tests/run/cyclic.rs proves the reading sees one).

use crate::common;
use common::nic::{Veth, nic_run};
use common::run::faults_across_a_run;

#[test]
fn the_sender_the_receiver_and_reflect_take_no_page_fault() {
    if !common::require_root("NIC page faults") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let r = v.reflect(&[]);
    let run = nic_run(&v.host, &["--duration", "4", "--json"]);
    let (before, after) = faults_across_a_run(run, 2, &[r.pid() as u32]);
    assert!(
        before.iter().any(|t| t.0 == "rmp-eval"),
        "reflect read: {before:?}"
    );
    assert_eq!(
        before, after,
        "(thread, minor, major faults) while measuring"
    );
}
