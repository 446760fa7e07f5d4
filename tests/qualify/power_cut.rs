//! Power cut between two of qualify's state writes where the next boot is not the one the state expects: after
//! the trial boot's health check and before its commit (the next boot is on the default, old line), and while
//! `qualify --abort` undoes (the abort recorded, its runs not all undone). The cut is a SIGKILL at the state
//! write's end (the seam RMP_EVAL_TEST_PAUSE_STATE, test builds only), then the tree is booted as GRUB would.

use super::trial_cycle::{STATE, boot_trial, planned, resume, state};
use crate::common;
use common::fix::{Root, diff, journal_runs, ok, text};

const BOOT_C: &str = "6a1f0d7e-9a43-4c59-9c7e-000000000003\n";

/// `qualify ARGS` killed once the state write of a phase matching `phase` is complete (or at `step`).
fn cut_at(r: &Root, args: &[&str], step: &str, phase: &str) {
    common::fix::killed_at_seam(
        r,
        "qualify",
        args,
        ("RMP_EVAL_TEST_PAUSE_STATE", &format!("{step}:")),
        |p| p.contains(phase),
    );
}

/// Through the trial boot (resumed, booted, CPU 1 isolated), killed once the state says `stage`, then a new boot
/// on the line and isolated set the tree started with.
fn trial_cut_then_old_line(r: &Root, stage: &str) {
    let (line, isolated) = (
        r.read("/proc/cmdline"),
        r.read("/sys/devices/system/cpu/isolated"),
    );
    assert!(resume(r).contains("trial boot armed"));
    boot_trial(r);
    r.write("/sys/devices/system/cpu/isolated", "1\n");
    cut_at(r, &["--resume"], "dir_synced", &format!("\"{stage}\""));
    assert_eq!(state(r)["phase"]["stage"]["stage"], stage);
    r.write("/proc/sys/kernel/random/boot_id", BOOT_C);
    r.write("/proc/cmdline", &line);
    r.write("/sys/devices/system/cpu/isolated", &isolated);
}

#[test]
fn cut_after_the_trial_boots_health_check_the_commit_reboots_onto_the_committed_line_before_going_on()
 {
    let r = planned();
    // GRUB cleared next_entry when it booted the trial: the next boot is the default entry, the old line.
    trial_cut_then_old_line(&r, "trial_booted");
    let out = resume(&r);
    assert!(
        out.contains("a reboot onto the committed line first"),
        "{out}"
    );
    assert!(out.contains("reboot now (systemctl reboot)"), "{out}");
    assert!(r.exists("/etc/default/grub.d/99-rmp-eval.cfg"), "{out}");
    // The sysctl step waits for the committed line.
    let q = state(&r);
    assert_eq!(q["phase"]["index"], 1, "{q}");
    assert!(q["phase"]["stage"]["journals"].is_null(), "{q}");
    assert_eq!(q["steps"][0]["outcome"]["outcome"], "kept", "{q}");
}

#[test]
fn an_abort_cut_short_is_recorded_first_and_finished_by_the_next_resume() {
    for (step, recorded) in [("written", false), ("dir_synced", true)] {
        let r = planned();
        let start = r.tree();
        assert!(resume(&r).contains("trial boot armed"));
        cut_at(&r, &["--abort"], step, "\"aborted\"");
        // Old state: the trial still armed, its entry in place; new: aborted, nothing undone yet.
        let q = state(&r);
        let want = if recorded { "aborted" } else { "step" };
        assert_eq!(q["phase"]["phase"], want, "{step}: {q}");
        assert!(r.exists("/boot/grub/custom.cfg"), "{step}");
        assert_eq!(journal_runs(&r), 1, "{step}");
        let o = r.rmp("qualify", &[if recorded { "--resume" } else { "--abort" }]);
        ok(&o);
        assert!(
            text(&o).contains("aborted; what it applied is undone"),
            "{step}: {}",
            text(&o)
        );
        assert_eq!(journal_runs(&r), 0, "{step}");
        assert_eq!(state(&r)["phase"]["phase"], "aborted", "{step}");
        // Nothing more to resume: the unit at the next boot does nothing.
        let o = r.rmp("qualify", &["--resume"]);
        assert!(
            text(&o).contains("nothing under way"),
            "{step}: {}",
            text(&o)
        );
        let mut want = start.clone();
        want.remove(STATE.trim_start_matches('/'));
        let mut now = r.tree();
        now.remove(STATE.trim_start_matches('/'));
        assert_eq!(diff(&want, &now), Vec::<String>::new(), "{step}");
    }
}

#[test]
fn cut_after_arming_a_boot_that_skipped_the_trial_boots_it_once_more_then_judges() {
    let r = planned();
    let line = r.read("/proc/cmdline");
    assert!(resume(&r).contains("trial boot armed"));
    // Power lost before the reboot: GRUB read the grubenv from before the arming and booted the default entry;
    // Linux replayed its journal, so the file shows the trial still armed.
    r.write("/proc/sys/kernel/random/boot_id", BOOT_C);
    let out = resume(&r);
    assert!(out.contains("booting it once more"), "{out}");
    assert!(out.contains("reboot now (systemctl reboot)"), "{out}");
    let q = state(&r);
    assert_eq!(q["phase"]["stage"]["stage"], "trial_armed", "{q}");
    assert_eq!(q["steps"][0]["trial_retries"], 1, "{q}");
    assert!(
        r.read("/boot/grub/grubenv")
            .contains("\nnext_entry=rmp-eval-trial\n")
    );
    // Skipped again: judged, a failed trial, its entry undone.
    r.write(
        "/proc/sys/kernel/random/boot_id",
        "6a1f0d7e-9a43-4c59-9c7e-000000000004\n",
    );
    r.write("/proc/cmdline", &line);
    let out = resume(&r);
    assert!(out.contains("the trial boot failed"), "{out}");
    assert!(!r.exists("/boot/grub/custom.cfg"), "{out}");
    assert_eq!(state(&r)["steps"][0]["outcome"]["outcome"], "trial_failed");
}

/// One at a time, the command-line step only, qualify started on the tree's own line.
fn planned_one_at_a_time(r: &Root) {
    let original = serde_json::to_string(&r.read("/proc/cmdline")).unwrap();
    r.write(
        STATE,
        &format!(
            r#"{{"version":1,"started":"2026-12-06T08:00:00Z","core":1,"nic":null,"one_at_a_time":true,
            "seconds":10.0,"steps":[{{"step":"cmdline","reboot":true}}],"sweep":[],
            "baseline":"/var/lib/rmp-eval/results/base.json","original_cmdline":{original},
            "phase":{{"phase":"step","index":0,"stage":{{"stage":"applying","journals":null}}}}}}"#
        ),
    );
}

#[test]
fn cut_after_the_commit_a_boot_on_the_old_grub_cfg_is_not_measured_but_rebooted_once_then_the_step_fails()
 {
    let r = Root::untuned_grub();
    planned_one_at_a_time(&r);
    // Committed, the measurement about to begin: the power is cut. GRUB read /boot without replaying the
    // journal: the old grub.cfg, the old line.
    trial_cut_then_old_line(&r, "measuring");
    assert!(r.exists("/etc/default/grub.d/99-rmp-eval.cfg"));
    let out = resume(&r);
    assert!(out.contains("not the command line in force"), "{out}");
    assert!(out.contains("a reboot onto it first"), "{out}");
    assert!(out.contains("reboot now (systemctl reboot)"), "{out}");
    let q = state(&r);
    assert_eq!(q["phase"]["stage"]["stage"], "measuring", "{q}");
    assert!(q["steps"][0]["result"].is_null(), "nothing measured: {q}");
    // The next boot is on the old line again: recorded, the step undone, qualify goes on (here: done).
    r.write(
        "/proc/sys/kernel/random/boot_id",
        "6a1f0d7e-9a43-4c59-9c7e-000000000004\n",
    );
    let out = resume(&r);
    assert!(out.contains("again after a reboot onto it"), "{out}");
    let q = state(&r);
    let outcome = &q["steps"][0]["outcome"];
    assert_eq!(outcome["outcome"], "measure_failed", "{q}");
    assert!(
        outcome["why"]
            .as_str()
            .unwrap()
            .contains("(cmdline) is not on it"),
        "{q}"
    );
    assert_eq!(q["phase"]["phase"], "done", "{q}");
    assert!(!r.exists("/etc/default/grub.d/99-rmp-eval.cfg"), "{out}");
    let st = text(&r.rmp("qualify", &["--status"]));
    assert!(st.contains("again after a reboot onto it"), "{st}");
}
