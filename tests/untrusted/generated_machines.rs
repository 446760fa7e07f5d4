//! Reading a customer's machine safely: check, snapshot and compare on generated hostile trees and
//! files. Every tree is generated here from the real capture (machine_gen.rs); nothing needs root.

use super::machine_gen;
use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ck_util::{bin, text};
use common::check as ck_util;

/// Runs rmp-eval, killing it if it has not finished after `limit`: a hang is a failure, not a slow pass.
pub fn run_limited(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rmp-eval");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rmp-eval {args:?} still running after {limit:?} (hung)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const HANG: Duration = Duration::from_secs(120);

fn tree(cpus: usize, irqs: usize, threads: usize) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("ck-untr")
        .tempdir()
        .unwrap();
    machine_gen::generate(
        d.path(),
        &machine_gen::Machine {
            cpus,
            irqs,
            threads,
        },
    )
    .unwrap();
    d
}

fn mkfifo(p: &Path) {
    let _ = fs::remove_file(p);
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {} / {}", text(&o.stdout), text(&o.stderr)))
}

fn verdict(doc: &serde_json::Value, id: &str) -> (String, String) {
    ck_util::verdict(doc, id)
}

fn check(root: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec!["--root", root.to_str().unwrap(), "check", "--json"];
    args.extend_from_slice(extra);
    let o = run_limited(&args, HANG);
    (o.status.code(), json(&o))
}

#[test]
fn item1_fifos_do_not_hang_check_or_snapshot() {
    let d = tree(4, 8, 16);
    let r = d.path();
    for f in [
        "proc/interrupts",
        "proc/cmdline",
        "sys/devices/system/cpu/isolated",
        "proc/irq/default_smp_affinity",
        "proc/1000/task/1000/stat",
    ] {
        mkfifo(&r.join(f));
    }
    let (code, doc) = check(r, &[]);
    assert_eq!(code, Some(1));
    for id in [
        "core_isolated",
        "unrelated_irqs",
        "default_affinity",
        "rcu_nocbs",
    ] {
        let (s, detail) = verdict(&doc, id);
        assert_eq!(s, "unknown", "{id}: {detail}");
        assert!(
            detail.contains("not a regular file (FIFO)"),
            "{id}: {detail}"
        );
    }
    let out = r.parent().unwrap().join(format!("{}-snap", r.display()));
    let o = run_limited(
        &[
            "--root",
            r.to_str().unwrap(),
            "snapshot",
            out.to_str().unwrap(),
        ],
        HANG,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (_, copy) = check(&out, &[]);
    assert_eq!(
        doc["checks"], copy["checks"],
        "the copy says what the source said"
    );
    fs::remove_dir_all(&out).unwrap();
}

fn put(root: &Path, rel: &str, text: &str) {
    machine_gen::write(root, rel, text).unwrap();
}

#[test]
fn item4_rcu_nocbs_is_judged_as_the_kernel_does() {
    let d = tree(4, 4, 8);
    let r = d.path();
    let cmd = |extra: &str| {
        put(r, "proc/cmdline", &format!("ro quiet {extra}\n"));
    };
    // (command line, nohz_full in sysfs, core 1 offloaded?)
    for (line, nohz, offloaded) in [
        ("rcu_nocbs=all", "", true),
        ("rcu_nocbs=1-N", "", true),
        ("rcu_nocbs=0-N:1/2", "", false),
        ("rcu_nocbs=1,,3", "", true),
        ("nohz_full=1 rcu_nocbs=0", "1", true),
        // Malformed: "rcu_nocbs= bad CPU range, all CPUs set".
        ("rcu_nocbs=1-x", "", true),
        ("rcu_nocbs=9", "", true),
        ("rcu_nocbs=0", "", false),
        ("rcu_nocbs=2 rcu_nocbs=1", "", true),
        ("", "", false),
    ] {
        cmd(line);
        put(r, "sys/devices/system/cpu/nohz_full", &format!("{nohz}\n"));
        let (_, doc) = check(r, &["--core", "1"]);
        let (s, detail) = verdict(&doc, "rcu_nocbs");
        let want = if offloaded { "pass" } else { "fail" };
        assert_eq!(s, want, "{line:?} nohz_full={nohz:?}: {detail}");
        assert!(!detail.contains('\n'));
    }
}

#[test]
fn item5_garbage_is_unknown_never_a_pass() {
    let d = tree(4, 4, 8);
    let r = d.path();
    let ints = fs::read_to_string(r.join("proc/interrupts")).unwrap();
    let with_irq1 = |row: &str| -> String {
        ints.lines()
            .map(|l| {
                if l.trim_start().starts_with("1:") {
                    row.to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    // IRQ 1's count on the RT core (CPU3) is not a number, or missing (a short row): not a zero.
    for row in [
        "   1:          0       1001          0          X   IO-APIC 1-edge      dev1",
        "   1:          0       1001",
    ] {
        put(r, "proc/interrupts", &with_irq1(row));
        let (_, doc) = check(r, &[]);
        let v = verdict(&doc, "unrelated_irqs");
        assert_eq!(v.0, "unknown", "{row}: {v:?}");
    }
    put(r, "proc/interrupts", &ints);
    // Empty and separator-only masks.
    for m in ["\n", ",,,\n"] {
        put(r, "proc/irq/default_smp_affinity", m);
        put(r, "sys/devices/virtual/workqueue/cpumask", m);
        let (_, doc) = check(r, &[]);
        assert_eq!(verdict(&doc, "default_affinity").0, "unknown", "{m:?}");
        assert_eq!(verdict(&doc, "workqueue").0, "unknown", "{m:?}");
    }
    // A process whose name cannot be read might be irqbalance; a thread that cannot be read might be on the core.
    mkfifo(&r.join("proc/1000/comm"));
    mkfifo(&r.join("proc/1000/task/1001/stat"));
    let (_, doc) = check(r, &[]);
    assert_eq!(verdict(&doc, "irqbalance").0, "unknown");
    assert_eq!(verdict(&doc, "rt_core_threads").0, "unknown");
    // cpu_frequency: zero is not "locked", huge values do not overflow.
    let f = "sys/devices/system/cpu/cpu3/cpufreq";
    for v in ["0", "9223372036854775807", "-5"] {
        for k in ["scaling_cur_freq", "scaling_min_freq", "scaling_max_freq"] {
            put(r, &format!("{f}/{k}"), &format!("{v}\n"));
        }
        let (_, doc) = check(r, &[]);
        assert_eq!(verdict(&doc, "cpu_frequency").0, "unknown", "{v}");
    }
    // `online` naming a CPU the tree has no directory for.
    put(r, "sys/devices/system/cpu/online", "0-15\n");
    let o = run_limited(
        &["--root", r.to_str().unwrap(), "check", "--core", "15"],
        HANG,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("cpu15 is missing"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn item3_a_1024_cpu_machine_and_400k_interrupt_rows() {
    // A real-sized server: the isolated last core passes, core 31 (where IRQ 31 fires and stays) does not.
    let d = tree(1024, 64, 100);
    let r = d.path();
    for core in ["1023", "31"] {
        let (code, doc) = check(r, &["--core", core]);
        assert!(code == Some(0) || code == Some(1), "{code:?}");
        assert_eq!(
            verdict(&doc, "core_isolated").0,
            if core == "1023" { "pass" } else { "fail" }
        );
        assert_eq!(
            verdict(&doc, "unrelated_irqs").0,
            if core == "1023" { "pass" } else { "fail" }
        );
    }
    // 400,000 interrupt rows (the timeout): refused at the bound with the reason, not worked through.
    let mut t = String::from("           CPU0       CPU1       CPU2       CPU3\n");
    for i in 0..400_000 {
        t.push_str(&format!(
            "{i:>6}:          1          1          1          1   PCI-MSI {i}-edge   q{i}\n"
        ));
    }
    let d = tree(4, 4, 8);
    put(d.path(), "proc/interrupts", &t);
    let (_, doc) = check(d.path(), &[]);
    let (s, detail) = verdict(&doc, "unrelated_irqs");
    assert_eq!(s, "unknown");
    assert!(detail.contains("more than 65536 rows"), "{detail}");
}

/// procfs-core 0.18 panics on these stat lines by itself (it slices at the parentheses unchecked); `check --pid`
/// under --root reads the tree's stat files, so each must give an unknown verdict, not a panic.
#[test]
fn malformed_stat_lines_of_the_audited_process_are_unknown_not_a_panic() {
    let d = tree(4, 4, 3);
    let root = d.path();
    // machine_gen's first process is 1000 with threads 1000..1002 (the capture's stat and status lines).
    let (_, doc) = check(root, &["--pid", "1000"]);
    assert_eq!(verdict(&doc, "process_rt_policy").0, "fail", "{doc}");
    for bad in ["(x)", "1 (x)", ") 1 ("] {
        for tid in 1000..1003 {
            put(root, &format!("proc/1000/task/{tid}/stat"), bad);
        }
        put(root, "proc/1000/stat", bad);
        let (code, doc) = check(root, &["--pid", "1000"]);
        assert_ne!(code, Some(101), "{bad}: panicked");
        let (st, detail) = verdict(&doc, "process_rt_policy");
        assert_eq!(st, "unknown", "{bad}: {detail}");
        assert!(detail.contains("no readable threads"), "{bad}: {detail}");
    }
}
