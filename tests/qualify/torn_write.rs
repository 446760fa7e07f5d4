//! qualify's state write cut at each of its steps (the test seam RMP_EVAL_TEST_PAUSE_STATE, compiled into test
//! builds only, pauses the writer there; the process is SIGKILLed): the state read back is the old one (temporary
//! written or fsynced, not renamed) or the new one (renamed), never a torn one; the temporary left beside it is
//! removed by the next write, and a resume goes on from the state it finds.

use super::trial_cycle::{STATE, planned, resume, state};
use crate::common;
use common::fix::{Root, journal_runs};

/// `qualify --resume` killed in the write of the step's "applying" with its journal count (the second write:
/// the first writes the found state again), at `step`.
fn killed_in_write(r: &Root, step: &str) {
    common::fix::killed_at_seam(
        r,
        "qualify",
        &["--resume"],
        ("RMP_EVAL_TEST_PAUSE_STATE", &format!("{step}:")),
        |phase| phase.contains("\"journals\":0"),
    );
}

/// The temporary files beside the state.
fn temps(r: &Root) -> Vec<String> {
    std::fs::read_dir(r.path("/var/lib/rmp-eval"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".qualify.json.rmp-eval."))
        .collect()
}

#[test]
fn a_state_write_cut_at_each_step_leaves_the_old_or_the_new_state_and_resumes() {
    for (step, renamed) in [
        ("written", false),
        ("synced", false),
        ("renamed", true),
        ("dir_synced", true),
    ] {
        let r = planned();
        killed_in_write(&r, step);
        let found = state(&r);
        let journals = &found["phase"]["stage"]["journals"];
        if renamed {
            assert_eq!(*journals, 0, "{step}: the new state");
            assert!(temps(&r).is_empty(), "{step}: {:?}", temps(&r));
        } else {
            assert!(journals.is_null(), "{step}: the old state, {journals}");
            assert_eq!(temps(&r).len(), 1, "{step}: the temporary beside it");
        }
        assert_eq!(found["phase"]["stage"]["stage"], "applying", "{step}");
        let out = resume(&r);
        assert!(out.contains("trial boot armed"), "{step}: {out}");
        assert_eq!(state(&r)["phase"]["stage"]["stage"], "trial_armed");
        assert_eq!(journal_runs(&r), 1, "{step}");
        assert!(temps(&r).is_empty(), "{step}: left {:?}", temps(&r));
        assert!(r.read(STATE).ends_with("}\n"), "{step}");
    }
}
