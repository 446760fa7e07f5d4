//! Live on this machine (root only): the NIC watcher rmp-eval-nic@IF.service runs (`apply-saved --nic IF
//! --follow`) puts fix's saved NIC settings back each time the interface is brought up, and ends by itself when the
//! interface is removed. On a veth pair the setting a bring-up must restore is RPS (a veth has no IRQs; the queue
//! IRQs of igb are the VM suite's 12-igb-nic).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common;
use common::fix::Link;

/// Runs `rmp-eval rollback --yes` when dropped: the journal and runtime.json fix wrote go even when the test fails.
struct RollbackOnDrop;
impl Drop for RollbackOnDrop {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_rmp-eval"))
            .args(["rollback", "--yes"])
            .output();
    }
}

/// The watcher, killed when dropped if it has not ended; its stdout lines arrive on `lines`.
struct Watcher {
    child: Child,
    lines: mpsc::Receiver<String>,
}
impl Watcher {
    fn start(nic: &str) -> Watcher {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rmp-eval"))
            .args(["apply-saved", "--nic", nic, "--follow"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        Watcher { child, lines }
    }

    /// The first line containing `what`, or a panic naming what came instead (a deadline, not a timing claim).
    fn wait_for(&self, what: &str) -> String {
        let end = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(what) => return l,
                Ok(l) => seen.push(l),
                Err(_) => break,
            }
        }
        panic!("the watcher never said {what:?}; it said {seen:?}");
    }
}
impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().unwrap();
    assert!(st.success(), "ip {args:?}");
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// Reads `path` until it holds `want` (the watcher works asynchronously), or panics with the last value.
fn until(path: &str, want: &str) {
    let end = Instant::now() + Duration::from_secs(20);
    let mut now = read(path);
    while now.trim_start_matches('0') != want.trim_start_matches('0') && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
        now = read(path);
    }
    assert_eq!(
        now.trim_start_matches('0'),
        want.trim_start_matches('0'),
        "{path}"
    );
}

#[test]
fn the_saved_nic_settings_come_back_at_each_bring_up_until_the_interface_goes() {
    if !common::require_root("the_saved_nic_settings_come_back_at_each_bring_up") {
        return;
    }
    let _one = common::lock::LIVE.alone();
    let nic = format!("rfw{}", std::process::id() % 100_000);
    let link = Link::veth(&nic);
    ip(&["link", "set", &nic, "up"]);
    let rps = format!("/sys/class/net/{nic}/queues/rx-0/rps_cpus");
    // What a driver's defaults or another tool might leave: RPS onto CPU 0.
    std::fs::write(&rps, "1").unwrap();
    let _undo = RollbackOnDrop;
    let fix = Command::new(env!("CARGO_BIN_EXE_rmp-eval"))
        .args([
            "fix",
            "--core",
            &common::rt_core().to_string(),
            "--nic",
            &nic,
        ])
        .args(["--only", "rps", "--yes", "--no-measure"])
        .env(common::RESULTS_ENV, common::results_dir())
        .output()
        .unwrap();
    assert!(
        matches!(fix.status.code(), Some(0 | 1)),
        "fix: {}",
        String::from_utf8_lossy(&fix.stderr)
    );
    until(&rps, "0");

    // Another interface than the saved one: nothing to follow, and it says so.
    let other = Watcher::start("lo");
    other.wait_for("lo is not the saved NIC");

    let w = Watcher::start(&nic);
    w.wait_for(&format!("following {nic}"));
    std::fs::write(&rps, "1").unwrap();
    assert_eq!(read(&rps).trim_start_matches('0'), "1", "a write while up");
    ip(&["link", "set", &nic, "down"]);
    ip(&["link", "set", &nic, "up"]);
    until(&rps, "0");
    // A second bring-up is caught too (the watch goes on after applying).
    std::fs::write(&rps, "1").unwrap();
    ip(&["link", "set", &nic, "down"]);
    ip(&["link", "set", &nic, "up"]);
    until(&rps, "0");

    drop(link);
    w.wait_for(&format!("{nic} was removed"));
    let mut w = w;
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = w.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < end,
            "the watcher stayed after {nic} was removed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}
