//! A run too short to mean anything is not a pass (issue 16 item 1): `run -i 200` ran 0.2 s and said "pass",
//! exit 0. Now: inconclusive, exit 3, and the report says how long and under what load to run.

mod common;
use common::run::*;

#[test]
fn two_hundred_cycles_are_inconclusive_with_exit_3() {
    if !common::require_root("two_hundred_cycles_are_inconclusive_with_exit_3") {
        return;
    }
    let root = root_tree();
    // Bands 1 s wide: every period is Great on any machine, so the verdict depends on the length alone.
    let o = run(&[
        "run",
        "--root",
        root.path().to_str().unwrap(),
        "--no-config",
        "-i",
        "200",
        "--bucket-width-us",
        "1000000",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{out}{}", text(&o.stderr));
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Verdict: inconclusive — 200 cycles in"),
        "{out}"
    );
    assert!(flat.contains("--duration 10m"), "{out}");
    let saved = results(root.path());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved[0]).unwrap()).unwrap();
    assert_eq!(v["verdict"], "inconclusive");
}

/// `run --root DIR` reads DIR for the checks and keeps its results there, but measures this machine: it says so
/// before measuring, and the result records this machine's kernel and name, not DIR's (issue 16 item 12).
#[test]
fn run_under_root_says_it_measures_this_machine_and_records_its_kernel() {
    if !common::require_root("run_under_root_says_it_measures_this_machine_and_records_its_kernel")
    {
        return;
    }
    let root = root_tree();
    let r = root.path();
    std::fs::create_dir_all(r.join("proc/sys/kernel")).unwrap();
    std::fs::write(
        r.join("proc/sys/kernel/osrelease"),
        "6.12.11-from-the-tree\n",
    )
    .unwrap();
    std::fs::create_dir_all(r.join("etc")).unwrap();
    std::fs::write(r.join("etc/hostname"), "tree-host\n").unwrap();
    let o = run(&[
        "run",
        "--root",
        r.to_str().unwrap(),
        "--no-config",
        "-i",
        "200",
    ]);
    let out = text(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{out}{}",
        text(&o.stderr)
    );
    let live = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("the measurement runs on THIS machine") && flat.contains(live.trim()),
        "{out}"
    );
    let saved = results(r);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved[0]).unwrap()).unwrap();
    assert_eq!(v["kernel"], live.trim());
    assert_ne!(v["identity"]["hostname"], "tree-host", "{v}");
}
