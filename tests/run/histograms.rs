//! The histograms stored in a result, read by HdrHistogram's reference Python library (`hdrhistogram` on PyPI,
//! module `hdrh`, in the venv tests/install-deps.sh makes): same count, max and percentiles as the JSON summary,
//! within the histogram's precision. Cyclic here; the RTT histogram of a NIC run against `reflect` too.

use crate::common;
use common::run as run_common;

use std::path::PathBuf;
use std::process::Command;

use run_common::*;
use serde_json::Value;

/// For each percentile, the values at that percentile ± 1.5 samples (the two libraries round the rank differently:
/// Rust takes ceil(q·n), Python round(q·n)); count and max first. All in ns.
const DECODE: &str = r#"
import sys, json
from hdrh.histogram import HdrHistogram
h = HdrHistogram.decode(sys.argv[1])
n = h.get_total_count()
d = 100.0 * 1.5 / max(n, 1)
out = {"count": n, "max": h.get_max_value(), "p": {}}
for p in (50.0, 99.0, 99.9, 99.99):
    out["p"][str(p)] = [h.get_value_at_percentile(max(p - d, 0.0)), h.get_value_at_percentile(min(p + d, 100.0))]
print(json.dumps(out))
"#;

/// Asserts that the summary `s` (µs keys) and its `hdr` agree, as the Python library reads it.
pub fn assert_hdr_matches(py: &PathBuf, s: &Value, what: &str) {
    let hdr = s["hdr"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no hdr in {s}"));
    let o = Command::new(py).args(["-c", DECODE, hdr]).output().unwrap();
    assert!(o.status.success(), "{what}: {}", text(&o.stderr));
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["count"], s["count"], "{what}: count");
    let near = |json_us: f64, lo_ns: f64, hi_ns: f64| {
        // 3 significant digits: a value is resolved within 0.1 %; the JSON rounds to 1 ns.
        json_us * 1000.0 >= lo_ns * 0.999 - 1.0 && json_us * 1000.0 <= hi_ns * 1.001 + 1.0
    };
    let max_us = s["max_us"].as_f64().unwrap();
    let hmax = d["max"].as_f64().unwrap();
    assert!(
        near(max_us, hmax, hmax),
        "{what}: max {max_us} us, histogram {hmax} ns"
    );
    for (key, p) in [
        ("p50_us", "50.0"),
        ("p99_us", "99.0"),
        ("p999_us", "99.9"),
        ("p9999_us", "99.99"),
    ] {
        let v = s[key].as_f64().unwrap();
        let (lo, hi) = (
            d["p"][p][0].as_f64().unwrap(),
            d["p"][p][1].as_f64().unwrap(),
        );
        assert!(
            near(v, lo, hi),
            "{what}: {key} {v} us, histogram {lo}..{hi} ns"
        );
    }
}

#[test]
fn cyclic_histograms_decode_in_python_to_the_summary() {
    if !common::require_root("cyclic_histograms_decode_in_python_to_the_summary") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let Some(py) = hdrh_python() else { return };
    let root = root_tree();
    let o = run_on(
        root.path(),
        &["--period-us", "200", "--iterations", "5000", "--json"],
    )
    .output()
    .unwrap();
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["series"][0];
    // 5000 periods spanned: the measured ones and those the loop woke too late for.
    assert_eq!(
        s["count"].as_u64().unwrap() + s["missed"].as_u64().unwrap(),
        5000
    );
    assert_hdr_matches(&py, s, "deviation");
    assert_hdr_matches(&py, &s["wakeup"], "wakeup");
    assert!(o.stdout.len() < 200_000, "{} bytes", o.stdout.len());
}

#[test]
fn rtt_histogram_of_a_nic_run_decodes_in_python_to_the_summary() {
    if !common::require_root("rtt_histogram_of_a_nic_run_decodes_in_python_to_the_summary") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let Some(py) = hdrh_python() else { return };
    let veth = common::nic::Veth::new();
    let refl = veth.reflect(&[]);
    let o = common::nic::run_nic(
        &veth.host,
        &["--iterations", "2000", "--period-us", "500", "--json"],
    );
    drop(refl);
    assert_measured(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_hdr_matches(&py, &v["rtt"], "rtt");
    assert_hdr_matches(&py, &v["series"][0], "sender");
}
