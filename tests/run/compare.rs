//! `compare` on results saved by real runs: "before" and "after" saved through `commands::run::measure` (as fix
//! does), named by label; and a degraded copy of a real result, which must compare worse (exit 1).

use crate::common;
use common::run as run_common;

use clap::Parser;
use rmp_eval::cli::{Cli, Command};
use rmp_eval::host::Host;
use rmp_eval::output::Output;
use run_common::*;
use serde_json::Value;

fn run_spec(extra: &[&str]) -> rmp_eval::measure::spec::RunSpec {
    let mut argv = vec!["rmp-eval", "run", "--no-config", "--json"];
    argv.extend_from_slice(extra);
    match Cli::parse_from(argv).command {
        Some(Command::Run(a)) => a.spec().unwrap(),
        _ => unreachable!(),
    }
}

#[test]
fn compare_before_and_after_saved_by_measure() {
    if !common::require_root("compare") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let root = root_tree();
    let host = Host::with_root(root.path());
    let spec = run_spec(&["--iterations", "200"]);
    let (before, bpath) = rmp_eval::commands::run::measure(
        &host,
        Output::plain(),
        &mut std::io::sink(),
        &spec,
        true,
        rmp_eval::measure::result::store::RunLabel::Before,
    )
    .unwrap();
    let (after, apath) = rmp_eval::commands::run::measure(
        &host,
        Output::plain(),
        &mut std::io::sink(),
        &spec,
        true,
        rmp_eval::measure::result::store::RunLabel::After,
    )
    .unwrap();
    // --iterations is the periods spanned, counted and missed together (a loaded machine misses some).
    assert_eq!(
        (
            before.series[0].count + before.series[0].missed,
            after.series[0].count + after.series[0].missed
        ),
        (200, 200)
    );
    assert!(bpath.to_str().unwrap().ends_with("-before.json"));
    assert!(apath.to_str().unwrap().ends_with("-after.json"));
    let r = root.path().to_str().unwrap();

    let o = run(&["compare", "--root", r, "before", "after", "--json"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(["better", "worse", "mixed", "unchanged"].contains(&v["verdict"].as_str().unwrap()));
    assert_eq!(v["before"], bpath.to_str().unwrap());
    assert_eq!(v["after"], apath.to_str().unwrap());
    let metrics: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    for m in [
        "Cyclic Great",
        "Cyclic max deviation",
        "Cyclic wakeup p99.9",
        "Cyclic deviation p99.99",
    ] {
        assert!(metrics.contains(&m), "{m} missing from {metrics:?}");
    }
    // "last" is the newest of any label: the after run.
    let o = run(&["compare", "--root", r, "before", "last"]);
    let t = text(&o.stdout);
    assert!(t.contains(&format!("After:  {}", apath.display())), "{t}");
    assert!(t.lines().last().unwrap().starts_with("Verdict: "), "{t}");

    // A copy of the real result with 20 more Pathetic periods and a max 5 ms worse compares worse: exit 1.
    let mut worse: Value = serde_json::from_slice(&std::fs::read(&apath).unwrap()).unwrap();
    let s = &mut worse["series"][0];
    s["max_us"] = (s["max_us"].as_f64().unwrap() + 5000.0).into();
    s["buckets"]["great"] = (s["buckets"]["great"].as_u64().unwrap() - 20).into();
    s["buckets"]["pathetic"] = (s["buckets"]["pathetic"].as_u64().unwrap() + 20).into();
    let wpath = root.path().join("worse.json");
    std::fs::write(&wpath, serde_json::to_vec(&worse).unwrap()).unwrap();
    let o = run(&[
        "compare",
        "--root",
        r,
        apath.to_str().unwrap(),
        wpath.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("Verdict: worse"));

    // Not a result: one line, exit 2.
    let o = run(&["compare", "--root", r, "before", "/etc/hostname"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stderr).lines().count(), 1);
}
