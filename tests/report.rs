//! `rmp-eval report` on real results (two cyclic runs and a NIC run against `reflect`), opened in headless
//! Chromium (Debian's package, tests/install-deps.sh): a screenshot is taken, and the DOM Chromium serialises shows
//! every plot rendered, with axis ranges, curves and max markers that match the results; the page references
//! nothing outside itself and Chromium's net log has no request from it. Results whose every free-text string is
//! hostile markup with control bytes are shown as text: no element injected into Chromium's DOM, every SVG XML.

use crate::common;
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
    let _live = common::lock::LIVE.shared();
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
    for (f, want, bands) in [(&figs[0], dev_max, 16.0 * 62.5), (&figs[3], rtt_max, 0.0)] {
        // The x axis reaches past the largest value, without dwarfing it, and shows every band; the marker
        // names the max.
        let x_max = attr(f, "data-x-max");
        assert!(
            x_max >= want && x_max <= (want * 2.5 + 1.0).max(bands * 1.25),
            "{}: x to {x_max}, max {want}",
            f["id"]
        );
        assert!(attr(f, "data-x-min") > 0.0, "a log axis");
        assert_eq!(attr(f, "data-max-us"), want);
        let marker = format!("max {want} µs");
        assert!(
            texts(f).contains(&marker),
            "{}: no '{marker}' in {:?}",
            f["id"],
            texts(f)
        );
    }
    // Overlays have a legend naming each result by its run label (all three "run", told apart by their start),
    // never by its file's name.
    let legend: Vec<String> = texts(&figs[0])
        .into_iter()
        .filter(|t| t.ends_with(" Cyclic") || t.ends_with(" Sender"))
        .collect();
    assert_eq!(legend.len(), 3, "{legend:?}");
    assert!(legend.iter().all(|t| t.starts_with("run ")), "{legend:?}");
    legend
        .iter()
        .for_each(|t| assert_eq!(legend.iter().filter(|u| *u == t).count(), 1));
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
    band_layout(dir, &dir.join("histogram.svg"), &page);
    for id in ["histogram", "max-per-interval", "percentiles", "rtt"] {
        labels_inside_and_apart(dir, &dir.join(format!("{id}.svg")), &page);
    }
    // The max per interval ends at the longest run's end, its budget (W of the 500 µs period) marked.
    let longest = max_of(
        results
            .iter()
            .map(|v| v["duration_s"].as_f64().unwrap())
            .collect(),
    );
    assert_eq!(attr(&figs[1], "data-x-max"), longest);
    assert!(texts(&figs[1]).contains(&"budget 62.5 µs".to_string()));
    assert_eq!(attr(&figs[2], "data-max-us"), dev_max);
    for want in ["99.999%", "deviation from the period (µs)"] {
        assert!(
            texts(&figs[2]).iter().any(|t| t == want),
            "no '{want}' in {:?}",
            texts(&figs[2])
        );
    }
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

/// Chromium's layout of a page: the box (px) of every SVG `<text>` with its text, and of every band (the
/// rectangles shaded at opacity 0.12), left to right. Read by a script in a page made for the test around the SVG,
/// since the report's own page runs none.
const LAYOUT_JS: &str = r#"
const box = e => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; };
const out = {
  texts: [...document.querySelectorAll("text")].map(t => Object.assign(box(t), {t: t.textContent.trim()})),
  bands: [...document.querySelectorAll("rect[opacity='0.12']")].map(box),
};
const p = document.createElement("pre"); p.id = "layout"; p.textContent = JSON.stringify(out);
document.body.appendChild(p);
"#;

type Box = (f64, f64, f64, f64);

/// Chromium's layout of `svg` (also inline in the report `page`): each `<text>` with its box, and the bands' boxes.
fn layout(dir: &Path, svg: &Path, page: &Path) -> (Vec<(String, Box)>, Vec<Box>) {
    let s = std::fs::read_to_string(svg).unwrap();
    assert!(
        std::fs::read_to_string(page).unwrap().contains(&s),
        "{}: not the page's",
        svg.display()
    );
    let html = dir.join("layout.html");
    let doc = format!(
        "<!DOCTYPE html><html><body style=\"margin:0\">{s}<script>{LAYOUT_JS}</script></body></html>"
    );
    std::fs::write(&html, doc).unwrap();
    let o = chromium(&dir.join("profile-layout"), &["--dump-dom"], &html);
    let dom = text(&o.stdout);
    let json = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|t| t.split("</pre>").next())
        .unwrap_or_else(|| panic!("no layout: {}", text(&o.stderr)))
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let l: Value = serde_json::from_str(&json).unwrap();
    let b = |v: &Value| {
        let f = |k: &str| v[k].as_f64().unwrap();
        (f("x"), f("y"), f("w"), f("h"))
    };
    let texts = l["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["t"].as_str().unwrap().to_string(), b(t)))
        .collect();
    (
        texts,
        l["bands"].as_array().unwrap().iter().map(b).collect(),
    )
}

fn apart(a: Box, c: Box) -> bool {
    a.0 + a.2 <= c.0 || c.0 + c.2 <= a.0 || a.1 + a.3 <= c.1 || c.1 + c.3 <= a.1
}

/// Every label of the plot `svg` whole inside its 900 × 420 image (none cut at an edge) and clear of every other.
fn labels_inside_and_apart(dir: &Path, svg: &Path, page: &Path) -> Vec<(String, Box)> {
    let (texts, _) = layout(dir, svg, page);
    for (i, (t, a)) in texts.iter().enumerate() {
        assert!(
            a.0 >= 0.0 && a.1 >= 0.0 && a.0 + a.2 <= 900.0 && a.1 + a.3 <= 420.0,
            "{}: '{t}' {a:?} cut at the image's edge",
            svg.display()
        );
        for (u, c) in &texts[i + 1..] {
            assert!(
                apart(*a, *c),
                "{}: '{t}' {a:?} overlaps '{u}' {c:?}",
                svg.display()
            );
        }
    }
    texts
}

/// Lays the histogram `svg` (also inline in the report `page`) out in Chromium and asserts its bands readable: each
/// at least 30 px wide with its name inside it, the names clear of each other and of every other text.
fn band_layout(dir: &Path, svg: &Path, page: &Path) {
    let (texts, bands) = layout(dir, svg, page);
    let names = ["Great", "Good", "Poor", "Bad", "Pathetic"];
    assert_eq!(bands.len(), 5, "{}: {bands:?}", svg.display());
    for (i, name) in names.iter().enumerate() {
        let (_, label) = texts
            .iter()
            .find(|(t, _)| t == name)
            .unwrap_or_else(|| panic!("no {name}: {texts:?}"));
        let band = bands[i];
        assert!(
            band.2 >= 30.0,
            "{}: {name} {} px wide",
            svg.display(),
            band.2
        );
        assert!(
            label.0 >= band.0 && label.0 + label.2 <= band.0 + band.2,
            "{}: {name}'s label {label:?} outside its band {band:?}",
            svg.display()
        );
        for (t, other) in texts.iter().filter(|(t, _)| t != name) {
            assert!(
                apart(*label, *other),
                "{}: {name} {label:?} overlaps '{t}' {other:?}",
                svg.display()
            );
        }
    }
}

#[test]
fn a_thread_run_gets_a_histogram_per_thread_with_its_own_bands() {
    if !common::require_root("a_thread_run_gets_a_histogram_per_thread_with_its_own_bands") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    if !Path::new(CHROMIUM).exists()
        && !common::cannot_run("report", "no /usr/bin/chromium (tests/install-deps.sh)")
    {
        return;
    }
    let root = root_tree();
    let dir = root.path();
    // Two runs of LinuxCNC's pair (a fast base thread over a servo thread), so that each plot overlays both.
    let mut files = Vec::new();
    for name in ["first", "second"] {
        let out = dir.join(format!("{name}.json"));
        let v = run_json(
            dir,
            &[
                "--thread",
                "base:250us:80",
                "--thread",
                "servo:1ms:40",
                "--iterations",
                "1500",
                "--json",
                "--output",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(v["series"].as_array().unwrap().len(), 2);
        files.push(out);
    }
    let page = dir.join("report.html");
    let mut args = vec![
        "report",
        "-o",
        page.to_str().unwrap(),
        "--svg",
        dir.to_str().unwrap(),
    ];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));

    let o = chromium(&dir.join("profile"), &["--dump-dom"], &page);
    let dom = dir.join("dom.html");
    std::fs::write(&dom, &o.stdout).unwrap();
    let p = Command::new("python3")
        .args(["-c", DOM, dom.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", text(&p.stderr));
    let d: Value = serde_json::from_slice(&p.stdout).unwrap();
    let figs = d["figures"].as_array().unwrap();
    let ids: Vec<&str> = figs.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "histogram",
            "histogram-2",
            "max-per-interval",
            "percentiles"
        ],
        "one histogram per thread"
    );
    let attr = |f: &Value, k: &str| f["attrs"][k].as_str().unwrap().to_string();
    for (f, thread, width) in [(&figs[0], "base", "31.25"), (&figs[1], "servo", "125")] {
        // Its own bands (W = its period / 8), the budget marked at its W, both runs' series of this thread.
        assert_eq!(attr(f, "data-band-width"), width, "{thread}");
        assert_eq!(attr(f, "data-curves"), "2", "{thread}");
        let texts: Vec<&str> = f["texts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with(&format!("Thread {thread} ("))),
            "{texts:?}"
        );
        assert!(
            texts.contains(&format!("budget {width} µs").as_str()),
            "{texts:?}"
        );
        // Both runs, by their run label ("run", told apart by their start), not by file ("first", "second").
        let named: Vec<&&str> = texts
            .iter()
            .filter(|t| t.starts_with("run ") && t.ends_with(&format!(" {thread}")))
            .collect();
        assert_eq!(named.len(), 2, "{texts:?}");
        assert!(
            !texts
                .iter()
                .any(|t| t.starts_with("first") || t.starts_with("second")),
            "{texts:?}"
        );
        let svg = dir.join(format!("{}.svg", f["id"].as_str().unwrap()));
        band_layout(dir, &svg, &page);
    }
    // The percentiles and the max per interval overlay every thread of both runs, their labels clear of each other
    // and inside the image ("10000" too).
    assert_eq!(attr(&figs[2], "data-curves"), "4");
    assert_eq!(attr(&figs[3], "data-curves"), "4");
    for id in ["max-per-interval", "percentiles"] {
        labels_inside_and_apart(dir, &dir.join(format!("{id}.svg")), &page);
    }
}

/// Markup that closes the SVG and opens an element, a quote that would end an attribute, and control bytes (ESC,
/// BEL) that no XML may hold: 62 characters, so that with a counter it is as long as a series label may be (64).
const HOSTILE: &str = "<script>alert(1)</script></svg><img src=x onerror=alert(2)>\"\x1b\x07";
/// What a reader must see of it: the markup as text, the control bytes written out as the terminal shows them.
const SHOWN: &str = "<script>alert(1)</script></svg><img src=x onerror=alert(2)>\"\\u{1b}\\u{7}";

/// One thread's series of a `run --thread` result: 10,000 periods, every 500th late by `late_ns`.
fn thread_series(label: &str, period_us: u32, late_ns: u64) -> Value {
    let mut s = rmp_eval::measure::cyclic::series::Series::new(label, period_us, None);
    for i in 0..10_000u64 {
        let late = if i % 500 == 0 { late_ns } else { 2_000 };
        s.record(u64::from(period_us) * 1000 + late, Some(10_000 + late));
    }
    let mut v = serde_json::to_value(s.summary()).unwrap();
    let w = f64::from(period_us) / 8.0;
    v["thread"] =
        serde_json::json!({"period_us": period_us, "bucket_width_us": w, "priority": 80, "cpu": 1});
    v["max_per_interval"] =
        serde_json::json!({"interval_s": 1.0, "max_us": [2.0, late_ns as f64 / 1000.0, 2.0]});
    v
}

/// A saved two-thread result holding every string the report shows: the machine's identity (SMBIOS strings, or
/// with `smbios` false only the device tree's model), the checks that failed, an error, a reset, round trips.
fn full_result(smbios: bool) -> Value {
    use rmp_eval::measure::result::RunResult;
    let mut v = serde_json::to_value(RunResult {
        duration_s: 10.0,
        resets: 1,
        checkpoint: true,
        ..RunResult::for_test(Vec::new())
    })
    .unwrap();
    let base = thread_series("base", 250, 200_000);
    v["series"] = serde_json::json!([base, thread_series("servo", 1000, 900_000)]);
    for (k, s) in [
        ("verdict", "fail"),
        ("started", "2026-12-04T20:00:00Z"),
        ("kernel", "6.1.0-27-rt-amd64"),
        ("label", "run"),
        ("error", "replies stopped"),
        ("reset_at", "2026-12-04T20:00:05Z"),
    ] {
        v[k] = s.into();
    }
    let firmware = if smbios {
        serde_json::json!({"system_vendor": "A", "product": "B", "product_version": "C", "board_vendor": "D",
            "board": "E", "board_version": "F", "bios_vendor": "G", "bios_version": "H", "bios_date": "I"})
    } else {
        serde_json::json!({"dt_model": "Raspberry Pi 4 Model B Rev 1.5"})
    };
    v["identity"] = serde_json::json!({
        "hostname": "h", "cpu": "c", "cpus": 2, "kernel_cmdline": "quiet", "command": "rmp-eval run",
        "firmware": firmware, "checks": {"pass": 1, "fail": 1, "unknown": 0, "failed": ["swap"]}
    });
    v["load"] = serde_json::json!({"kinds": ["cpu"], "cpus": [0], "command": "stress-ng --cpu 1"});
    let mut rtt = serde_json::json!({"count": 10_000, "lost": 0, "timestamps": "software", "budget_us": 125.0});
    for k in [
        "min_us", "p50_us", "p99_us", "p999_us", "p9999_us", "max_us", "hdr",
    ] {
        rtt[k] = base[k].clone();
    }
    rtt["avg_us"] = base["p50_us"].clone();
    v["rtt"] = rtt;
    v
}

/// JSON pointers of every string in `v`.
fn string_paths(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::String(_) => out.push(at),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, e)| string_paths(e, format!("{at}/{i}"), out)),
        Value::Object(o) => o
            .iter()
            .for_each(|(k, e)| string_paths(e, format!("{at}/{k}"), out)),
        _ => {}
    }
}

/// Replaces every free-text string of a result with HOSTILE and a counter (series labels must differ): a string is
/// free text when the result still loads with HOSTILE in it (an enum such as the mode or the verdict does not). The
/// histograms (`hdr`: base64, decoded, never shown) stay. Returns the pointers replaced.
fn make_hostile(v: &mut Value) -> Vec<String> {
    let mut paths = Vec::new();
    string_paths(v, String::new(), &mut paths);
    let mut replaced = Vec::new();
    for (n, p) in paths.into_iter().enumerate() {
        if p.ends_with("/hdr") {
            continue;
        }
        let old = v.pointer(&p).unwrap().clone();
        *v.pointer_mut(&p).unwrap() = format!("{HOSTILE}{n}").into();
        if serde_json::from_value::<rmp_eval::measure::result::RunResult>(v.clone()).is_ok() {
            replaced.push(p);
        } else {
            *v.pointer_mut(&p).unwrap() = old;
        }
    }
    replaced
}

/// What Chromium built from the page: every element's tag and attribute names, the identity rows (th, td), and per
/// figure its id and the texts of its SVG.
const PAGE: &str = r#"
import sys, json
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = set(); s.attrs = set(); s.rows = []; s.cell = None; s.figs = []; s.fig = None
    def handle_starttag(s, tag, attrs):
        s.tags.add(tag); s.attrs.update(k for k, _ in attrs)
        if tag == "tr": s.rows.append(["", ""])
        if tag in ("th", "td"): s.cell = 0 if tag == "th" else 1
        if tag == "figure": s.fig = {"id": dict(attrs).get("id"), "texts": []}; s.figs.append(s.fig)
    def handle_endtag(s, tag):
        if tag in ("th", "td"): s.cell = None
        if tag == "figure": s.fig = None
    def handle_data(s, d):
        if s.cell is not None: s.rows[-1][s.cell] += d
        if s.fig is not None and d.strip(): s.fig["texts"].append(d.strip())
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
print(json.dumps({"tags": sorted(p.tags), "attrs": sorted(p.attrs), "rows": p.rows, "figures": p.figs}))
"#;

/// Each SVG (a file, or each `<svg>…</svg>` of a page) parsed as XML: its element names, or why it is not XML.
const SVG_XML: &str = r#"
import sys, json, re
import xml.etree.ElementTree as ET
docs = []
for f in sys.argv[1:]:
    s = open(f, encoding="utf-8").read()
    docs += re.findall(r"<svg.*?</svg>", s, re.S) if f.endswith(".html") else [s]
out = []
for d in docs:
    try:
        out.append(sorted({e.tag.split("}")[-1] for e in ET.fromstring(d).iter()}))
    except ET.ParseError as e:
        out.append("not XML: %s" % e)
print(json.dumps(out))
"#;

fn python(script: &str, args: &[&Path]) -> Value {
    let p = Command::new("python3")
        .args(["-c", script])
        .args(args)
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", text(&p.stderr));
    serde_json::from_slice(&p.stdout).unwrap()
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

/// Elements the page and its plots are made of: anything else in Chromium's DOM was injected.
const PAGE_TAGS: [&str; 25] = [
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "h2",
    "p",
    "section",
    "table",
    "tbody",
    "tr",
    "th",
    "td",
    "figure",
    "figcaption",
    "svg",
    "rect",
    "text",
    "polyline",
    "line",
    "path",
    "circle",
    "polygon",
];

#[test]
fn hostile_strings_in_results_stay_text_in_chromium_and_the_svgs_stay_xml() {
    if !Path::new(CHROMIUM).exists()
        && !common::cannot_run("report", "no /usr/bin/chromium (tests/install-deps.sh)")
    {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // Two results, so that every plot draws a legend; their labels (the results' names) and file names are hostile.
    let mut files = Vec::new();
    for (n, smbios) in [
        (
            "<img src=x onerror=alert(3)>\" onmouseover=\"alert(4)\x1b]0;t\x07",
            true,
        ),
        ("b", false),
    ] {
        let mut v = full_result(smbios);
        let replaced = make_hostile(&mut v);
        for p in [
            "/series/0/label",
            "/series/1/label",
            "/identity/hostname",
            "/identity/cpu",
            "/identity/kernel_cmdline",
            "/identity/command",
            "/identity/checks/failed/0",
            "/kernel",
            "/started",
            "/error",
            "/reset_at",
            "/label",
            "/load/command",
        ] {
            assert!(replaced.iter().any(|r| r == p), "{p} kept: {replaced:?}");
        }
        let dmi = replaced
            .iter()
            .filter(|p| p.starts_with("/identity/firmware/"));
        assert_eq!(dmi.count(), if smbios { 9 } else { 1 });
        assert!(!replaced.iter().any(|p| p == "/mode" || p == "/verdict"));
        // The same two threads in both results: each thread's plot overlays both, with a legend.
        for i in 0..2 {
            v["series"][i]["label"] = format!("{HOSTILE}{i}").into();
        }
        let f = dir.join(format!("{n}.json"));
        std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
        files.push(f);
    }
    let page = dir.join("report.html");
    let svgs = dir.join("svg");
    let o = Command::new(bin())
        .args(["report", "-o"])
        .arg(&page)
        .arg("--svg")
        .arg(&svgs)
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));

    let o = chromium(&dir.join("profile"), &["--dump-dom"], &page);
    let dom = dir.join("dom.html");
    std::fs::write(&dom, &o.stdout).unwrap();
    assert!(
        text(&o.stdout).contains("rmp-eval report"),
        "{}",
        text(&o.stderr)
    );
    let e = python(PAGE, &[&dom]);
    let tags = strs(&e["tags"]);
    let foreign: Vec<_> = tags.iter().filter(|t| !PAGE_TAGS.contains(t)).collect();
    assert!(
        foreign.is_empty(),
        "injected elements in Chromium's DOM: {foreign:?}"
    );
    let attrs = strs(&e["attrs"]);
    assert!(
        !attrs.iter().any(|a| a.starts_with("on")),
        "an injected handler: {attrs:?}"
    );
    // Every identity row a result's string goes into shows it as text, in both results' tables.
    let rows: Vec<(String, String)> = e["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
        .collect();
    for k in [
        "Host",
        "Machine",
        "CPU",
        "Kernel command line",
        "Command",
        "Checks",
        "Kernel",
        "Started",
        "Statistics reset",
        "Error",
    ] {
        let n = rows
            .iter()
            .filter(|(th, td)| th == k && td.contains(SHOWN))
            .count();
        assert_eq!(n, 2, "row {k}: {rows:?}");
    }
    let n = rows
        .iter()
        .filter(|(th, td)| th == "BIOS" && td.contains(SHOWN))
        .count();
    assert_eq!(n, 1, "the SMBIOS result's BIOS row: {rows:?}");
    for k in [" max", " tail", " thread"] {
        let n = rows
            .iter()
            .filter(|(th, _)| th.starts_with(SHOWN) && th.ends_with(k))
            .count();
        assert_eq!(n, 4, "each thread's '{k}' row: {rows:?}");
    }
    // A plot per thread; the legends name the results, and those of the histograms and percentiles their series.
    let names = e["figures"].as_array().unwrap();
    let ids: Vec<&str> = names.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "histogram",
            "histogram-2",
            "max-per-interval",
            "percentiles",
            "rtt"
        ]
    );
    for f in names {
        let texts = strs(&f["texts"]);
        assert!(
            texts.iter().any(|t| t.starts_with(SHOWN)),
            "{}: {texts:?}",
            f["id"]
        );
        if f["id"] != "max-per-interval" && f["id"] != "rtt" {
            assert!(
                texts.iter().any(|t| t.contains(SHOWN)),
                "{}: {texts:?}",
                f["id"]
            );
        }
    }

    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.chars().any(|c| c.is_control() && c != '\n'),
        "control bytes reach the page"
    );

    let mut svg_files: Vec<_> = std::fs::read_dir(&svgs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    svg_files.sort();
    assert_eq!(svg_files.len(), names.len(), "{svg_files:?}");
    let mut all: Vec<&Path> = svg_files.iter().map(|p| p.as_path()).collect();
    all.push(&page);
    let parsed = python(SVG_XML, &all);
    let parsed = parsed.as_array().unwrap();
    assert_eq!(parsed.len(), 2 * names.len(), "{parsed:?}");
    for p in parsed {
        let names = p.as_array().unwrap_or_else(|| panic!("{p}"));
        assert!(
            names
                .iter()
                .all(|n| PAGE_TAGS.contains(&n.as_str().unwrap())),
            "{names:?}"
        );
    }
}
