//! The nic_coalesce and nic_eee steps. On a fixture root (captured Debian 12 guest, with the seed PC's igc
//! readings from tests/fixtures/seed-i3-13100te/rmp-eval-snapshot.json as its NIC's snapshot): planned as
//! "before → after", nothing set under --root, saved for apply-saved, rolled back. Live (root): a veth, whose
//! driver answers EOPNOTSUPP, reported for its step while RPS in the same run applies and rolls back; a tap,
//! whose driver takes rx-frames, set through SIOCETHTOOL, read back, journaled and restored. eth0 is never written.

use crate::common;
use common::fix as fix_support;
use std::process::Command;

use fix_support::{Link, Root, diff, ok, text};
use rmp_eval::fix::apply;
use rmp_eval::fix::ethtool::{self, NicField};
use rmp_eval::fix::kind::{self, How, Restored, Took};
use rmp_eval::fix::plan::{self, Request};
use rmp_eval::fix::{Change, Note, Plan, Step, journal, undo};
use rmp_eval::host::Host;
use rmp_eval::remedy::StepId;

const SEED_SNAPSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/seed-i3-13100te/rmp-eval-snapshot.json"
);

#[test]
fn fixture_root_plans_sets_nothing_saves_and_rolls_back() {
    let r = Root::untuned();
    let snap = std::fs::read_to_string(SEED_SNAPSHOT)
        .unwrap()
        .replace("enp2s0", "enp0s2");
    r.write("/rmp-eval-snapshot.json", &snap);
    let start = r.tree();
    let args = [
        "--core",
        "1",
        "--nic",
        "enp0s2",
        "--only",
        "nic_coalesce,nic_eee",
    ];
    let o = r.rmp("fix", &[&args[..], &["--dry-run", "--json"]].concat());
    ok(&o);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let co = &plan["steps"][0]["changes"];
    assert_eq!(co[1]["kind"], "ethtool");
    assert_eq!(co[1]["target"], "enp0s2: ethtool rx-usecs");
    assert_eq!(
        (co[1]["before"].as_str(), co[1]["after"].as_str()),
        (Some("3"), Some("0"))
    );
    assert_eq!(
        plan["steps"][1]["changes"][0]["target"],
        "enp0s2: ethtool eee"
    );
    assert!(
        diff(&start, &r.tree()).is_empty(),
        "dry run changed the tree"
    );

    let o = r.rmp("fix", &[&args[..], &["--yes", "--no-measure"]].concat());
    ok(&o);
    let out = text(&o);
    assert!(
        out.contains("enp0s2: ethtool eee: 1 → 0 (would be set on the machine"),
        "{out}"
    );
    assert!(
        out.contains("[nic_coalesce] enp0s2: ethtool rx-usecs: not run (--root)"),
        "{out}"
    );
    let saved: serde_json::Value =
        serde_json::from_str(&r.read("/var/lib/rmp-eval/runtime.json")).unwrap();
    assert_eq!(
        saved["steps"],
        serde_json::json!(["nic_coalesce", "nic_eee"])
    );
    assert_eq!(saved["nic"], "enp0s2");

    // What the udev rule runs when the NIC appears: the saved steps planned again.
    let o = r.rmp("apply-saved", &["--nic", "enp0s2"]);
    ok(&o);
    let out = text(&o);
    assert!(
        out.contains("enp0s2: ethtool rx-usecs: would be set to 0"),
        "{out}"
    );
    assert!(
        out.contains("enp0s2: ethtool eee: would be set to 0"),
        "{out}"
    );

    r.rolls_back_to(&start);
}

/// Removes this test's journal run, so that a failed test leaves nothing for a later rollback.
struct OwnRun(String);
impl Drop for OwnRun {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn root() -> bool {
    common::require_root("fix_ethtool")
}

#[test]
fn veth_answers_eopnotsupp_for_its_step_and_rps_still_applies() {
    if !root() {
        return;
    }
    let _one = common::lock::LIVE.alone();
    let name = format!("ne-v{}", std::process::id() % 100_000);
    let _link = Link::veth(&name);
    let rps = format!("/sys/class/net/{name}/queues/rx-0/rps_cpus");
    std::fs::write(&rps, "1\n").unwrap();
    let host = Host::live();
    let core = *plan::online_cpus(&host).unwrap().last().unwrap();
    let req = Request {
        core,
        nic: Some(name.clone()),
        steps: vec![StepId::Rps, StepId::NicCoalesce, StepId::NicEee],
        failed: vec![],
        cmdline_extra: vec![],
    };
    let mut p = plan::build(&host, &req).unwrap();
    for id in [StepId::NicCoalesce, StepId::NicEee] {
        let s = p.steps.iter().find(|s| s.id == id).unwrap();
        assert!(s.changes.is_empty(), "{s:?}");
        assert_eq!(
            s.notes,
            [Note::Info(format!(
                "{name}: not supported by the driver (EOPNOTSUPP): nothing to change"
            ))]
        );
    }
    // The same through the command (a dry run: nothing changes on this machine).
    let o = Command::new(fix_support::BIN)
        .args(["fix", "--core", &core.to_string(), "--nic", &name])
        .args(["--only", "rps,nic_coalesce,nic_eee", "--dry-run"])
        .output()
        .unwrap();
    ok(&o);
    let out = text(&o);
    assert_eq!(
        out.matches("not supported by the driver (EOPNOTSUPP)")
            .count(),
        2,
        "{out}"
    );
    let mask = std::fs::read_to_string(&rps).unwrap();
    assert!(
        out.contains(&format!("{rps}: {} → 0", mask.trim())),
        "{out}"
    );
    // A driver may read a setting and refuse the write: the same EOPNOTSUPP, now from ETHTOOL_SEEE, between
    // the RPS change and the persist step.
    let rps_step = p.steps.iter().position(|s| s.id == StepId::Rps).unwrap();
    p.steps.insert(
        rps_step + 1,
        Step {
            id: StepId::NicEee,
            title: "EEE off".into(),
            why: "test".into(),
            changes: vec![Change::Ethtool(kind::nic::EthtoolChange {
                nic: name.clone(),
                field: NicField::Eee,
                before: 1,
                after: 0,
            })],
            notes: vec![],
        },
    );
    p.steps.retain(|s| s.id != StepId::Persist);
    let report = apply::apply(&host, &p, core, Some(&name)).unwrap();
    let _own = OwnRun(report.journal.clone());
    let eee = report
        .outcomes
        .iter()
        .find(|o| o.step == StepId::NicEee)
        .unwrap();
    assert!(matches!(&eee.took, Took::Unsupported(_)), "{eee:?}");
    assert!(
        rmp_eval::fix::render::report_text(&report).contains(&format!(
            "[nic_eee] {name}: ethtool eee: not supported by the driver"
        ))
    );
    let r = report.outcomes.iter().find(|o| o.target == rps).unwrap();
    assert_eq!(r.took, Took::Took);
    assert!(
        rmp_eval::parse::mask::parse(&std::fs::read_to_string(&rps).unwrap())
            .unwrap()
            .is_empty()
    );

    let runs = journal::load_all(&host).unwrap();
    let (_, run) = runs.iter().find(|(p, _)| *p == report.journal).unwrap();
    assert!(run.complete);
    assert!(
        !run.entries
            .iter()
            .any(|e| matches!(e, journal::Entry::Ethtool { .. })),
        "{run:?}"
    );
    assert_eq!(
        undo::undo(&host, run, How::default()).problems,
        Vec::<String>::new()
    );
    assert_eq!(
        rmp_eval::parse::mask::parse(&std::fs::read_to_string(&rps).unwrap()).unwrap(),
        vec![0]
    );
}

#[test]
fn tap_rx_frames_set_for_real_verified_and_restored_from_the_journal() {
    if !root() {
        return;
    }
    let _one = common::lock::LIVE.alone();
    let name = format!("ne-t{}", std::process::id() % 100_000);
    let _link = Link::tap(&name);
    let before = ethtool::read(&name, NicField::RxFrames).unwrap();
    let others = rmp_eval::machine::facts::live_readings(&name);
    let want = if before == 8 { 4 } else { 8 };
    let host = Host::live();
    let plan = Plan {
        steps: vec![Step {
            id: StepId::NicCoalesce,
            title: "rx-frames".into(),
            why: "test".into(),
            changes: vec![Change::Ethtool(kind::nic::EthtoolChange {
                nic: name.clone(),
                field: NicField::RxFrames,
                before,
                after: want,
            })],
            notes: vec![],
        }],
    };
    let report = apply::apply(&host, &plan, 1, Some(&name)).unwrap();
    let _own = OwnRun(report.journal.clone());
    assert_eq!(report.outcomes[0].took, Took::Took, "{report:?}");
    assert_eq!(ethtool::read(&name, NicField::RxFrames).unwrap(), want);
    let now = rmp_eval::machine::facts::live_readings(&name);
    assert_eq!(
        now["coalesce"]["rx_usecs"], others["coalesce"]["rx_usecs"],
        "only rx-frames changes"
    );

    let runs = journal::load_all(&host).unwrap();
    let (path, run) = runs.iter().find(|(p, _)| *p == report.journal).unwrap();
    assert_eq!(
        run.entries,
        [journal::Entry::Ethtool(kind::nic::SavedEthtool {
            target: format!("{name}: ethtool rx-frames"),
            nic: name.clone(),
            field: NicField::RxFrames,
            previous: before,
            written: Some(want),
        })]
    );
    let preview = kind::restore(
        &host,
        &run.entries[0],
        How {
            dry_run: true,
            force: false,
        },
    )
    .unwrap();
    assert_eq!(preview, Restored::Written(format!("{want} → {before}")));
    assert_eq!(
        ethtool::read(&name, NicField::RxFrames).unwrap(),
        want,
        "a dry run wrote"
    );
    assert_eq!(
        undo::undo(&host, run, How::default()).problems,
        Vec::<String>::new()
    );
    host.remove_file(path).unwrap();
    assert_eq!(ethtool::read(&name, NicField::RxFrames).unwrap(), before);
    assert_eq!(rmp_eval::machine::facts::live_readings(&name), others);
}
