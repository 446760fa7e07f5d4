//! The ethtool kind in plan, render and journal, planned under --root from snapshot readings: the seed PC's
//! (tests/fixtures/seed-i3-13100te: igc, rx-usecs 3, rx-frames 0, EEE enabled and active) and this project's VM
//! (tests/fixtures/vm-firecracker-snapshot: virtio_net eth0 with rx-usecs 0, EEE unsupported).

use super::*;
use crate::fix::ethtool::NicField;
use crate::fix::journal::{Entry, Run};
use crate::fix::{Note, Plan, apply, render};

const SEED: &str = include_str!("../../../tests/fixtures/seed-i3-13100te/rmp-eval-snapshot.json");
const VM: &str =
    include_str!("../../../tests/fixtures/vm-firecracker-snapshot/rmp-eval-snapshot.json");

fn root(snapshot: &str) -> (tempfile::TempDir, Host) {
    let d = tempfile::Builder::new()
        .prefix("ne-root-")
        .tempdir()
        .unwrap();
    std::fs::write(d.path().join("rmp-eval-snapshot.json"), snapshot).unwrap();
    let h = Host::with_root(d.path());
    (d, h)
}

fn target(nic: &str) -> Target {
    Target {
        core: 3,
        nic: Some(nic.into()),
        online: vec![0, 1, 2, 3],
        isolated: vec![3],
        cmdline_extra: vec![],
    }
}

fn eth(nic: &str, field: NicField, before: u32, after: u32) -> Change {
    Change::Ethtool(crate::fix::kind::nic::EthtoolChange {
        nic: nic.into(),
        field,
        before,
        after,
    })
}

#[test]
fn seed_pc_gets_rx_frames_1_before_rx_usecs_0_and_eee_off() {
    let (_d, host) = root(SEED);
    let t = target("enp2s0");
    let co = coalesce(&host, &t);
    // rx-frames first: rx-usecs 0 with rx-frames 0 would never interrupt; rollback undoes in reverse.
    assert_eq!(
        co.changes,
        [
            eth("enp2s0", NicField::RxFrames, 0, 1),
            eth("enp2s0", NicField::RxUsecs, 3, 0)
        ]
    );
    assert_eq!(eee(&host, &t).changes, [eth("enp2s0", NicField::Eee, 1, 0)]);
    let text = render::step_text(&co, false);
    assert!(
        text.contains("enp2s0: ethtool rx-usecs: 3 → 0 (would be set on the machine"),
        "{text}"
    );
    let json = render::plan_json(&Plan { steps: vec![co] });
    assert_eq!(json["steps"][0]["changes"][1]["kind"], "ethtool");
    assert_eq!(json["steps"][0]["changes"][1]["before"], "3");
    assert_eq!(json["steps"][0]["changes"][1]["after"], "0");
}

#[test]
fn vm_nic_already_right_and_eee_unsupported_is_a_note() {
    let (_d, host) = root(VM);
    let co = coalesce(&host, &target("eth0"));
    assert!(co.changes.is_empty(), "{co:?}");
    let e = eee(&host, &target("eth0"));
    assert!(e.changes.is_empty());
    assert_eq!(
        e.notes,
        [Note::Info(
            "eth0: not supported by the driver (EOPNOTSUPP): nothing to change".into()
        )]
    );
    // An interface the snapshot does not hold, and no --nic at all: notes, no changes.
    assert!(
        coalesce(&host, &target("enp9s0")).notes[0]
            .to_string()
            .contains("not in the snapshot")
    );
    let none = Target {
        nic: None,
        ..target("eth0")
    };
    assert!(eee(&host, &none).notes[0].to_string().contains("no --nic"));
}

#[test]
fn adaptive_rx_on_is_turned_off_and_rx_frames_left_when_nonzero() {
    let snap = r#"{"ethtool":{"enp1s0":{"coalesce":{"rx_usecs":0,"rx_frames":4,"adaptive_rx":true},"eee":{"supported":true,"enabled":false,"active":false}}}}"#;
    let (_d, host) = root(snap);
    let t = target("enp1s0");
    assert_eq!(
        coalesce(&host, &t).changes,
        [eth("enp1s0", NicField::AdaptiveRx, 1, 0)]
    );
    assert!(eee(&host, &t).changes.is_empty());
}

#[test]
fn journal_entry_round_trips_and_names_the_field_as_ethtool_does() {
    let e = Entry::Ethtool(crate::fix::kind::nic::SavedEthtool {
        target: crate::fix::ethtool::target("enp2s0", NicField::RxUsecs),
        nic: "enp2s0".into(),
        field: NicField::RxUsecs,
        previous: 3,
        written: None,
    });
    let run = Run {
        version: 1,
        created: "2026-12-02T12:00:00Z".into(),
        core: 3,
        nic: Some("enp2s0".into()),
        steps: vec!["nic_coalesce".into()],
        entries: vec![e.clone()],
        after_restore: vec![],
        complete: true,
    };
    let text = serde_json::to_string(&run).unwrap();
    assert!(
        text.contains(r#"{"kind":"ethtool","target":"enp2s0: ethtool rx-usecs","nic":"enp2s0","field":"rx-usecs","previous":3}"#),
        "{text}"
    );
    let back: Run = serde_json::from_str(&text).unwrap();
    assert_eq!(back, run);
    assert_eq!(
        back.entries[0].path(),
        eth("enp2s0", NicField::RxUsecs, 3, 0).target()
    );
}

/// Under --root nothing is set on the machine: the change is reported as what would be done, and not journaled
/// (a rollback has nothing of the NIC to restore).
#[test]
fn under_root_nothing_is_written_or_journaled() {
    let (d, host) = root(SEED);
    let t = target("enp2s0");
    let plan = Plan {
        steps: vec![coalesce(&host, &t), eee(&host, &t)],
    };
    let report = apply::apply(&host, &plan, 3, Some("enp2s0")).unwrap();
    assert_eq!(report.outcomes.len(), 3);
    assert!(
        report
            .outcomes
            .iter()
            .all(|o| o.took == crate::fix::kind::Took::WouldRun),
        "{report:?}"
    );
    let runs = crate::fix::journal::load_all(&host).unwrap();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].1.entries.is_empty(), "{:?}", runs[0].1);
    assert!(d.path().join("var/lib/rmp-eval/journal").is_dir());
}
