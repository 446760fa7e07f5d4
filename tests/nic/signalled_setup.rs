//! A signal while a NIC run sets up or runs its preflight (before any measurement): the run ends by itself and puts
//! back everything it changed — the transmit queue's XPS mask and the AF_XDP program, with their records under
//! /run/rmp-eval — instead of being killed with them left in place. The run is held at the preflight by the
//! `RMP_EVAL_TEST_PAUSE_PREFLIGHT` seam (src/measure/nic/link.rs), so the signal lands there every time.

use crate::common;
use common::nic::*;

use std::path::Path;
use std::time::{Duration, Instant};

const QUEUES: &str = "/run/rmp-eval/queues";
const XDP: &str = "/run/rmp-eval/xdp";

fn xdp_attached(iface: &str) -> bool {
    let o = std::process::Command::new("ip")
        .args(["-o", "link", "show", iface])
        .output()
        .unwrap();
    text(&o.stdout)
        .split_whitespace()
        .any(|w| w.starts_with("xdp"))
}

/// `run EXTRA…` held at its preflight, signalled with `sig` there, then let go; the run's output.
fn signalled_at_preflight(
    v: &Veth,
    sig: i32,
    extra: &[&str],
    records: &Path,
) -> std::process::Output {
    let flag = records.join("at-preflight");
    let core = common::rt_core().to_string();
    let mut args = vec!["--core", &core, "--duration", "30", "--json"];
    args.extend_from_slice(extra);
    let (queues, xdp) = (records.join("queues"), records.join("xdp"));
    std::fs::create_dir_all(&queues).unwrap();
    std::fs::create_dir_all(&xdp).unwrap();
    let mut cmd = nic_run(&v.host, &args);
    cmd.env("RMP_EVAL_TEST_PAUSE_PREFLIGHT", &flag)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    with_records_of_its_own(&mut cmd, QUEUES, &queues);
    with_records_of_its_own(&mut cmd, XDP, &xdp);
    let mut child = cmd.spawn().unwrap();
    let t = Instant::now();
    while !flag.exists() {
        if child.try_wait().unwrap().is_some() || t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("the run never reached its preflight: {}", text(&o.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // At the preflight: the steering is applied and recorded (or the program attached, on af_xdp).
    if extra.contains(&"--txq") {
        assert_ne!(
            xps(&v.host)[2].trim_start_matches(['0', ',']),
            "\n",
            "XPS of tx-2 set"
        );
        assert!(
            queues.join(key(&v.host)).exists(),
            "the steering's record is there"
        );
    }
    if extra.contains(&"af_xdp") {
        assert!(xdp_attached(&v.host) && xdp.join(key(&v.host)).exists());
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
    std::fs::remove_file(&flag).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_signal_at_the_preflight_puts_back_the_steering_and_the_program() {
    if !common::require_root("a_signal_at_the_preflight_puts_back_the_steering_and_the_program") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let v = Veth::with_queues(4);
    let _r = v.reflect(&[]);
    let before = xps(&v.host);
    for (sig, extra, said) in [
        (
            libc::SIGINT,
            &["--txq", "2"][..],
            "stopped by Ctrl+C (SIGINT) before the measurement began",
        ),
        (
            libc::SIGTERM,
            &["--path", "af_xdp"][..],
            "stopped by SIGTERM before the measurement began",
        ),
    ] {
        let records = tempdir();
        let o = signalled_at_preflight(&v, sig, extra, records.path());
        let err = text(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(2),
            "ended by itself, as an error: {err}"
        );
        assert!(err.contains(said), "{err}");
        assert_eq!(xps(&v.host), before, "XPS put back after {said}");
        assert!(!xdp_attached(&v.host), "no program left after {said}");
        assert!(
            !records.path().join("queues").join(key(&v.host)).exists(),
            "{said}"
        );
        assert!(
            !records.path().join("xdp").join(key(&v.host)).exists(),
            "{said}"
        );
    }
}
