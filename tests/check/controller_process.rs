//! `check --pid/--process` against real processes: one whose cyclic thread is deliberately wrong (SCHED_OTHER,
//! memory not locked, allowed on every CPU) and one that is right (SCHED_FIFO 80 pinned alone to the RT core,
//! mlockall, /dev/cpu_dma_latency held at 0). Both are python3 helpers with a 1 ms cyclic thread.

use crate::common;

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rmp-eval");

/// argv: NAME RIGHT(0/1) CORE. The cyclic thread sleeps 1 ms in a loop; the main thread waits.
const CONTROLLER: &str = r#"
import ctypes, os, struct, sys, threading, time
name, right, core = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3])
open('/proc/self/comm', 'w').write(name)
keep = []
if right:
    assert ctypes.CDLL(None, use_errno=True).mlockall(3) == 0
    f = open('/dev/cpu_dma_latency', 'wb', buffering=0)
    f.write(struct.pack('i', 0))
    keep.append(f)
    os.sched_setaffinity(0, set(range(os.cpu_count())) - {core} or {core})
ready = threading.Event()
def cyclic():
    if right:
        os.sched_setaffinity(0, {core})
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(80))
    ready.set()
    while True:
        time.sleep(0.001)
threading.Thread(target=cyclic, daemon=True).start()
ready.wait()
time.sleep(0.3)
print('ready', flush=True)
time.sleep(60)
"#;

fn controller(name: &str, right: bool, core: usize) -> common::Helper {
    let args = [name, if right { "1" } else { "0" }, &core.to_string()].map(String::from);
    common::python_ready(CONTROLLER, &args)
}

fn audit(core: usize, how: &[&str]) -> Vec<(String, String, String)> {
    let o = Command::new(BIN)
        .args(["check", "--json", "--core", &core.to_string()])
        .args(how)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["section"] == "process")
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("id"), s("status"), s("detail"))
        })
        .collect()
}

fn status<'a>(v: &'a [(String, String, String)], id: &str) -> (&'a str, &'a str) {
    let f = v
        .iter()
        .find(|c| c.0 == id)
        .unwrap_or_else(|| panic!("{id} missing: {v:?}"));
    (f.1.as_str(), f.2.as_str())
}

#[test]
fn a_wrong_controller_fails_and_a_right_one_passes() {
    if !common::require_root("a_wrong_controller_fails_and_a_right_one_passes") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let core = common::rt_core();
    let tag = std::process::id() % 100_000;
    let wrong = controller(&format!("ctl-wrong-{tag}"), false, core);
    let right = controller(&format!("ctl-right-{tag}"), true, core);

    let w = audit(core, &["--pid", &wrong.0.id().to_string()]);
    assert_eq!(w.len(), 5, "{w:?}");
    let (s, d) = status(&w, "process_rt_policy");
    assert_eq!(s, "fail", "{d}");
    assert!(d.contains("SCHED_OTHER"), "{d}");
    assert_eq!(status(&w, "process_affinity").0, "fail");
    let (s, d) = status(&w, "process_memlock");
    assert_eq!(s, "fail", "{d}");
    assert!(d.starts_with("VmLck 0 kB"), "{d}");

    // By name this time.
    let r = audit(core, &["--process", &format!("ctl-right-{tag}")]);
    let (s, d) = status(&r, "process_rt_policy");
    assert_eq!((s, d.ends_with("SCHED_FIFO/RR 80")), ("pass", true), "{d}");
    let (s, d) = status(&r, "process_affinity");
    assert_eq!(s, "pass", "{d}");
    assert_eq!(status(&r, "process_memlock").0, "pass");
    let (s, d) = status(&r, "process_dma_latency");
    assert_eq!(
        (s, d),
        ("pass", format!("held by {}", right.0.id()).as_str())
    );
    // Not PREEMPT_RT here: info; on an RT kernel a verdict.
    assert!(["info", "pass", "fail"].contains(&status(&r, "process_irq_priorities").0));
}

#[test]
fn a_missing_process_is_exit_2() {
    let o = Command::new(BIN)
        .args(["check", "--process", "no-such-proc"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such process"));
    // A name comm cannot hold (the kernel keeps 15 bytes) is refused as such, not searched for.
    let o = Command::new(BIN)
        .args(["check", "--process", "no-such-process-name"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("keeps 15"));
    let o = Command::new(BIN)
        .args(["check", "--pid", "4194305"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
