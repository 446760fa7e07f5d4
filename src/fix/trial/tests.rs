use super::pending::{Action, Pending, TrialStage, next};

fn at(stage: TrialStage) -> Pending {
    Pending {
        version: 1,
        armed: "2026-12-06T08:00:00Z".into(),
        core: 1,
        nic: None,
        failed: vec!["isolcpus".into()],
        cmdline: "ro isolcpus=1 panic=10".into(),
        boot_id: "A".into(),
        reboot: vec!["systemctl".into(), "reboot".into()],
        stage,
        retries: 0,
        judged: None,
    }
}

fn run(path: &str, complete: bool) -> Option<(String, bool)> {
    Some((path.into(), complete))
}

/// Every stage, as a clean stop, a crash or a reboot leaves it, against what the boot shows.
#[test]
fn every_stage_and_every_crash_point_has_one_next_step() {
    use Action as A;
    let arming = at(TrialStage::Arming { journals: 1 });
    // Killed before the trial's run began, while it was written, after it was complete.
    assert_eq!(next(&arming, "A", None), A::Abandon(None));
    assert_eq!(
        next(&arming, "B", run("j2", false)),
        A::Abandon(Some("j2".into()))
    );
    assert_eq!(
        next(&arming, "B", run("j2", true)),
        A::RecordArmed("j2".into())
    );
    let armed = at(TrialStage::Armed {
        journal: "j2".into(),
    });
    // The boot that armed it (not rebooted yet): wait; any other boot: judge it.
    assert_eq!(next(&armed, "A", None), A::Wait);
    assert_eq!(next(&armed, "B", None), A::Judge);
    let committing = at(TrialStage::Committing {
        trial: "j2".into(),
        journals: 2,
    });
    assert_eq!(next(&committing, "B", None), A::Commit(None));
    assert_eq!(
        next(&committing, "B", run("j3", false)),
        A::Commit(Some("j3".into()))
    );
    assert_eq!(next(&committing, "B", run("j3", true)), A::FinishCommit);
    // Ended: nothing, whatever the boot.
    for end in [
        TrialStage::Kept {
            journal: "j3".into(),
        },
        TrialStage::Undone { why: "x".into() },
    ] {
        assert_eq!(next(&at(end), "C", run("j9", true)), A::Nothing);
    }
}

#[test]
fn the_record_reads_back_as_written_and_says_where_it_is() {
    let p = at(TrialStage::Committing {
        trial: "j2".into(),
        journals: 2,
    });
    let text = serde_json::to_string(&p).unwrap();
    assert!(
        text.contains(r#""stage":{"stage":"committing","trial":"j2","journals":2}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<Pending>(&text).unwrap(), p);
    assert!(
        at(TrialStage::Undone {
            why: "the trial boot was not healthy".into()
        })
        .describe()
        .contains("undone, the command line left as it was: the trial boot was not healthy")
    );
}
