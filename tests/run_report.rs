//! `rmp-eval report` on real results (two cyclic runs and a NIC run against `reflect`), opened in headless
//! Chromium (Debian's package, tests/install-deps.sh): a screenshot is taken, and the DOM Chromium serialises shows
//! every plot rendered, with axis ranges, curves and max markers that match the results; the page references
//! nothing outside itself and Chromium's net log has no request from it.

mod common;
use common::run as run_common;

use std::path::Path;
use std::process::Command;

use run_common::*;
use serde_json::Value;

const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium(profile: &Path, extra: &[&str], page: &Path) -> std::process::Output {
    Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap()
}

/// Per figure: id, data-* attributes, the SVG's texts and how many lines it drew; and every src/href/url( seen.
const DOM: &str = r#"
import sys, json
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.figs = []; s.cur = None; s.refs = []
    def handle_starttag(s, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href", "xlink:href", "action"):
            if k in a: s.refs.append(a[k])
        if "url(" in (a.get("style") or ""): s.refs.append(a["style"])
        if tag == "figure":
            s.cur = {"id": a.get("id"), "attrs": a, "texts": [], "lines": 0, "svg": 0}
            s.figs.append(s.cur)
        elif s.cur is not None:
            if tag == "svg": s.cur["svg"] += 1
            if tag in ("polyline", "path", "line"): s.cur["lines"] += 1
    def handle_endtag(s, tag):
        if tag == "figure": s.cur = None
    def handle_data(s, d):
        if s.cur is not None and d.strip(): s.cur["texts"].append(d.strip())
p = P(); p.feed(open(sys.argv[1]).read())
print(json.dumps({"figures": p.figs, "refs": p.refs}))
"#;

/// `run --root ROOT --no-config ARGS…`'s JSON, from a run that measured.
fn run_json(root: &Path, args: &[&str]) -> Value {
    let o = run_on(root, args).output().unwrap();
    assert_measured(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn report_renders_in_chromium_with_plots_matching_the_results() {
    if !common::require_root("report_renders_in_chromium_with_plots_matching_the_results") {
        return;
    }
    if !Path::new(CHROMIUM).exists()
        && !common::cannot_run("report", "no /usr/bin/chromium (tests/install-deps.sh)")
    {
        return;
    }
    let root = root_tree();
    let dir = root.path();
    let r = dir.to_str().unwrap();
    let mut files = Vec::new();
    let mut results = Vec::new();
    for name in ["a", "b"] {
        let out = dir.join(format!("{name}.json"));
        let v = run_json(
            dir,
            &[
                "--period-us",
                "500",
                "--duration",
                "1.5",
                "--json",
                "--output",
                out.to_str().unwrap(),
            ],
        );
        results.push(v);
        files.push(out);
    }
    let veth = common::nic::Veth::new();
    let refl = veth.reflect(&[]);
    let nic_out = dir.join("nic.json");
    let o = common::nic::run_nic(
        &veth.host,
        &[
            "--iterations",
            "1000",
            "--period-us",
            "500",
            "--json",
            "--output",
            nic_out.to_str().unwrap(),
        ],
    );
    drop(refl);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1) | Some(3)),
        "{}",
        text(&o.stderr)
    );
    results.push(serde_json::from_slice(&o.stdout).unwrap());
    files.push(nic_out);

    let page = dir.join("report.html");
    let mut args = vec!["report", "-o", page.to_str().unwrap(), "--svg", r];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(dir.join("histogram.svg").exists() && dir.join("rtt.svg").exists());

    // A screenshot: Chromium laid the page out and painted it.
    let shot = dir.join("shot.png");
    let o = chromium(
        &dir.join("profile1"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1000,3000",
        ],
        &page,
    );
    assert!(shot.exists(), "no screenshot: {}", text(&o.stderr));
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 20_000,
        "a blank screenshot"
    );

    // The DOM as Chromium parsed it, with the net log of that load.
    let netlog = dir.join("net.json");
    let o = chromium(
        &dir.join("profile2"),
        &["--dump-dom", &format!("--log-net-log={}", netlog.display())],
        &page,
    );
    let dom = dir.join("dom.html");
    std::fs::write(&dom, &o.stdout).unwrap();
    assert!(
        text(&o.stdout).contains("rmp-eval report"),
        "{}",
        text(&o.stderr)
    );
    let p = Command::new("python3")
        .args(["-c", DOM, dom.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", text(&p.stderr));
    let d: Value = serde_json::from_slice(&p.stdout).unwrap();
    assert_eq!(
        d["refs"].as_array().unwrap().len(),
        0,
        "the page refers outside itself: {}",
        d["refs"]
    );
    let figs = d["figures"].as_array().unwrap();
    let ids: Vec<&str> = figs.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["histogram", "max-per-interval", "percentiles", "rtt"]);
    let attr = |f: &Value, k: &str| f["attrs"][k].as_str().unwrap().parse::<f64>().unwrap();
    let max_of = |vals: Vec<f64>| vals.into_iter().fold(0.0, f64::max);
    let dev_max = max_of(
        results
            .iter()
            .map(|v| v["series"][0]["max_us"].as_f64().unwrap())
            .collect(),
    );
    let rtt_max = results[2]["rtt"]["max_us"].as_f64().unwrap();
    for f in figs {
        assert_eq!(f["svg"], 1, "{}: no svg", f["id"]);
        // Axes, grid and one curve per result at least.
        assert!(
            f["lines"].as_u64().unwrap() > 10,
            "{}: {} lines",
            f["id"],
            f["lines"]
        );
    }
    let curves: Vec<f64> = figs.iter().map(|f| attr(f, "data-curves")).collect();
    assert_eq!(
        curves,
        [3.0, 3.0, 3.0, 1.0],
        "one curve per result that has the data"
    );
    let texts = |f: &Value| {
        f["texts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    for (f, want) in [(&figs[0], dev_max), (&figs[3], rtt_max)] {
        // The x axis reaches past the largest value, without dwarfing it; the marker names it.
        let x_max = attr(f, "data-x-max");
        assert!(
            x_max >= want && x_max <= want * 2.5 + 1.0,
            "{}: x to {x_max}, max {want}",
            f["id"]
        );
        assert_eq!(attr(f, "data-max-us"), want);
        let marker = format!("max {want} µs");
        assert!(
            texts(f).contains(&marker),
            "{}: no '{marker}' in {:?}",
            f["id"],
            texts(f)
        );
    }
    // Overlays have a legend naming each result.
    for n in ["a", "b", "nic"] {
        assert!(
            texts(&figs[0]).iter().any(|t| t.starts_with(n)),
            "no legend entry {n}"
        );
    }
    assert!(
        texts(&figs[0]).iter().any(|t| t.starts_with("budget ")),
        "the budget is marked"
    );
    for band in ["Great", "Good", "Poor", "Bad", "Pathetic"] {
        assert!(
            texts(&figs[0]).iter().any(|t| t == band),
            "band {band} not shaded"
        );
    }
    assert_eq!(attr(&figs[2], "data-max-us"), dev_max);
    assert!(
        texts(&figs[2])
            .iter()
            .any(|t| t == "99.999%" || t == "99.99%"),
        "{:?}",
        texts(&figs[2])
    );
    // Chromium's own services (update, accounts) talk to Google even headless; nothing else may appear.
    let log = std::fs::read_to_string(&netlog).unwrap();
    let foreign: Vec<&str> = log
        .split("\"url\":\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .filter(|u| {
            !u.starts_with("file://")
                && !u.contains(".google.com/")
                && !u.contains(".googleapis.com/")
        })
        .collect();
    assert!(foreign.is_empty(), "requests from the page: {foreign:?}");
}
