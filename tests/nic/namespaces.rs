//! Two network namespaces, each with an interface of the same name: a NIC run in one is not refused, and does not
//! touch the other's records, because another run measures the namesake in the other namespace — the NIC lock and
//! the records under /run/rmp-eval (one directory for every namespace) are keyed by namespace and index.

use crate::common;
use common::nic::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A 4-queue pair whose peer end, inside the pair's namespace, is renamed `name`.
fn pair_named(name: &str) -> Veth {
    let v = Veth::with_queues(4);
    for args in [
        vec!["-n", &v.ns, "link", "set", &v.peer, "down"],
        vec!["-n", &v.ns, "link", "set", &v.peer, "name", name],
        vec!["-n", &v.ns, "link", "set", name, "up"],
    ] {
        let o = Command::new("ip").args(&args).output().unwrap();
        assert!(o.status.success(), "ip {args:?}: {}", text(&o.stderr));
    }
    let t = Instant::now();
    while !text(
        &v.in_ns("ip")
            .args(["-o", "link", "show", name])
            .output()
            .unwrap()
            .stdout,
    )
    .contains("state UP")
    {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{name} did not come up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    v
}

/// `rmp-eval run --nic name --txq 2 ARGS…` inside `v`'s namespace.
fn run_in(v: &Veth, name: &str, args: &[&str]) -> Command {
    let mut c = v.in_ns(BIN);
    c.args(["run", "--nic", name, "--no-config", "--txq", "2", "--core"])
        .arg(common::rt_core().to_string())
        .args(args)
        .env(common::RESULTS_ENV, common::results_dir());
    c
}

/// The key a run inside `v`'s namespace gives `name`'s records: "net{namespace inode}-if{index}" (`key` there).
fn key_in(v: &Veth, name: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata(format!("/run/netns/{}", v.ns))
        .unwrap()
        .ino();
    let idx = text(
        &v.in_ns("cat")
            .arg(format!("/sys/class/net/{name}/ifindex"))
            .output()
            .unwrap()
            .stdout,
    );
    format!("net{ns}-if{}", idx.trim())
}

/// The queue record the run with `pid` keeps, if there is one (not the temporary file it is written to first,
/// `.KEY.rmp-eval.PID`, which is renamed over it).
fn record_of(pid: u32) -> Option<std::path::PathBuf> {
    let mine = format!("pid {pid}\n");
    std::fs::read_dir("/run/rmp-eval/queues")
        .ok()?
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .find(|p| std::fs::read_to_string(p).is_ok_and(|s| s.starts_with(&mine)))
}

#[test]
fn a_namesake_in_another_namespace_is_another_nic() {
    if !common::require_root("a_namesake_in_another_namespace_is_another_nic") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let name = format!("nsk{}", std::process::id() % 100_000);
    let (a, b) = (pair_named(&name), pair_named(&name));
    let _ra = Reflector::start(
        {
            let mut c = Command::new(BIN);
            c.args(["reflect", "--nic", &a.host]);
            c
        },
        "reflect: answering",
    );
    let _rb = Reflector::start(
        {
            let mut c = Command::new(BIN);
            c.args(["reflect", "--nic", &b.host]);
            c
        },
        "reflect: answering",
    );
    let mut first = run_in(&a, &name, &["--duration", "60", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let kept = loop {
        if let Some(p) = record_of(first.id()) {
            break p;
        }
        if first.try_wait().unwrap().is_some() || t.elapsed() > Duration::from_secs(30) {
            let _ = first.kill();
            let o = first.wait_with_output().unwrap();
            panic!(
                "the first run never steered its queues: {}",
                text(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let o = run_in(&b, &name, &["--duration", "1"]).output().unwrap();
    let err = text(&o.stderr);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "the run in the other namespace measured: {err}"
    );
    assert!(kept.exists(), "the first run's record is left to it");
    // SAFETY: kill(2) on our own child's pid (`ip netns exec` execs rmp-eval).
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let o = first.wait_with_output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&o.stderr)
    );
    assert!(!kept.exists(), "the first run removed its own record");
}

#[test]
fn a_namesakes_hardware_timestamp_record_is_left_to_its_namespace() {
    if !common::require_root("a_namesakes_hardware_timestamp_record_is_left_to_its_namespace") {
        return;
    }
    let _live = common::lock::LIVE.shared();
    let name = format!("nst{}", std::process::id() % 100_000);
    let (a, b) = (pair_named(&name), pair_named(&name));
    let reflect = |v: &Veth| {
        let mut c = Command::new(BIN);
        c.args(["reflect", "--nic", &v.host]);
        Reflector::start(c, "reflect: answering")
    };
    let (_ra, _rb) = (reflect(&a), reflect(&b));
    // The record a run in `a` keeps while its hardware timestamps are on (or leaves when killed), in a records
    // directory of this test's own: the old setting, "flags tx_type rx_filter".
    let mine = tempfile::Builder::new()
        .prefix("nst-rec-")
        .tempdir()
        .unwrap();
    let rec = mine.path().join(key_in(&a, &name));
    std::fs::write(&rec, "0 0 0\n").unwrap();
    let run = |v: &Veth| {
        let mut c = v.in_ns(BIN);
        c.args(["run", "--nic", &name, "--no-config", "-i", "20", "--core"])
            .arg(common::rt_core().to_string())
            .env(common::RESULTS_ENV, common::results_dir());
        with_records_of_its_own(
            &mut c,
            rmp_eval::measure::nic::tstamp::RECORD_DIR,
            mine.path(),
        );
        let o = c.output().unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 1 | 3)),
            "{}",
            text(&o.stderr)
        );
        format!("{}{}", text(&o.stdout), text(&o.stderr))
    };
    let said = run(&b);
    assert!(!said.contains("hardware timestamping of"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&rec).ok().as_deref(),
        Some("0 0 0\n"),
        "the other namespace's record is left as it was"
    );
    // In its own namespace it is a leftover: tried (veth has no hardware timestamps), said and consumed.
    let said = run(&a);
    assert!(
        said.contains(&format!("hardware timestamping of {name}")),
        "{said}"
    );
    assert!(!rec.exists(), "record consumed");
}
