//! `run --hwlat` through the binary on a --root tree with a tracefs as a kernel with the hwlat tracer shows it:
//! the gaps and the verdict read back from the tree's trace_pipe, and every tracefs file byte for byte as it was
//! after a normal end, after SIGTERM, and — by the next run, from the record — after kill -9; the refusals.
//! The trace lines are the Linux 6.1 format (kernel/trace/trace_output.c, trace_hwlat_print) printed by hand: the
//! development machine's kernel has no hwlat tracer to capture from (available_tracers: blk function nop).

use crate::common;
use common::run as run_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use run_common::*;
use serde_json::Value;

const TRACING: &str = "sys/kernel/tracing";
const RECORD: &str = "run/rmp-eval/hwlat";
/// A gap of 26 µs (Great at 1 ms: < 125 µs) with its NMI, and one of 212 µs (Good: a failure).
const LINES: &str = "# tracer: hwlat\n\
    \x20          <...>-1453    [001] dn...   123.456789: #1     inner/outer(us):   19/26    \
    ts:1700000000.123456789 count:3 nmi-total:4 nmi-count:1\n\
    \x20  hwlatd-220     [000] d....  5321.000100: #2     inner/outer(us):  212/0      ts:1700000042.000000001 count:1\n\
    not a line of the detector\n";

/// The machine's CPU list and a tracefs offering `tracers`, its trace_pipe holding `pipe`.
fn tree(tracers: &str, pipe: &str) -> tempfile::TempDir {
    let root = root_tree();
    let t = root.path().join(TRACING);
    std::fs::create_dir_all(t.join("hwlat_detector")).unwrap();
    for (f, v) in [
        ("available_tracers", tracers),
        ("current_tracer", "nop\n"),
        ("set_event", ""),
        ("trace_marker", ""),
        ("tracing_on", "1\n"),
        ("tracing_thresh", "0\n"),
        ("tracing_cpumask", "ff\n"),
        ("hwlat_detector/width", "500000\n"),
        ("hwlat_detector/window", "1000000\n"),
        ("hwlat_detector/mode", "none [round-robin] per-cpu\n"),
        ("trace_pipe", pipe),
    ] {
        std::fs::write(t.join(f), v).unwrap();
    }
    root
}

/// Every file under the tree's tracefs, with its bytes.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(&root.join(TRACING), &mut m);
    m
}

fn tracer(root: &Path) -> String {
    std::fs::read_to_string(root.join(TRACING).join("current_tracer")).unwrap()
}

#[test]
fn gaps_and_verdict_read_back_and_every_file_is_put_back() {
    if !common::require_root("hwlat") {
        return;
    }
    let root = tree("hwlat blk function nop\n", LINES);
    let before = files(root.path());
    let o = run_on(root.path(), &["--hwlat", "--duration", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["mode"], "hwlat");
    assert_eq!(v["verdict"], "fail");
    let h = &v["hwlat"];
    assert_eq!(h["width_us"], 500_000);
    assert_eq!(h["window_us"], 1_000_000);
    assert_eq!(h["threshold_us"], 10);
    assert_eq!(h["mode"], "round-robin");
    assert_eq!(h["cpus"].as_array().unwrap().len(), 2);
    assert_eq!(
        (h["total"].as_u64(), h["max_us"].as_u64()),
        (Some(2), Some(212))
    );
    assert_eq!(h["unparsed"], 1);
    assert_eq!(h["buckets"]["great"], 1);
    assert_eq!(h["buckets"]["good"], 1);
    let g = &h["gaps"];
    assert_eq!(g[0]["seq"], 1);
    assert_eq!(g[0]["cpu"], 1);
    assert_eq!(
        (g[0]["inner_us"].as_u64(), g[0]["outer_us"].as_u64()),
        (Some(19), Some(26))
    );
    assert_eq!(g[0]["ts"], "1700000000.123456789");
    assert_eq!(
        (g[0]["count"].as_u64(), g[0]["nmi_total_us"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(g[0]["nmi_count"], 1);
    assert_eq!(
        (g[1]["cpu"].as_u64(), g[1]["inner_us"].as_u64()),
        (Some(0), Some(212))
    );
    assert!(g[1].get("nmi_count").is_none(), "{g}");
    assert_eq!(files(root.path()), before, "tracefs not put back as found");
    assert!(!root.path().join(RECORD).exists());
    assert_eq!(results(root.path()).len(), 1);
}

#[test]
fn great_gaps_only_in_a_short_run_are_inconclusive_and_the_report_says_so() {
    if !common::require_root("hwlat") {
        return;
    }
    let great = LINES.replace("212/0", " 99/0");
    let root = tree("hwlat nop\n", &great);
    let before = files(root.path());
    let o = run_on(root.path(), &["--hwlat", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("Hardware latency detector (hwlat tracer)"),
        "{out}"
    );
    assert!(
        out.contains("Gaps: 2 (max 99 us) — Great 2, Good 0"),
        "{out}"
    );
    assert!(out.contains("gap of 99 µs on CPU 0"), "{out}");
    assert!(out.contains("Verdict: inconclusive"), "{out}");
    assert_eq!(files(root.path()), before);
}

/// A run without --duration, measuring (its first checkpoint saved), the tracer set in the tree.
fn measuring(root: &Path, out_file: &Path) -> Child {
    let mut child = run_on(root, &["--hwlat", "--output"])
        .arg(out_file)
        .env("RMP_EVAL_CHECKPOINT_S", "0.3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_checkpoint(root, &mut child);
    assert_eq!(tracer(root), "hwlat");
    assert!(
        root.join(RECORD).exists(),
        "no record while the tracer runs"
    );
    child
}

#[test]
fn sigterm_mid_run_prints_the_report_saves_the_result_and_puts_tracefs_back() {
    if !common::require_root("hwlat") {
        return;
    }
    let root = tree("hwlat nop\n", LINES);
    let before = files(root.path());
    let out_file = root.path().join("out.json");
    let child = measuring(root.path(), &out_file);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "did not stop");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("Gaps: 2 (max 212 us)"), "{out}");
    assert!(out.contains("(stopped by SIGTERM)"), "{out}");
    assert!(out.contains("Saved: "), "{out}");
    let v: Value = serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["hwlat"]["gaps"].as_array().unwrap().len(), 2);
    assert_eq!(files(root.path()), before);
    assert!(!root.path().join(RECORD).exists());
}

#[test]
fn kill_9_leaves_a_record_that_the_next_run_puts_back() {
    if !common::require_root("hwlat") {
        return;
    }
    let root = tree("hwlat nop\n", LINES);
    let before = files(root.path());
    let mut child = measuring(root.path(), &root.path().join("out.json"));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    assert_eq!(tracer(root.path()), "hwlat", "kill -9 restores nothing");
    // What it had found is in its checkpoint.
    let saved = results(root.path());
    let cp: Value = serde_json::from_slice(&std::fs::read(&saved[0]).unwrap()).unwrap();
    assert_eq!(cp["checkpoint"], true);
    assert_eq!(cp["hwlat"]["gaps"].as_array().unwrap().len(), 2, "{cp}");
    let rec = std::fs::read_to_string(root.path().join(RECORD)).unwrap();
    assert!(rec.contains("none [round-robin] per-cpu"), "{rec}");
    // The next run, of any kind, puts it back first; a refused one too (this one: --hwlat on a busy tracefs would
    // be refused, so it would not start while the tracer is left set).
    let o = run_on(root.path(), &["--hwlat", "--duration", "0.3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("put back the tracefs settings (hwlat tracer)"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(files(root.path()), before);
    assert!(!root.path().join(RECORD).exists());
}

#[test]
fn refused_in_one_line_without_the_tracer_without_tracefs_and_with_other_modes() {
    if !common::require_root("hwlat") {
        return;
    }
    let no_hwlat = tree("blk function nop\n", LINES);
    let bare = root_tree();
    let busy = tree("hwlat nop\n", LINES);
    std::fs::write(
        busy.path().join(TRACING).join("current_tracer"),
        "function\n",
    )
    .unwrap();
    for (root, args, says) in [
        (
            &no_hwlat,
            &["--hwlat"][..],
            "this kernel has no hwlat tracer: CONFIG_HWLAT_TRACER; Debian's",
        ),
        (&bare, &["--hwlat"][..], "no tracefs"),
        (
            &busy,
            &["--hwlat"][..],
            "tracefs is in use (current_tracer=function",
        ),
        (&bare, &["--hwlat", "--nic", "eth0"][..], "--nic"),
        (&bare, &["--hwlat", "--thread", "a:1ms"][..], "--thread"),
        (&bare, &["--hwlat", "--profile", "rmp"][..], "--profile"),
        (&bare, &["--hwlat", "--trace"][..], "--trace"),
    ] {
        let before = files_if_any(root.path());
        let o = run_on(root.path(), args).output().unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(files_if_any(root.path()), before, "{args:?}");
        assert!(!root.path().join(RECORD).exists());
    }
}

fn files_if_any(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    if root.join(TRACING).exists() {
        files(root)
    } else {
        BTreeMap::new()
    }
}

/// The SMI counters of a tree (sparse /dev/cpu/N/msr files, MSR_SMI_COUNT at 0x34) rise by one while the run goes,
/// and a gap stamped at that moment appears in the trace: the gap carries that SMI, the run's totals count it.
#[test]
fn a_gap_gets_the_smi_counted_while_it_happened() {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    if !common::require_root("hwlat") {
        return;
    }
    let root = tree("hwlat nop\n", "");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last: usize = online
        .trim()
        .rsplit(['-', ','])
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let msr = |cpu: usize| root.path().join(format!("dev/cpu/{cpu}/msr"));
    let set = |cpu: usize, v: u64| {
        std::fs::create_dir_all(msr(cpu).parent().unwrap()).unwrap();
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(msr(cpu))
            .unwrap();
        f.write_all_at(&v.to_le_bytes(), 0x34).unwrap();
    };
    for cpu in 0..=last {
        set(cpu, 41);
    }
    let reads = root.path().join("msr-reads");
    let child = run_on(root.path(), &["--hwlat", "--duration", "3", "--json"])
        .env("RMP_EVAL_TEST_MSR_FILE", &reads)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while tracer(root.path()) != "hwlat" {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the tracer was never set"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // A few readings first; then the SMI and, stamped at the same moment, the gap.
    std::thread::sleep(Duration::from_millis(400));
    for cpu in 0..=last {
        set(cpu, 42);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let line = format!(
        "   hwlatd-220     [{last:03}] d....  5321.000100: #1     inner/outer(us):  300/2      ts:{}.{:09} count:1\n",
        now.as_secs(),
        now.subsec_nanos()
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(root.path().join(TRACING).join("trace_pipe"))
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let h = &v["hwlat"];
    assert_eq!(h["gaps"][0]["inner_us"], 300, "{h}");
    assert_eq!(h["gaps"][0]["smis"], 1, "{h}");
    assert_eq!(h["smis"], serde_json::json!([1, 1]), "{h}");
    assert!(h.get("smi_not_counted").is_none(), "{h}");
    // Every reading of a counter was taken by a thread allowed on that CPU alone: a local rdmsr, where a read
    // from another CPU is an IPI to the CPU the detector measures (the binary's test seam,
    // src/measure/interference/smi.rs).
    let reads = std::fs::read_to_string(&reads).expect("the readings were recorded");
    let mut read: Vec<&str> = Vec::new();
    for l in reads.lines() {
        let (cpu, allowed) = l.split_once(' ').unwrap();
        assert_eq!(
            cpu, allowed,
            "CPU {cpu}'s counter read by a thread allowed on {allowed}:\n{reads}"
        );
        read.push(cpu);
    }
    read.sort_unstable();
    read.dedup();
    assert_eq!(read.len(), h["cpus"].as_array().unwrap().len(), "{reads}");
}
