//! What fix's plan shows before anyone says yes, on fixture trees: the devices of the IRQs it
//! moves, steps with nothing to change left out (one line each), what fix cannot do said as "set by hand", and
//! the risks of each step. The terminal order (plan, then picker) is in on_a_terminal.rs.

use crate::common;
use common::fix as fix_support;
use fix_support::{BIN, Root};

use std::process::Command;

const DESKTOP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/desktop-i7-smt-untuned"
);

fn dry(root: &str, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(BIN)
        .args(["fix", "--root", root, "--dry-run"])
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn irqs_are_named_by_their_devices() {
    let r = Root::untuned();
    let root = r.dir.path().to_str().unwrap();
    let (code, out) = dry(root, &["--core", "1", "--only", "irq_affinity"]);
    assert_eq!(code, Some(0), "{out}");
    // /proc/interrupts of the capture: "24: … PCI-MSI 512000-edge ahci[0000:00:1f.2]"; IRQ 2 has no row.
    assert!(
        out.contains("/proc/irq/24/smp_affinity_list (ahci[0000:00:1f.2]): 0-1 → 0"),
        "{out}"
    );
    assert!(
        out.contains("/proc/irq/2/smp_affinity_list (no device): 0-1 → 0"),
        "{out}"
    );
    let (_, json) = dry(root, &["--core", "1", "--only", "irq_affinity", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let step = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "irq_affinity")
        .expect(&json);
    let irq24 = step["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"] == "/proc/irq/24/smp_affinity_list")
        .expect(&json);
    assert_eq!(irq24["label"], "ahci[0000:00:1f.2]");
}

#[test]
fn steps_with_nothing_to_change_are_left_out_of_the_plan() {
    let r = Root::untuned();
    let root = r.dir.path().to_str().unwrap();
    // The capture's THP is already "never"; its sysctls are not.
    let (code, out) = dry(root, &["--core", "1", "--only", "thp,sysctl"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("[sysctl] Kernel settings"), "{out}");
    assert!(!out.contains("[thp] Transparent"), "{out}");
    assert!(!out.contains("nothing to change\n"), "{out}");
    let rest = out
        .split("Nothing to change (left out of the plan):\n")
        .nth(1)
        .expect(&out);
    assert!(rest.starts_with("  [thp] already as wanted\n"), "{out}");
}

#[test]
fn no_boot_loader_is_set_by_hand_with_its_risks_and_exit_1() {
    // The hand-made SMT desktop has no boot loader configuration; CPU 3's sibling is CPU 7.
    let (code, out) = dry(DESKTOP, &["--core", "3", "--only", "cmdline"]);
    assert_eq!(code, Some(1), "{out}");
    let step = out.split("\n\n").next().unwrap();
    assert!(
        step.contains("NOT DONE, set by hand: no boot loader configuration found"),
        "{out}"
    );
    assert!(
        out.contains("Nothing changed: [cmdline] set by hand:"),
        "{out}"
    );
    assert!(
        !out.contains("every proposed step is already as wanted"),
        "{out}"
    );
    assert!(step.contains("risk: a boot configuration change"), "{out}");
}

#[test]
fn risks_are_stated_where_the_plan_takes_them() {
    let (_, out) = dry(DESKTOP, &["--core", "3"]);
    // smt_sibling fails on the desktop: its sibling is isolated with the core.
    assert!(
        out.contains("risk: CPU 7, the SMT sibling of CPU 3, is isolated along with it"),
        "{out}"
    );
    assert!(out.contains("risk: RT throttling off"), "{out}");
    // Eight CPUs, two isolated: no "one housekeeping CPU" warning.
    assert!(!out.contains("one housekeeping CPU"), "{out}");
    let r = Root::untuned();
    let (_, out) = dry(r.dir.path().to_str().unwrap(), &["--core", "1"]);
    assert!(
        out.contains("risk: isolating CPU 1 of 2 leaves one housekeeping CPU (0)"),
        "{out}"
    );
    let (_, json) = dry(r.dir.path().to_str().unwrap(), &["--core", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let sysctl = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "sysctl")
        .expect(&json);
    assert!(
        sysctl["risks"][0]
            .as_str()
            .is_some_and(|r| r.starts_with("RT throttling off")),
        "{json}"
    );
}

#[test]
fn under_root_the_undo_hint_names_the_root_and_works() {
    let r = Root::untuned();
    let root = r.dir.path().to_str().unwrap().to_string();
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "sysctl", "--yes", "--no-measure"],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let hint = format!("rmp-eval --root {root} rollback");
    assert!(out.contains(&format!("(undo with `{hint}`)")), "{out}");
    // The hint, as printed, undoes it (the words after "rmp-eval", run as given).
    let words: Vec<&str> = hint.split(' ').skip(1).collect();
    let o = Command::new(BIN)
        .args(&words)
        .arg("--yes")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(fix_support::diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn without_core_the_plan_names_the_last_cpu_it_tunes() {
    // As check and run choose it: the last online CPU (7 on the desktop), named before anything else.
    let (code, out) = dry(DESKTOP, &["--only", "workqueue"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("RT core: CPU 7, the last online CPU (no --core given"),
        "{out}"
    );
    assert!(out.contains("ff → 77"), "{out}");
    let (_, json) = dry(DESKTOP, &["--only", "workqueue", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["core"], 7, "{json}");
    assert_eq!(v["core_chosen"], "last_online_cpu", "{json}");
    let (_, json) = dry(DESKTOP, &["--core", "3", "--only", "workqueue", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["core"].as_u64(), v["core_chosen"].as_str()),
        (Some(3), Some("--core"))
    );
}

/// Every key of `v`'s objects, nested ones included.
fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.push(k.clone());
                keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

#[test]
fn every_key_of_fixs_json_is_in_docs_json_md() {
    // The whole plan for the desktop (every step, with the cpuset partition a cgroup v2 tree gives), then the
    // report of a fix that changed something: docs/json.md names each key, as `key` or "key".
    let r = Root::desktop_with_cgroup_v2();
    let root = r.dir.path().to_str().unwrap();
    let (code, plan) = dry(root, &["--core", "3", "--nic", "enp3s0", "--json"]);
    assert_eq!(code, Some(0), "{plan}");
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "3",
            "--only",
            "workqueue",
            "--yes",
            "--no-measure",
            "--json",
        ],
    );
    let applied = String::from_utf8_lossy(&o.stdout).into_owned();
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md")).unwrap();
    let mut all = Vec::new();
    for text in [&plan, &applied] {
        let v: serde_json::Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        keys(&v, &mut all);
    }
    for kind in ["file", "value", "command", "partition"] {
        assert!(
            plan.contains(&format!("\"kind\":\"{kind}\"")),
            "no {kind} change: {plan}"
        );
    }
    all.sort();
    all.dedup();
    let missing: Vec<&String> = all
        .iter()
        .filter(|k| !docs.contains(&format!("`{k}`")) && !docs.contains(&format!("\"{k}\"")))
        .collect();
    assert!(missing.is_empty(), "not in docs/json.md: {missing:?}");
}

/// With no boot loader configuration the command-line step is left to the user; the cpuset step (which cannot
/// make its partition here: cgroup v1) must then not promise that the reboot isolates the core.
#[test]
fn without_a_boot_loader_nothing_promises_isolation_after_the_reboot() {
    let (code, out) = dry(DESKTOP, &["--core", "1"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("NOT DONE, set by hand: no boot loader configuration found"),
        "{out}"
    );
    // The step's line, joined again where the plan wrapped it at 80 cells.
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    let cpuset = flat
        .split("[cpuset]")
        .nth(1)
        .and_then(|rest| rest.split(" [").next())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(!cpuset.contains("after the reboot only"), "{cpuset}");
    assert!(
        cpuset.contains("nothing isolates CPUs 1,5 after a reboot either"),
        "{cpuset}"
    );
    // With a boot loader the reboot does isolate it, and the step says so.
    let r = Root::untuned();
    let (_, out) = dry(r.dir.path().to_str().unwrap(), &["--core", "1"]);
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("CPU 1 isolated after the reboot only"),
        "{out}"
    );
}

/// The plan's prose is wrapped at 80 terminal cells between words; what the user copies (a `command`, the
/// parameters to add) and the changes themselves are never split.
#[test]
fn the_plan_is_wrapped_at_80_cells_between_words_and_commands_stay_whole() {
    let (_, out) = dry(DESKTOP, &["--core", "1"]);
    for l in out.lines() {
        let t = l.trim_start();
        let prose = ["why: ", "note: ", "risk: ", "NOT DONE"]
            .iter()
            .any(|p| t.starts_with(p));
        if prose {
            assert!(
                common::cells(l) <= 80,
                "{} cells: {l}\n{out}",
                common::cells(l)
            );
        }
    }
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("the udev rule"), "{out}");
    assert!(
        out.lines().any(|l| l
            .trim()
            .starts_with("`isolcpus=managed_irq,domain,1,5 nohz_full=1,5")
            && l.trim().ends_with("tsc=reliable`")),
        "the parameters to add are one line:\n{out}"
    );
}
