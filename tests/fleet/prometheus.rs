//! Prometheus textfiles: `check --prometheus` on a fixture root and a real 2 s `run --prometheus` validate with
//! promtool (Debian's prometheus package), and a real prometheus-node-exporter, started on a free port with a temporary
//! textfile directory, serves them with the values of the run.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::check::{bin, fixture, text};

fn promtool_ok(file: &Path) {
    let o = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .expect("promtool (Debian package prometheus; tests/install-deps.sh installs it)");
    assert!(
        o.status.success(),
        "promtool check metrics {}: {}{}",
        file.display(),
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// The value of the sample line that starts with `series` (name and labels exactly as written).
fn value(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in:\n{metrics}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn check_metrics_validate_and_match_the_json() {
    let tf = tempfile::tempdir().unwrap();
    let root = fixture("debian12-rt-qemu-isolated");
    let arg = format!("--prometheus={}", tf.path().display());
    let o = Command::new(bin())
        .args([
            "--root",
            root.to_str().unwrap(),
            "check",
            "--core",
            "1",
            "--json",
            &arg,
        ])
        .output()
        .unwrap();
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let prom = tf.path().join("rmp_eval_check.prom");
    promtool_ok(&prom);
    promtool_ok(&tf.path().join("rmp_eval_info.prom"));
    let m = std::fs::read_to_string(&prom).unwrap();
    let checks = doc["checks"].as_array().unwrap();
    for c in checks {
        let want = if matches!(c["status"].as_str(), Some("pass" | "info")) {
            1.0
        } else {
            0.0
        };
        let s = format!(
            "rmp_eval_check_passed{{check=\"{}\",section=\"{}\"}}",
            c["id"].as_str().unwrap(),
            c["section"].as_str().unwrap()
        );
        assert_eq!(value(&m, &s), want, "{s}");
    }
    let fails = checks.iter().filter(|c| c["status"] == "fail").count();
    assert_eq!(value(&m, "rmp_eval_checks{status=\"fail\"}"), fails as f64);
    let info = std::fs::read_to_string(tf.path().join("rmp_eval_info.prom")).unwrap();
    assert!(
        info.contains(
            "kernel=\"6.1.0-50-rt-amd64\",preempt=\"rt\",arch=\"x86_64\",machine=\"\",bios=\"\"} 1"
        ),
        "{info}"
    );
    // Nothing but the textfiles: no temporary file left behind.
    let mut names: Vec<String> = std::fs::read_dir(tf.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["rmp_eval_check.prom", "rmp_eval_info.prom"]);
}

#[test]
fn the_default_directory_comes_from_the_node_exporters_defaults_and_must_exist() {
    let r = tempfile::tempdir().unwrap();
    let root = fixture("debian12-rt-qemu-isolated");
    // A copy of the capture, to which /etc/default and the textfile directory are added.
    let st = Command::new("cp")
        .arg("-a")
        .arg(root.join("."))
        .arg(r.path())
        .status()
        .unwrap();
    assert!(st.success());
    let run = || {
        Command::new(bin())
            .args([
                "--root",
                r.path().to_str().unwrap(),
                "check",
                "--core",
                "1",
                "--prometheus",
            ])
            .output()
            .unwrap()
    };
    let o = run();
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no directory /var/lib/prometheus/node-exporter"),
        "{err}"
    );
    std::fs::create_dir_all(r.path().join("etc/default")).unwrap();
    std::fs::write(
        r.path().join("etc/default/prometheus-node-exporter"),
        "ARGS=\"--collector.textfile.directory=/srv/textfiles\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(r.path().join("srv/textfiles")).unwrap();
    let o = run();
    assert_ne!(o.status.code(), Some(2), "{}", text(&o.stderr));
    promtool_ok(&r.path().join("srv/textfiles/rmp_eval_check.prom"));
}

struct Exporter(Child);
impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    body.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

#[test]
fn node_exporter_serves_the_values_of_a_real_run() {
    if !common::require_root("node_exporter_serves_the_values_of_a_real_run") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let tf = tempfile::tempdir().unwrap();
    let root = common::run::root_tree();
    let arg = format!("--prometheus={}", tf.path().display());
    let o = Command::new(bin())
        .args([
            "--root",
            root.path().to_str().unwrap(),
            "run",
            "--duration",
            "2",
            "--json",
            &arg,
        ])
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let prom = tf.path().join("rmp_eval_run.prom");
    promtool_ok(&prom);

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _exp = Exporter(
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--collector.textfile.directory={}",
                tf.path().display()
            ))
            .args(["--collector.disable-defaults", "--collector.textfile"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus-node-exporter (Debian package; tests/install-deps.sh installs it)"),
    );
    let t0 = Instant::now();
    let m = loop {
        if let Some(b) = scrape(port) {
            break b;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "node exporter did not answer on {port}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(value(&m, "node_textfile_scrape_error"), 0.0, "{m}");
    let s = &r["series"][0];
    let label = s["label"].as_str().unwrap();
    let w = &s["wakeup"];
    assert_eq!(
        value(
            &m,
            &format!("rmp_eval_wakeup_latency_seconds_count{{series=\"{label}\"}}")
        ),
        w["count"].as_f64().unwrap()
    );
    assert_eq!(
        value(
            &m,
            &format!("rmp_eval_wakeup_latency_max_seconds{{series=\"{label}\"}}")
        ),
        w["max_us"].as_f64().unwrap() / 1e6
    );
    assert_eq!(
        value(
            &m,
            &format!("rmp_eval_cycle_deviation_max_seconds{{series=\"{label}\"}}")
        ),
        s["max_us"].as_f64().unwrap() / 1e6
    );
    let b = &s["buckets"];
    let outside: u64 = ["good", "poor", "bad", "pathetic"]
        .iter()
        .map(|k| b[k].as_u64().unwrap())
        .sum::<u64>()
        + s["missed"].as_u64().unwrap();
    assert_eq!(
        value(
            &m,
            &format!("rmp_eval_late_cycles_total{{series=\"{label}\"}}")
        ),
        outside as f64
    );
    // The buckets are those of the histogram saved in the result.
    let le = rmp_eval::report::prometheus::le_counts(w["hdr"].as_str().unwrap()).unwrap();
    // node_exporter re-renders le in Go's float format ("5e-06"): compare the bounds as numbers.
    let prefix = format!("rmp_eval_wakeup_latency_seconds_bucket{{series=\"{label}\",le=\"");
    let served: Vec<(f64, f64)> = m
        .lines()
        .filter_map(|l| {
            let (le, v) = l.strip_prefix(&prefix)?.split_once("\"} ")?;
            Some((le.parse().ok()?, v.trim().parse().ok()?))
        })
        .filter(|(b, _): &(f64, f64)| b.is_finite())
        .collect();
    assert_eq!(served.len(), le.len(), "{m}");
    for (i, bound) in rmp_eval::report::prometheus::LE_US.iter().enumerate() {
        let (b, v) = served[i];
        assert!((b - bound / 1e6).abs() < 1e-12, "bound {b} vs {bound} us");
        assert_eq!(v, le[i] as f64, "le={bound} us");
    }
    assert_eq!(
        value(
            &m,
            &format!("rmp_eval_wakeup_latency_seconds_bucket{{series=\"{label}\",le=\"+Inf\"}}")
        ),
        w["count"].as_f64().unwrap()
    );
    assert_eq!(value(&m, "rmp_eval_runs_total"), 1.0);
    assert_eq!(
        value(&m, "rmp_eval_run_duration_seconds"),
        r["duration_s"].as_f64().unwrap()
    );
    assert!(m.contains("rmp_eval_info{arch="), "{m}");
}
