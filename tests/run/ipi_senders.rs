//! Who sent the IPIs the RT core received: a helper on another CPU reads the RT core's CPUID registers through
//! /dev/cpu/N/cpuid (the kernel runs the instruction there: a function-call IPI from the helper's task) while
//! `run --trace` measures; the result names the helper as the sender, in the trace and in the CAL row's remedy.

use crate::common;

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rmp-eval");
use common::tracefs::TRACING;

/// Renames itself, pins to CPU argv[2], says "ready", reads CPU argv[1]'s cpuid every 2 ms for argv[3] s.
const SENDER: &str = r#"
import os, sys, time
open('/proc/self/comm', 'w').write('rmp-ipi-sender')
os.sched_setaffinity(0, {int(sys.argv[2])})
f = os.open('/dev/cpu/%s/cpuid' % sys.argv[1], os.O_RDONLY)
print('ready', flush=True)
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    os.pread(f, 16, 0)
    time.sleep(0.002)
"#;

/// Whether the kernel has the ipi_send_cpu tracepoint (6.6 on): from its symbol, since tracefs may not be mounted
/// before a run mounts it, nor after the run unmounts it again.
fn kernel_has_ipi_send_events() -> bool {
    std::fs::read_to_string("/proc/kallsyms")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("__traceiter_ipi_send_cpu"))
}

/// The instances of tracefs whose name is rmp-eval's.
fn our_instances() -> Vec<String> {
    std::fs::read_dir(format!("{TRACING}/instances"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("rmp-eval"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_sender_of_the_rt_cores_ipis_is_named() {
    if !common::require_root("the_sender_of_the_rt_cores_ipis_is_named") {
        return;
    }
    // Alone: one trace at a time (tracefs refuses a second), and the core's IPIs are judged.
    let _lock = common::lock::LIVE.alone();
    let _tracefs = common::tracefs::mounted();
    let core = common::rt_core();
    let other = if core == 0 { 1 } else { 0 };
    if !std::path::Path::new(&format!("/dev/cpu/{core}/cpuid")).exists() {
        let _ = Command::new("modprobe").arg("cpuid").status();
    }
    // A killed run's instance (a pid above any pid_max: no such process) is removed by the next run.
    let killed = format!("{TRACING}/instances/rmp-eval-ipi-4999999");
    match std::fs::create_dir(&killed) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => panic!("{killed}: {e}"),
        _ => {}
    }
    let sender = common::python_ready(SENDER, &[core.to_string(), other.to_string(), "30".into()]);
    let pid = u64::from(sender.0.id());
    let o = Command::new(BIN)
        .args(["run", "--no-config", "--json", "--trace", "--duration", "3"])
        .args(["--core", &core.to_string()])
        .env(common::RESULTS_ENV, common::results_dir())
        .output()
        .unwrap();
    drop(sender);
    common::run::assert_measured(&o);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        our_instances().is_empty(),
        "instance left: {:?}",
        our_instances()
    );
    let s = &doc["trace"]["ipi_senders"];
    if !kernel_has_ipi_send_events() {
        // Kernels before 6.6: the result says the sender is unknown.
        assert!(
            s["source"].as_str().unwrap().starts_with("sender unknown"),
            "{s}"
        );
        return;
    }
    assert_eq!(s["source"], "ipi_send_cpu/ipi_send_cpumask", "{s}");
    let named = s["senders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["pid"] == pid);
    let named = named.unwrap_or_else(|| panic!("helper {pid} not among the senders: {s}"));
    assert_eq!(named["comm"], "rmp-ipi-sender", "{named}");
    assert_eq!(named["row"], "CAL", "{named}");
    assert_eq!(named["own"], false, "{named}");
    assert!(named["count"].as_u64().unwrap() > 0, "{named}");
    // The CAL row of the counters names it in its remedy; no row that only rmp-eval sent to has a fix step.
    let sources = doc["interference"]["sources"].as_array().unwrap();
    let cal = sources
        .iter()
        .find(|x| x["kind"] == "interrupt" && x["name"] == "CAL")
        .unwrap_or_else(|| panic!("no CAL counted: {sources:?}"));
    let why = cal["remedy"]["why"].as_str().unwrap();
    assert!(
        why.contains(&format!("rmp-ipi-sender (pid {pid})")),
        "{why}"
    );
    for x in sources {
        let why = x["remedy"]["why"].as_str().unwrap_or("");
        if why.contains("sent by rmp-eval itself") {
            assert_eq!(x["remedy"]["kind"], "none", "{x}");
        }
    }
}

#[test]
fn a_run_stopped_by_sigterm_removes_its_instance() {
    if !common::require_root("a_run_stopped_by_sigterm_removes_its_instance") {
        return;
    }
    let _lock = common::lock::LIVE.alone();
    let _tracefs = common::tracefs::mounted();
    let core = common::rt_core().to_string();
    let mut run = Command::new(BIN)
        .args([
            "run",
            "--no-config",
            "--json",
            "--trace",
            "--duration",
            "60",
            "--core",
            &core,
        ])
        .env(common::RESULTS_ENV, common::results_dir())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ours = format!("{TRACING}/instances/rmp-eval-ipi-{}", run.id());
    let has_events = kernel_has_ipi_send_events();
    // Until the run has set its trace up (or ended: a run that fails is the assertion below's to show).
    while has_events && !std::path::Path::new(&ours).exists() && run.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !has_events || std::path::Path::new(&ours).exists(),
        "no instance {ours}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status();
    let o = run.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    assert!(
        !std::path::Path::new(&ours).exists(),
        "{ours} left after SIGTERM"
    );
    assert!(doc["trace"].is_object(), "the stopped run's result: {doc}");
}
