use super::super::resume::{Observed, ResumeAction, next};
use super::*;

const BOOT_A: &str = "a1b2c3d4-0000-4000-8000-000000000001";
const BOOT_B: &str = "a1b2c3d4-0000-4000-8000-000000000002";

/// cmdline (a trial boot), thp, then governor; two periods.
fn plan(one_at_a_time: bool) -> Qualify {
    Qualify::new(
        1,
        None,
        &[
            (StepId::Cmdline, true),
            (StepId::Thp, false),
            (StepId::Governor, false),
        ],
        &[1000, 500],
        one_at_a_time,
        10.0,
    )
}

fn seen(boot_id: &str, stage_run: Option<bool>) -> Observed {
    Observed {
        boot_id: boot_id.into(),
        stage_run,
    }
}

fn j(n: u32) -> String {
    format!("/var/lib/rmp-eval/journal/{n:06}.json")
}

/// A whole one-at-a-time qualify: each event, the phase it leads to, and what a resume right after it does
/// (the boot it resumes in: BOOT_A before the trial reboot, BOOT_B after).
fn one_at_a_time_script() -> Vec<(QualifyEvent, &'static str, ResumeAction)> {
    vec![
        (
            QualifyEvent::Start,
            "measuring the baseline",
            ResumeAction::MeasureBaseline,
        ),
        (
            QualifyEvent::BaselineMeasured("/r/base.json".into()),
            "step 1: applying",
            ResumeAction::Apply(0),
        ),
        (
            QualifyEvent::Applying { journals: 0 },
            "step 1: applying",
            ResumeAction::Apply(0),
        ),
        (
            QualifyEvent::TrialArmed {
                journal: j(1),
                boot_id: BOOT_A.into(),
                cmdline: "root=/dev/vda1 isolcpus=1".into(),
            },
            "step 1: trial boot pending",
            ResumeAction::JudgeTrial(0),
        ),
        (
            QualifyEvent::TrialBooted,
            "step 1: trial boot came up healthy, not yet committed",
            ResumeAction::Commit(0),
        ),
        (
            QualifyEvent::Committing { journals: 1 },
            "step 1: making the command line permanent",
            ResumeAction::Commit(0),
        ),
        (
            QualifyEvent::Committed { journal: j(2) },
            "step 1: measuring",
            ResumeAction::Measure(0),
        ),
        (
            QualifyEvent::Measured {
                result: "/r/cmdline.json".into(),
                effect: Effect::Better,
            },
            "step 2: applying",
            ResumeAction::Apply(1),
        ),
        (
            QualifyEvent::Applying { journals: 1 },
            "step 2: applying",
            ResumeAction::Apply(1),
        ),
        (
            QualifyEvent::Applied { journal: j(3) },
            "step 2: measuring",
            ResumeAction::Measure(1),
        ),
        (
            QualifyEvent::Measured {
                result: "/r/thp.json".into(),
                effect: Effect::Worse,
            },
            "step 2: measuring",
            ResumeAction::Revert(1),
        ),
        (
            QualifyEvent::Reverted,
            "step 3: applying",
            ResumeAction::Apply(2),
        ),
        (
            QualifyEvent::Applying { journals: 1 },
            "step 3: applying",
            ResumeAction::Apply(2),
        ),
        (
            QualifyEvent::Applied { journal: j(4) },
            "step 3: measuring",
            ResumeAction::Measure(2),
        ),
        (
            QualifyEvent::Measured {
                result: "/r/governor.json".into(),
                effect: Effect::NoClearChange,
            },
            "cycle-time sweep, period 1",
            ResumeAction::MeasureSweep(0),
        ),
        (
            QualifyEvent::SweepMeasured("/r/1000.json".into()),
            "cycle-time sweep, period 2",
            ResumeAction::MeasureSweep(1),
        ),
        (
            QualifyEvent::SweepMeasured("/r/500.json".into()),
            "done",
            ResumeAction::Report,
        ),
    ]
}

#[test]
fn one_at_a_time_runs_every_phase_in_order_and_records_what_it_learned() {
    let mut q = plan(true);
    assert_eq!(q.phase, Phase::Planned);
    for (ev, phase, _) in one_at_a_time_script() {
        q.apply(ev.clone())
            .unwrap_or_else(|e| panic!("{ev:?}: {e}"));
        assert_eq!(q.phase.describe(), phase, "after {ev:?}");
    }
    assert_eq!(q.baseline, Some("/r/base.json".into()));
    assert_eq!(
        q.steps[0].outcome,
        Some(StepOutcome::Kept {
            effect: Some(Effect::Better)
        })
    );
    // The trial entry's run was undone by the commit: only the commit's run is the step's.
    assert_eq!(q.steps[0].journals, [j(2)]);
    assert_eq!(
        q.steps[0].trial_cmdline.as_deref(),
        Some("root=/dev/vda1 isolcpus=1")
    );
    assert_eq!(q.steps[1].outcome, Some(StepOutcome::Reverted));
    assert_eq!(
        q.steps[2].outcome,
        Some(StepOutcome::Kept {
            effect: Some(Effect::NoClearChange)
        })
    );
    // What --abort would undo: the commit and the governor, not the reverted thp.
    assert_eq!(q.journals().collect::<Vec<_>>(), [j(2), j(4)]);
    assert_eq!(q.sweep[1].result, Some("/r/500.json".into()));
}

#[test]
fn all_at_once_applies_every_step_without_measuring_between() {
    let mut q = plan(false);
    for ev in [
        QualifyEvent::Start,
        QualifyEvent::BaselineMeasured("/r/b.json".into()),
        QualifyEvent::Applying { journals: 0 },
        QualifyEvent::TrialArmed {
            journal: j(1),
            boot_id: BOOT_A.into(),
            cmdline: "isolcpus=1".into(),
        },
        QualifyEvent::TrialBooted,
        QualifyEvent::Committing { journals: 1 },
        QualifyEvent::Committed { journal: j(2) },
    ] {
        q.apply(ev).unwrap();
    }
    assert_eq!(q.phase.describe(), "step 2: applying");
    q.apply(QualifyEvent::Applying { journals: 1 }).unwrap();
    q.apply(QualifyEvent::Applied { journal: j(3) }).unwrap();
    assert_eq!(q.phase.describe(), "step 3: applying");
    let measured = QualifyEvent::Measured {
        result: "/r/x.json".into(),
        effect: Effect::Better,
    };
    assert!(q.clone().apply(measured).is_err());
    q.apply(QualifyEvent::Applying { journals: 2 }).unwrap();
    q.apply(QualifyEvent::Applied { journal: j(4) }).unwrap();
    assert_eq!(q.phase, Phase::Sweep { index: 0 });
    assert!(
        q.steps
            .iter()
            .all(|s| s.outcome == Some(StepOutcome::Kept { effect: None }))
    );
}

#[test]
fn a_failed_trial_is_recorded_and_qualify_goes_on_without_it() {
    let mut q = plan(true);
    for ev in [
        QualifyEvent::Start,
        QualifyEvent::BaselineMeasured("/r/b.json".into()),
        QualifyEvent::Applying { journals: 0 },
        QualifyEvent::TrialArmed {
            journal: j(1),
            boot_id: BOOT_A.into(),
            cmdline: "init=/nonexistent".into(),
        },
    ] {
        q.apply(ev).unwrap();
    }
    // Still the boot that armed it: reboot; any other boot: judge it.
    assert_eq!(next(&q, &seen(BOOT_A, None)), ResumeAction::Reboot);
    assert_eq!(next(&q, &seen(BOOT_B, None)), ResumeAction::JudgeTrial(0));
    let why = "booted on the previous command line (no init=/nonexistent in /proc/cmdline)";
    q.apply(QualifyEvent::TrialFailed { why: why.into() })
        .unwrap();
    assert_eq!(q.phase.describe(), "step 2: applying");
    assert_eq!(
        q.steps[0].outcome,
        Some(StepOutcome::TrialFailed { why: why.into() })
    );
    assert_eq!(q.journals().count(), 0);
}

#[test]
fn an_event_the_phase_does_not_expect_is_refused_and_changes_nothing() {
    let mut q = plan(true);
    let before = q.clone();
    for ev in [
        QualifyEvent::TrialBooted,
        QualifyEvent::BaselineMeasured("/r/b.json".into()),
        QualifyEvent::Applied { journal: j(1) },
        QualifyEvent::SweepMeasured("/r/s.json".into()),
    ] {
        let e = q.apply(ev).unwrap_err();
        assert!(e.to_string().contains("planned, not started"), "{e}");
        assert_eq!(q, before);
    }
    q.apply(QualifyEvent::Start).unwrap();
    q.apply(QualifyEvent::BaselineMeasured("/r/b.json".into()))
        .unwrap();
    // A command-line step is not applied without a trial; a runtime step has none.
    q.apply(QualifyEvent::Applying { journals: 0 }).unwrap();
    assert!(
        q.clone()
            .apply(QualifyEvent::Applied { journal: j(1) })
            .is_err()
    );
    assert!(q.clone().apply(QualifyEvent::TrialBooted).is_err());
    // Aborted from anywhere before done, and nothing after.
    q.apply(QualifyEvent::Abort {
        why: "qualify --abort".into(),
    })
    .unwrap();
    assert_eq!(next(&q, &seen(BOOT_A, None)), ResumeAction::Nothing);
    assert!(q.clone().apply(QualifyEvent::Start).is_err());
    assert!(
        q.apply(QualifyEvent::Abort {
            why: "again".into()
        })
        .is_err()
    );
}

#[test]
fn a_worse_step_waits_for_its_revert_and_is_not_measured_again() {
    let mut q = plan(true);
    for (ev, _, _) in one_at_a_time_script().into_iter().take(11) {
        q.apply(ev).unwrap();
    }
    assert_eq!(next(&q, &seen(BOOT_B, None)), ResumeAction::Revert(1));
    let again = QualifyEvent::Measured {
        result: "/r/thp2.json".into(),
        effect: Effect::Better,
    };
    assert!(q.apply(again).is_err());
}

/// A crash right after each transition's write: the state read back is the one written, and a resume does
/// what the script says. A crash before the write leaves the previous state, whose resume is the previous
/// line's: the same script covers both.
#[test]
fn a_resume_after_a_crash_at_every_transition_does_the_right_next_thing() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::with_root(dir.path());
    assert_eq!(load(&host).unwrap(), None);
    let mut q = plan(true);
    save(&host, &q).unwrap();
    let boot = |q: &Qualify| {
        // After the trial was armed the resume runs in the next boot.
        let armed = q.steps[0].trial_cmdline.is_some();
        if armed { BOOT_B } else { BOOT_A }
    };
    assert_eq!(next(&q, &seen(BOOT_A, None)), ResumeAction::Start);
    for (ev, _, action) in one_at_a_time_script() {
        advance(&host, &mut q, ev.clone()).unwrap();
        let back = load(&host).unwrap().unwrap();
        assert_eq!(back, q, "after {ev:?}");
        assert_eq!(next(&back, &seen(boot(&q), None)), action, "after {ev:?}");
    }
}

#[test]
fn a_stage_cut_short_is_undone_and_done_again_one_complete_is_recorded() {
    let mut q = plan(true);
    for ev in [
        QualifyEvent::Start,
        QualifyEvent::BaselineMeasured("/r/b.json".into()),
        QualifyEvent::Applying { journals: 3 },
    ] {
        q.apply(ev).unwrap();
    }
    assert_eq!(next(&q, &seen(BOOT_A, None)), ResumeAction::Apply(0));
    assert_eq!(
        next(&q, &seen(BOOT_A, Some(false))),
        ResumeAction::UndoUnfinished(0)
    );
    assert_eq!(
        next(&q, &seen(BOOT_A, Some(true))),
        ResumeAction::FinishApply(0)
    );
    // Begun again after the undo: the count is taken again.
    q.apply(QualifyEvent::Applying { journals: 3 }).unwrap();
    q.apply(QualifyEvent::TrialArmed {
        journal: j(4),
        boot_id: BOOT_A.into(),
        cmdline: "isolcpus=1".into(),
    })
    .unwrap();
    q.apply(QualifyEvent::TrialBooted).unwrap();
    q.apply(QualifyEvent::Committing { journals: 4 }).unwrap();
    assert_eq!(next(&q, &seen(BOOT_B, None)), ResumeAction::Commit(0));
    assert_eq!(
        next(&q, &seen(BOOT_B, Some(false))),
        ResumeAction::UndoUnfinished(0)
    );
    assert_eq!(
        next(&q, &seen(BOOT_B, Some(true))),
        ResumeAction::FinishCommit(0)
    );
}

#[test]
fn a_crash_during_a_state_write_leaves_the_previous_state() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::with_root(dir.path());
    let mut q = plan(true);
    advance(&host, &mut q, QualifyEvent::Start).unwrap();
    let written = load(&host).unwrap().unwrap();
    // What a write killed before its rename leaves: a partial temporary file beside the state.
    let tmp = dir
        .path()
        .join("var/lib/rmp-eval/.qualify.json.rmp-eval.999999");
    std::fs::write(&tmp, "{\"version\":1,\"phase\":{\"pha").unwrap();
    assert_eq!(load(&host).unwrap(), Some(written));
    // A state file that is not one (hand-edited, another version) is an error that names it, never acted on.
    let path = dir.path().join("var/lib/rmp-eval/qualify.json");
    std::fs::write(&path, "{").unwrap();
    assert!(load(&host).unwrap_err().to_string().contains(STATE));
    let mut v = serde_json::to_value(&q).unwrap();
    v["version"] = 9.into();
    std::fs::write(&path, v.to_string()).unwrap();
    let e = load(&host).unwrap_err().to_string();
    assert!(e.contains("version 9"), "{e}");
}

#[test]
fn a_step_that_cannot_be_measured_is_undone_and_says_why_and_a_sweep_period_too() {
    let mut q = plan(true);
    q.apply(QualifyEvent::Start).unwrap();
    q.apply(QualifyEvent::BaselineMeasured("/r/base.json".into()))
        .unwrap();
    q.apply(QualifyEvent::Applying { journals: 0 }).unwrap();
    q.apply(QualifyEvent::NotTried { why: "no".into() })
        .unwrap();
    q.apply(QualifyEvent::Applying { journals: 0 }).unwrap();
    q.apply(QualifyEvent::Applied { journal: j(1) }).unwrap();
    let why = "no EtherCAT SubDevice answered on eth1 within 1 s".to_string();
    q.apply(QualifyEvent::MeasureFailed { why: why.clone() })
        .unwrap();
    // Recorded before it is undone: a resume after a crash here undoes it.
    assert_eq!(q.phase.describe(), "step 2: measuring");
    assert_eq!(next(&q, &seen(BOOT_A, None)), ResumeAction::Revert(1));
    assert!(
        q.apply(QualifyEvent::MeasureFailed { why: why.clone() })
            .is_err()
    );
    assert!(
        q.apply(QualifyEvent::Measured {
            result: "/r/x.json".into(),
            effect: Effect::Better
        })
        .is_err()
    );
    q.apply(QualifyEvent::Reverted).unwrap();
    assert_eq!(q.phase.describe(), "step 3: applying");
    assert_eq!(
        q.steps[1].outcome,
        Some(StepOutcome::MeasureFailed { why: why.clone() })
    );
    // Nothing measured with it: the next step is compared with the baseline.
    assert_eq!(q.previous_result(2), Some("/r/base.json".into()));
    q.apply(QualifyEvent::Applying { journals: 0 }).unwrap();
    q.apply(QualifyEvent::Applied { journal: j(2) }).unwrap();
    q.apply(QualifyEvent::Measured {
        result: "/r/governor.json".into(),
        effect: Effect::NoClearChange,
    })
    .unwrap();
    q.apply(QualifyEvent::SweepFailed { why: why.clone() })
        .unwrap();
    assert_eq!(q.sweep[0].failed.as_deref(), Some(why.as_str()));
    assert_eq!(next(&q, &seen(BOOT_A, None)), ResumeAction::MeasureSweep(1));
    q.apply(QualifyEvent::SweepMeasured("/r/500.json".into()))
        .unwrap();
    assert_eq!(q.phase, Phase::Done);
}
