//! qualify killed (SIGKILL) in the middle of a journal run — while arming the trial, while committing it — and
//! resumed: the cut-short run is undone and the stage done again, ending as if nothing had happened, and
//! rollback still restores every byte. The kill lands between two changes of fix's executor (the test seam
//! RMP_EVAL_TEST_PAUSE_FILE, compiled into test builds only).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::trial_cycle::{boot_trial, committed_then_rolled_back, planned, resume, state};
use crate::common::fix::{BIN, Root};

/// Runs `qualify --resume` until fix's executor pauses between two changes, and kills it there.
fn killed_mid_run(r: &Root) {
    let scratch = tempfile::tempdir().unwrap();
    let flag = scratch.path().join("paused");
    let mut child = Command::new(BIN)
        .args(["qualify", "--root"])
        .arg(r.dir.path())
        .arg("--resume")
        .env("RMP_EVAL_TEST_PAUSE_FILE", &flag)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !flag.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "qualify never paused"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "qualify ended before pausing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

fn journal_runs(r: &Root) -> usize {
    std::fs::read_dir(r.path("/var/lib/rmp-eval/journal")).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".json")
        })
        .count()
    })
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
