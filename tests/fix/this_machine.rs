//! Live on this machine (root only): a movable IRQ's affinity, the RPS mask of a veth created here (real
//! planner), and a sysctl are applied for real through the journal, read back, undone from the journal, and read
//! back again. The originals are restored even when an assertion fails (guards), and the veth is removed.

use std::process::Command;

use rmp_eval::fix::apply;
use rmp_eval::fix::kind::{self, How, Restored, Took};
use rmp_eval::fix::runtime::Target;
use rmp_eval::fix::{Change, Plan, Step, StepId, ValueKind};
use rmp_eval::fix::{journal, undo};
use rmp_eval::host::Host;
use rmp_eval::tunable::irq_affinity;

use crate::common;
use common::fix as fix_support;
use fix_support::Link;

/// Writes the recorded originals back when dropped (whatever the test did in between).
struct Originals(Vec<(String, String)>);
impl Drop for Originals {
    fn drop(&mut self) {
        for (path, v) in &self.0 {
            let _ = std::fs::write(path, format!("{v}\n"));
        }
    }
}

/// Runs `rmp-eval rollback --yes` when dropped: the journal the command wrote goes even when the test fails.
struct RollbackOnDrop;
impl Drop for RollbackOnDrop {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_rmp-eval"))
            .args(["rollback", "--yes"])
            .output();
    }
}

/// Removes a journal run of this test when dropped, so that a failed test leaves no run for a later rollback.
struct OwnRun(String);
impl Drop for OwnRun {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// An IRQ whose affinity accepts a write (not kernel-managed), and the affinity to give it.
fn movable_irq(online: &[usize]) -> Option<(String, String, String)> {
    let mut names: Vec<u32> = std::fs::read_dir("/proc/irq")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    names.sort_unstable();
    for n in names {
        let path = format!("/proc/irq/{n}/smp_affinity_list");
        let Ok(now) = std::fs::read_to_string(&path) else {
            continue;
        };
        let now = now.trim().to_string();
        if std::fs::write(&path, format!("{now}\n")).is_err() {
            continue; // managed: refuses even its own value
        }
        let want = if now == "0" {
            online.last()?.to_string()
        } else {
            "0".to_string()
        };
        return Some((path, now, want));
    }
    None
}

#[test]
fn irq_rps_and_sysctl_applied_verified_and_rolled_back_for_real() {
    if !common::require_root("fix_live") {
        return;
    }
    let _one = common::lock::LIVE.alone();
    let host = Host::live();
    let online = rmp_eval::machine::online_cpus(&host).unwrap();
    assert!(online.len() >= 2, "needs two CPUs");
    let core = *online.last().unwrap();

    let name = format!("fx{}", std::process::id() % 1_000_000);
    let _veth = Link::veth(&name);
    let rps_path = format!("/sys/class/net/{name}/queues/rx-0/rps_cpus");
    let (irq_path, irq_before, irq_want) =
        movable_irq(&online).expect("no movable IRQ on this machine");
    let sysctl = "/proc/sys/kernel/timer_migration".to_string();
    let sysctl_before = read(&sysctl);
    let sysctl_want = if sysctl_before == "0" { "1" } else { "0" };
    let _guard = Originals(vec![
        (irq_path.clone(), irq_before.clone()),
        (sysctl.clone(), sysctl_before.clone()),
        (rps_path.clone(), read(&rps_path)),
    ]);
    // The state RPS's remedy repairs: packets steered to every CPU.
    std::fs::write(&rps_path, "3\n").unwrap();
    assert_eq!(
        rmp_eval::parse::mask::parse(&read(&rps_path)).unwrap(),
        vec![0, 1]
    );

    let t = Target::new(&host, core, Some(name.clone()), online);
    let rps = rmp_eval::tunable::rps::plan(&host, &t);
    assert_eq!(rps.changes.len(), 1, "{rps:?}");
    let by_hand = |id: StepId, path: &str, before: &str, after: &str, kind| Step {
        id,
        title: id.to_string(),
        why: "live test".into(),
        changes: vec![Change::Value(kind::value::ValueChange {
            path: path.into(),
            before: before.into(),
            after: after.into(),
            kind,
            refusable: false,
            label: None,
            owner: None,
        })],
        notes: vec![],
    };
    let plan = Plan {
        steps: vec![
            by_hand(
                StepId::IrqAffinity,
                &irq_path,
                &irq_before,
                &irq_want,
                ValueKind::CpuList,
            ),
            rps,
            by_hand(
                StepId::Sysctl,
                &sysctl,
                &sysctl_before,
                sysctl_want,
                ValueKind::Exact,
            ),
        ],
    };
    let report = apply::apply(&host, &plan, core, Some(&name)).unwrap();
    let _own = OwnRun(report.journal.clone());
    for o in &report.outcomes {
        assert_eq!(o.took, Took::Took, "{o:?}");
    }
    assert_eq!(read(&irq_path), irq_want);
    assert!(
        rmp_eval::parse::mask::parse(&read(&rps_path))
            .unwrap()
            .is_empty()
    );
    assert_eq!(read(&sysctl), sysctl_want);

    // Undo exactly this run from its journal (other runs on this machine are not ours to touch).
    let runs = journal::load_all(&host).unwrap();
    let (path, run) = runs
        .iter()
        .find(|(p, _)| *p == report.journal)
        .expect("journal run written");
    assert!(run.complete);
    assert_eq!(
        undo::undo(&host, run, How::default()).problems,
        Vec::<String>::new()
    );
    host.remove_file(path).unwrap();
    assert_eq!(read(&irq_path), irq_before);
    assert_eq!(
        rmp_eval::parse::mask::parse(&read(&rps_path)).unwrap(),
        vec![0, 1]
    );
    assert_eq!(read(&sysctl), sysctl_before);
}

fn affinities() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir("/proc/irq")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| {
            let p = format!("{}/smp_affinity_list", e.path().display());
            let v = std::fs::read_to_string(&p).ok()?.trim().to_string();
            Some((p, v))
        })
        .collect();
    v.push((
        "/proc/irq/default_smp_affinity".into(),
        read("/proc/irq/default_smp_affinity"),
    ));
    v.sort();
    v
}

/// The real irq_affinity planner on this machine: every IRQ off the last CPU. Kernel-managed IRQs (virtio queues
/// here) refuse; that is reported per IRQ and the rest still applies. Undone from the journal afterwards.
#[test]
fn every_irq_off_the_core_with_managed_ones_reported() {
    if !common::require_root("fix_live") {
        return;
    }
    let _one = common::lock::LIVE.alone();
    let host = Host::live();
    let online = rmp_eval::machine::online_cpus(&host).unwrap();
    let core = *online.last().unwrap();
    let start = affinities();
    let _guard = Originals(start.clone());
    let t = Target::new(&host, core, None, online);
    let step = irq_affinity::irq_affinity(&host, &t);
    if step.changes.is_empty() {
        eprintln!("nothing routed to CPU {core}: nothing to show");
        return;
    }
    let plan = Plan { steps: vec![step] };
    let report = apply::apply(&host, &plan, core, None).unwrap();
    let _own = OwnRun(report.journal.clone());
    let mut took = 0;
    for o in &report.outcomes {
        let now = read(&o.target);
        match &o.took {
            Took::Took => {
                took += 1;
                let cpus = if o.target.ends_with("default_smp_affinity") {
                    rmp_eval::parse::mask::parse(&now).unwrap()
                } else {
                    rmp_eval::parse::cpulist::parse(&now).unwrap()
                };
                assert!(!cpus.contains(&core), "{}: {now}", o.target);
            }
            Took::Refused(_) => {
                let was = &start.iter().find(|(p, _)| *p == o.target).unwrap().1;
                assert_eq!(&now, was, "a refused IRQ must be left as it was");
            }
            other => panic!("{}: {other:?}", o.target),
        }
    }
    assert!(took > 0, "no IRQ could be moved: {report:?}");
    let runs = journal::load_all(&host).unwrap();
    let (path, run) = runs.iter().find(|(p, _)| *p == report.journal).unwrap();
    // What the kernel refused was not changed and is not in the journal to be "restored" later.
    for o in report
        .outcomes
        .iter()
        .filter(|o| matches!(o.took, Took::Refused(_)))
    {
        assert!(
            !run.entries.iter().any(|e| e.path() == o.target),
            "{} journaled",
            o.target
        );
    }
    assert_eq!(
        undo::undo(&host, run, How::default()).problems,
        Vec::<String>::new()
    );
    host.remove_file(path).unwrap();
    assert_eq!(affinities(), start);
}

/// After a reboot a journaled IRQ may refuse its old affinity (seen in the VM: IRQ 0 and 2 with EIO after
/// irqaffinity= took effect). Such an entry is reported as refused; the rollback still completes.
#[test]
fn rollback_of_an_irq_that_now_refuses_completes() {
    if !common::require_root("fix_live") {
        return;
    }
    let _one = common::lock::LIVE.alone();
    let host = Host::live();
    // A kernel-managed IRQ: it refuses even its own value.
    let managed = affinities().into_iter().find(|(p, v)| {
        p.ends_with("smp_affinity_list") && std::fs::write(p, format!("{v}\n")).is_err()
    });
    let Some((path, now)) = managed else {
        eprintln!("no kernel-managed IRQ on this machine: nothing to show");
        return;
    };
    let other = if now == "0" { "1" } else { "0" };
    let run = journal::Run {
        version: 1,
        created: journal::utc_now(),
        core: 1,
        nic: None,
        steps: vec!["irq_affinity".into()],
        entries: vec![journal::Entry::Value(kind::value::SavedValue {
            path: path.clone(),
            previous: other.into(),
            value_kind: ValueKind::CpuList,
            refusable: true,
            written: None,
            owner: None,
        })],
        after_restore: vec![],
        complete: true,
    };
    assert!(matches!(
        kind::restore(&host, &run.entries[0], How::default()),
        Ok(Restored::Refused(_))
    ));
    assert_eq!(
        undo::undo(&host, &run, How::default()).problems,
        Vec::<String>::new()
    );
    assert_eq!(read(&path), now);
    // Without the mark (a file fix does not expect to refuse), the same failure is a failure.
    let mut strict = run.clone();
    if let journal::Entry::Value(v) = &mut strict.entries[0] {
        v.refusable = false;
    }
    assert_eq!(undo::undo(&host, &strict, How::default()).problems.len(), 1);
}

/// The whole command on this machine with the before/after measurement: one runtime step (the workqueue mask),
/// measured 1 s before and after, compared, then `rollback`. Skipped when the machine already has a journal
/// (someone's fix that is not ours to undo).
#[test]
fn fix_measures_before_and_after_then_rollback_restores() {
    if !common::require_root("fix_live") {
        return;
    }
    let _one = common::lock::LIVE.alone();
    let host = Host::live();
    if !journal::load_all(&host).unwrap().is_empty() {
        common::cannot_run(
            "fix_measures_before_and_after",
            "this machine has a fix journal already",
        );
        return;
    }
    let mask = "/sys/devices/virtual/workqueue/cpumask";
    let Ok(before) = std::fs::read_to_string(mask) else {
        common::cannot_run("fix_measures_before_and_after", "no workqueue cpumask");
        return;
    };
    let _guard = Originals(vec![(mask.to_string(), before.trim().to_string())]);
    let _undo = RollbackOnDrop;
    let online = rmp_eval::machine::online_cpus(&host).unwrap();
    let core = online.last().unwrap().to_string();
    let bin = env!("CARGO_BIN_EXE_rmp-eval");
    let machine_results = common::machine_results();
    let o = Command::new(bin)
        .env(common::RESULTS_ENV, common::results_dir())
        .args([
            "fix",
            "--core",
            &core,
            "--only",
            "workqueue",
            "--measure-seconds",
            "1",
            "--yes",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("Measuring before") && out.contains("Measuring after"),
        "{out}"
    );
    assert_eq!(
        common::machine_results(),
        machine_results,
        "fix's measurements landed in the machine's results/"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with('|') && l.contains("Before") && l.contains("Change"))
            && out.contains("Verdict:"),
        "no comparison: {out}"
    );
    // It ends by naming the before/after report it wrote, beside the after result.
    let page = out
        .lines()
        .find_map(|l| l.strip_prefix("Report: "))
        .unwrap_or_else(|| panic!("no report named: {out}"));
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        html.contains("<h2>before</h2>") && html.contains("<h2>after</h2>"),
        "{page}"
    );
    assert!(
        page.starts_with(common::results_dir().to_str().unwrap()),
        "{page}"
    );
    assert!(
        !rmp_eval::parse::mask::parse(&read(mask))
            .unwrap()
            .contains(&online[online.len() - 1])
    );
    let o = Command::new(bin)
        .args(["rollback", "--yes"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(read(mask), before.trim());
    assert!(!std::path::Path::new("/var/lib/rmp-eval/runtime.json").exists());
}
