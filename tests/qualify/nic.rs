//! `qualify --nic` measures the wire: the untuned guest's tree stands in for the boot parts (its NIC's sysfs files
//! copied under the name of a veth end this test makes, so that the checks and the steps see that interface), and
//! every measurement is what `run --nic` makes on the live veth pair, with `rmp-eval reflect` as the SubDevice in
//! a namespace of the test's own. The report's tables must hold the round-trip figures of the saved runs; a
//! SubDevice that never answers stops qualify (exit 2) before the tree changes by a byte; one that stops
//! answering after the baseline fails the steps measured after it (each undone), not qualify.

use std::io::BufRead;
use std::process::{Command, Stdio};

use super::trial_cycle::STATE;
use crate::common;
use common::fix::{Root, diff, ok, text};
use common::nic::{BIN, Veth};

/// The untuned tree with its NIC's files under `nic` too (the veth end qualify tunes and measures through).
fn tree_with(nic: &str) -> Root {
    let r = Root::untuned();
    let st = Command::new("cp")
        .arg("-a")
        .arg(r.path("/sys/class/net/enp0s2"))
        .arg(r.path(&format!("/sys/class/net/{nic}")))
        .status()
        .unwrap();
    assert!(st.success());
    r
}

/// The one qualification result qualify wrote under the tree.
fn result_of(r: &Root) -> (serde_json::Value, String) {
    let dir = r.path("/var/lib/rmp-eval/qualification");
    let mut json = None;
    let mut html = None;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        match p.extension().and_then(|e| e.to_str()) {
            Some("json") => json = Some(std::fs::read(&p).unwrap()),
            Some("html") => html = Some(std::fs::read_to_string(&p).unwrap()),
            _ => {}
        }
    }
    (
        serde_json::from_slice(&json.expect("a qualification result")).unwrap(),
        html.expect("its page"),
    )
}

/// The cells of the row of table `id` whose first cell is `first`.
fn row(html: &str, id: &str, first: &str) -> Vec<String> {
    let t = &html[html
        .find(&format!("<table id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no table {id}"))..];
    let t = &t[..t.find("</table>").unwrap()];
    let start = t
        .find(&format!("<tr><td>{first}</td>"))
        .unwrap_or_else(|| panic!("no row {first} in {t}"));
    let r = &t[start..];
    let r = &r[..r.find("</tr>").unwrap()];
    r.split("<td>")
        .skip(1)
        .map(|c| c.trim_end_matches("</td>").to_string())
        .collect()
}

/// The headers of table `id`.
fn head(html: &str, id: &str) -> Vec<String> {
    let t = &html[html.find(&format!("<table id=\"{id}\">")).unwrap()..];
    let t = &t[..t.find("</tr>").unwrap()];
    t.split("<th>")
        .skip(1)
        .map(|c| c.trim_end_matches("</th>").to_string())
        .collect()
}

/// A table's figure is the saved run's (shown to 0.001 µs, or 0.1 µs from 100 µs on).
fn same_figure(cell: &str, saved: &serde_json::Value, what: &str) {
    let shown: f64 = cell.parse().unwrap_or_else(|_| panic!("{what}: {cell:?}"));
    let v = saved.as_f64().unwrap();
    assert!(
        (shown - v).abs() <= 0.0501,
        "{what}: shown {cell}, saved {v}"
    );
}

/// The round-trip columns of a row (after the cyclic ones) against the saved run at `path`.
fn round_trip_cells_match(cells: &[String], at: usize, path: &str) -> serde_json::Value {
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")))
            .unwrap();
    let rtt = &saved["rtt"];
    assert!(rtt["count"].as_u64().unwrap() > 0, "{path}: no round trips");
    same_figure(&cells[at], &rtt["p999_us"], "round trip p99.9");
    same_figure(&cells[at + 1], &rtt["p9999_us"], "round trip p99.99");
    same_figure(&cells[at + 2], &rtt["max_us"], "round trip max");
    let missed = ["lost", "not_sent", "late", "wkc_errors"]
        .iter()
        .map(|k| rtt[*k].as_u64().unwrap())
        .sum::<u64>();
    assert!(
        cells[at + 3].starts_with(&format!("{missed} in ")),
        "missed cycles: {} vs {missed} in {rtt}",
        cells[at + 3]
    );
    saved
}

#[test]
fn each_measurement_is_a_round_trip_run_and_the_tables_hold_its_figures() {
    if !common::require_root("each_measurement_is_a_round_trip_run_and_the_tables_hold_its_figures")
    {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let _reflector = v.reflect_fifo(50);
    let r = tree_with(&v.host);
    let o = r.rmp(
        "qualify",
        &[
            "--core",
            "1",
            "--nic",
            &v.host,
            "--seconds",
            "3",
            "--periods",
            "1000",
            "--yes",
        ],
    );
    ok(&o);
    let out = text(&o);
    assert!(
        out.contains(&format!("qualify: the SubDevice answers on {}", v.host)),
        "{out}"
    );
    let state: serde_json::Value = serde_json::from_str(&r.read(STATE)).unwrap();
    let (res, html) = result_of(&r);
    assert_eq!(res["rests_on"], "round_trips");
    let verdict = res["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with(&format!("On the wire (round trips through {}", v.host)),
        "{verdict}"
    );
    assert!(out.contains(verdict), "{out}");

    // Both tables carry the round trips after the cyclic figures, from the runs qualify saved.
    let steps_head = head(&html, "steps");
    let at = steps_head
        .iter()
        .position(|h| h == "Round trip p99.9 µs")
        .expect("round-trip columns in the steps table");
    assert_eq!(steps_head[at - 1], "Sender outside Great");
    let base = round_trip_cells_match(
        &row(&html, "steps", "baseline"),
        at,
        state["baseline"].as_str().unwrap(),
    );
    assert_eq!(base["mode"], "ecat", "the baseline is a NIC run");
    assert_eq!(res["baseline"]["rtt"]["count"], base["rtt"]["count"]);

    let periods_head = head(&html, "periods");
    let at = periods_head
        .iter()
        .position(|h| h == "Round trip p99.9 µs")
        .expect("round-trip columns in the periods table");
    let swept = round_trip_cells_match(
        &row(&html, "periods", "1000 µs"),
        at,
        state["sweep"][0]["result"].as_str().unwrap(),
    );
    assert_eq!(swept["mode"], "ecat");
    // The JSON's row says the same: the missed cycles over the run's frames, and pass only as run --nic passes.
    let p = &res["periods"][0];
    let rtt = &swept["rtt"];
    let frames = ["count", "lost", "not_sent"]
        .iter()
        .map(|k| rtt[*k].as_u64().unwrap())
        .sum::<u64>();
    let m = &p["missed_round_trips"];
    assert_eq!(
        (m["exposure_s"].as_f64().unwrap() * 1000.0).round() as u64,
        frames,
        "{m}"
    );
    assert_eq!(
        p["passed"],
        swept["verdict"] == "pass" && swept["claim"].is_null()
    );
    assert!(p["statement"].as_str().unwrap().contains("Round trips: "));
}

#[test]
fn a_subdevice_that_does_not_answer_stops_qualify_before_it_changes_anything() {
    if !common::require_root(
        "a_subdevice_that_does_not_answer_stops_qualify_before_it_changes_anything",
    ) {
        return;
    }
    let v = Veth::new();
    let r = tree_with(&v.host);
    let start = r.tree();
    let o = r.rmp(
        "qualify",
        &["--core", "1", "--nic", &v.host, "--one-at-a-time", "--yes"],
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    // One line, besides the notes of a link put back that another test's killed run left (records are shared).
    let said: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("rmp-eval: note: "))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        err.contains(&format!("no EtherCAT SubDevice answered on {}", v.host))
            && err.contains("nothing was changed"),
        "{err}"
    );
    assert!(!out.contains("1. measure"), "the plan is not shown: {out}");
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn a_subdevice_that_stops_answering_fails_the_steps_after_it_not_qualify() {
    if !common::require_root(
        "a_subdevice_that_stops_answering_fails_the_steps_after_it_not_qualify",
    ) {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::new();
    let reflector = v.reflect_fifo(50);
    let r = tree_with(&v.host);
    let start = r.tree();
    let mut child = Command::new(BIN)
        .args(["qualify", "--root"])
        .arg(r.dir.path())
        .args([
            "--core",
            "1",
            "--nic",
            &v.host,
            "--seconds",
            "10",
            "--periods",
            "1000",
            "--one-at-a-time",
            "--yes",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    let mut reflector = Some(reflector);
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // The baseline is measured: the SubDevice goes away before any step is measured.
        if line == "qualify: step 1: applying" {
            reflector.take().map(|r| r.stop());
        }
        out.push_str(&line);
        out.push('\n');
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(reflector.is_none(), "no step began: {out}");

    let state: serde_json::Value = serde_json::from_str(&r.read(STATE)).unwrap();
    assert_eq!(state["phase"]["phase"], "done", "{out}");
    let (res, _) = result_of(&r);
    let mut failed = 0;
    for (s, row) in state["steps"]
        .as_array()
        .unwrap()
        .iter()
        .zip(res["steps"].as_array().unwrap())
    {
        match s["outcome"]["outcome"].as_str().unwrap() {
            "not_tried" => {}
            "measure_failed" => {
                failed += 1;
                assert_eq!(row["outcome"], "measure_failed");
                assert!(row["why"].as_str().is_some_and(|w| !w.is_empty()), "{row}");
                assert!(row["result"].is_null() && row["effect"].is_null(), "{row}");
            }
            o => panic!("step {} ended {o} with nothing answering: {out}", s["step"]),
        }
    }
    assert!(failed >= 1, "{out}");
    let p = &res["periods"][0];
    assert!(p["result"].is_null() && p["passed"] == false, "{p}");
    assert!(
        p["statement"]
            .as_str()
            .unwrap()
            .contains(&format!("no EtherCAT SubDevice answered on {}", v.host)),
        "{p}"
    );
    // Each failed step was undone: no journal run left, the machine's files as they were.
    let runs = std::fs::read_dir(r.path("/var/lib/rmp-eval/journal"))
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count()
        })
        .unwrap_or(0);
    assert_eq!(runs, 0);
    let changed: Vec<String> = diff(&start, &r.tree())
        .into_iter()
        .filter(|p| !p.contains("var/lib/rmp-eval") && !p.starts_with("run/"))
        .collect();
    assert_eq!(changed, Vec::<String>::new());
}
