//! qualify killed (SIGKILL) in the middle of a journal run — while arming the trial, while committing it — and
//! resumed: the cut-short run is undone and the stage done again, ending as if nothing had happened, and
//! rollback still restores every byte. The kill lands between two changes of fix's executor (the test seam
//! RMP_EVAL_TEST_PAUSE_FILE, compiled into test builds only).

use super::trial_cycle::{boot_trial, committed_then_rolled_back, planned, resume, state};
use crate::common;
use common::fix::{Root, journal_runs};

/// `qualify --resume` killed between two changes of fix's executor.
fn killed_mid_run(r: &Root) {
    common::fix::killed_mid_run(r, "qualify", &["--resume"]);
}

#[test]
fn killed_while_arming_and_while_committing_a_resume_finishes_the_stage_cleanly() {
    let r = planned();
    let start = r.tree();
    // Killed between writing the trial entry and grubenv.
    killed_mid_run(&r);
    assert!(r.exists("/boot/grub/custom.cfg"));
    assert_eq!(state(&r)["phase"]["stage"]["stage"], "applying");
    let out = resume(&r);
    assert!(out.contains("trial boot armed"), "{out}");
    assert_eq!(
        journal_runs(&r),
        1,
        "the cut-short run is undone, one run arms the trial"
    );
    assert_eq!(
        r.read("/boot/grub/custom.cfg").matches("menuentry").count(),
        1
    );
    assert!(
        r.read("/boot/grub/grubenv")
            .contains("\nnext_entry=rmp-eval-trial\n")
    );

    boot_trial(&r);
    r.write("/sys/devices/system/cpu/isolated", "1\n");
    // Killed between two changes of the commit (the drop-in written, the state file not yet).
    killed_mid_run(&r);
    assert_eq!(state(&r)["phase"]["stage"]["stage"], "committing");
    resume(&r);
    committed_then_rolled_back(&r, &start);
}
