//! qualify's measured path on this machine without a reboot: the untuned guest's tree (its steps are written to
//! the tree, where they take effect at once; its kernel command-line step has no GRUB there and is left out),
//! the measurements made on the live RT core. Each step is measured alone and compared with the state before it;
//! the state and the qualification result record each step's measurement and compare's verdict, a step judged
//! worse is undone (its journal run gone, its files back), and `report` and `compare` take the result.

use std::collections::BTreeSet;

use super::trial_cycle::STATE;
use crate::common;
use common::fix::{Root, ok, text};

/// The files a tree holds outside rmp-eval's own directories, with their bytes.
fn machine_files(r: &Root) -> Vec<(String, Vec<u8>)> {
    r.tree()
        .into_iter()
        // rmp-eval's own state, and the measurement's lock on the core (run/rmp-eval).
        .filter(|(p, _)| !p.starts_with("var/lib/rmp-eval") && !p.starts_with("run/"))
        .map(|(p, (bytes, ..))| (p, bytes))
        .collect()
}

#[test]
fn each_step_is_measured_alone_judged_by_compare_and_a_worse_one_rolled_back() {
    if !common::require_root(
        "each_step_is_measured_alone_judged_by_compare_and_a_worse_one_rolled_back",
    ) {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let r = Root::untuned();
    let start = machine_files(&r);
    let o = r.rmp(
        "qualify",
        &[
            "--core",
            "1",
            // The shortest --one-at-a-time takes: compare's noise test needs 10 one-second maxima a side.
            "--seconds",
            "10",
            "--periods",
            "1000,500",
            "--one-at-a-time",
            "--yes",
        ],
    );
    ok(&o);
    let out = text(&o);
    let state: serde_json::Value = serde_json::from_str(&r.read(STATE)).unwrap();
    assert_eq!(state["phase"]["phase"], "done", "{out}");

    let dir = r.path("/var/lib/rmp-eval/qualification");
    let json = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a qualification result");
    let res: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(res["kind"], "rmp-eval qualification");
    assert!(res["baseline"]["series"][0]["count"].as_u64().unwrap() > 0);

    let steps = state["steps"].as_array().unwrap();
    let rows = res["steps"].as_array().unwrap();
    assert_eq!(steps.len(), rows.len());
    let mut measured = 0;
    let mut kept_runs = BTreeSet::new();
    for (s, row) in steps.iter().zip(rows) {
        assert_eq!(s["step"], row["step"]);
        let outcome = s["outcome"]["outcome"].as_str().unwrap();
        if outcome == "not_tried" {
            assert!(s["result"].is_null() && row["result"].is_null(), "{s}");
            continue;
        }
        measured += 1;
        // The state names the measurement; the result embeds it with compare's verdict against the state before.
        let saved = s["result"].as_str().unwrap();
        assert!(std::path::Path::new(saved).exists(), "{saved}");
        assert!(row["result"]["series"][0]["count"].as_u64().unwrap() > 0);
        let effect = row["effect"].as_str().unwrap();
        // The noise test says "no clear change" where the verdict is unchanged.
        let said = if effect == "unchanged" {
            "no clear change"
        } else {
            effect
        };
        let summary = row["compare_summary"].as_str().unwrap();
        assert!(
            summary.starts_with(effect) || summary.starts_with(said),
            "{row}"
        );
        match outcome {
            "reverted" => {
                assert_eq!(effect, "worse", "{row}");
                assert_eq!(row["outcome"], "reverted");
            }
            "kept" => {
                assert_ne!(effect, "worse", "{row}");
                let recorded = if effect == "better" {
                    "better"
                } else {
                    "no_clear_change"
                };
                assert_eq!(s["outcome"]["effect"], recorded, "{s}");
                for j in s["journals"].as_array().unwrap() {
                    kept_runs.insert(j.as_str().unwrap().to_string());
                }
            }
            o => panic!("step {} ended {o}", s["step"]),
        }
    }
    assert!(measured >= 2, "at least two steps measured alone: {out}");
    // A reverted step's journal run is undone and gone; a kept step's stays for rollback.
    let runs: BTreeSet<String> = std::fs::read_dir(r.path("/var/lib/rmp-eval/journal"))
        .map(|d| {
            d.map(|e| e.unwrap().path().display().to_string())
                .filter(|p| p.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        runs.len(),
        kept_runs.len(),
        "{runs:?} vs kept {kept_runs:?}"
    );
    if kept_runs.is_empty() {
        let now = machine_files(&r);
        let changed: Vec<&String> = now
            .iter()
            .filter(|f| !start.contains(f))
            .map(|(p, _)| p)
            .chain(start.iter().filter(|f| !now.contains(f)).map(|(p, _)| p))
            .collect();
        assert!(
            changed.is_empty(),
            "every step reverted, yet changed: {changed:?}"
        );
    }

    // Each period: pass or fail with the tail rate of cycles outside Great and its 95 % interval.
    let periods = res["periods"].as_array().unwrap();
    assert_eq!(periods.len(), 2);
    for p in periods {
        let t = &p["outside_great"];
        assert!(t["per_hour_low"].as_f64().unwrap() <= t["per_hour_high"].as_f64().unwrap());
        assert!(
            p["statement"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{} µs", p["period_us"]))
        );
    }
    assert!(out.contains(res["verdict"].as_str().unwrap()), "{out}");

    // report draws the qualification's own page; compare takes its target period's measurement.
    let page_dir = tempfile::tempdir().unwrap();
    let page = page_dir.path().join("q.html");
    let o = r.rmp(
        "report",
        &[json.to_str().unwrap(), "-o", page.to_str().unwrap()],
    );
    ok(&o);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<table id=\"steps\">") && html.contains("<table id=\"periods\">"));
    let rows_of = |id: &str| {
        let t = &html[html.find(&format!("<table id=\"{id}\">")).unwrap()..];
        t[..t.find("</table>").unwrap()].matches("<tr><td>").count()
    };
    assert_eq!(
        rows_of("steps"),
        1 + steps.len(),
        "the baseline and each step"
    );
    assert_eq!(rows_of("periods"), 2);
    let base = res["baseline"].clone();
    let base_file = page_dir.path().join("base.json");
    std::fs::write(&base_file, base.to_string()).unwrap();
    let o = r.rmp(
        "compare",
        &[base_file.to_str().unwrap(), json.to_str().unwrap()],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
}
