//! A run too short to mean anything is not a pass (issue 16 item 1): `run -i 200` ran 0.2 s and said "pass",
//! exit 0. Now: inconclusive, exit 3, and the report says how long and under what load to run.

mod common;
use common::run::*;

#[test]
fn two_hundred_cycles_are_inconclusive_with_exit_3() {
    if !root_or_skip("two_hundred_cycles_are_inconclusive_with_exit_3") {
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
