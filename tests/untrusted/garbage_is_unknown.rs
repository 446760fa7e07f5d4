//! Garbage or missing input is not a pass: a file the kernel never writes that way, or one that could not be
//! read, gives its check `unknown` with the reason — on the tree itself and in a snapshot of it. Each test copies
//! a captured fixture root (tests/fixtures/README.md names its source) to a temporary directory and breaks one
//! thing in it.

use crate::common;

use std::fs;
use std::path::Path;

use common::check::{check_json, fixture, snapshot, verdict};

/// A copy of fixture `name` to break.
fn copy_of(name: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("ck-broken")
        .tempdir()
        .unwrap();
    let o = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", fixture(name).display()))
        .arg(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    d
}

/// (status, detail) of `id` on `root`.
fn judged(root: &Path, extra: &[&str], id: &str) -> (String, String) {
    verdict(&check_json(root, extra).1, id)
}

fn assert_unknown(got: (String, String), says: &str) {
    assert_eq!(got.0, "unknown", "{got:?}");
    assert!(got.1.contains(says), "{got:?} does not say {says:?}");
}

const UNTUNED: &str = "debian12-rt-qemu-untuned";
const NIC: [&str; 2] = ["--nic", "enp0s2"];

#[test]
fn interrupts_with_only_the_header_is_unknown_not_clean() {
    let d = copy_of(UNTUNED);
    let p = d.path().join("proc/interrupts");
    // The captured table fails (ttyS0, ahci on CPU1): only the header left must not make it clean.
    assert_eq!(judged(d.path(), &[], "unrelated_irqs").0, "fail");
    let header = fs::read_to_string(&p)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    fs::write(&p, format!("{header}\n")).unwrap();
    assert_unknown(
        judged(d.path(), &[], "unrelated_irqs"),
        "no device IRQ rows",
    );
    // Architecture rows alone are no machine's table either.
    fs::write(
        &p,
        format!("{header}\nLOC: 4752 136 Local timer interrupts\n"),
    )
    .unwrap();
    assert_unknown(
        judged(d.path(), &[], "unrelated_irqs"),
        "no device IRQ rows",
    );
}

#[test]
fn a_missing_or_garbage_route_table_is_unknown_not_quiet() {
    let d = copy_of(UNTUNED);
    let route = d.path().join("proc/net/route");
    let captured = fs::read(&route).unwrap();
    // The captured guest's enp0s2 has no address and no route: quiet.
    assert_eq!(judged(d.path(), &NIC, "nic_quiet").0, "pass");
    fs::remove_file(&route).unwrap();
    assert_unknown(
        judged(d.path(), &NIC, "nic_quiet"),
        "/proc/net/route: not captured",
    );
    for garbage in [&b""[..], b"zz\x01 q\n", b"\x00\x01\x02\xff"] {
        fs::write(&route, garbage).unwrap();
        assert_unknown(
            judged(d.path(), &NIC, "nic_quiet"),
            "/proc/net/route: no \"Iface",
        );
    }
    // A route line that is not one.
    let mut bad = captured.clone();
    bad.extend_from_slice(b"enp0s2\tzz\n");
    fs::write(&route, bad).unwrap();
    assert_unknown(judged(d.path(), &NIC, "nic_quiet"), "is not a route");
    fs::write(&route, &captured).unwrap();
    // The other tables it reads: garbage there is unknown too; missing IPv6 files are a kernel without IPv6 where
    // the snapshot recorded them absent, and not captured elsewhere.
    fs::write(d.path().join("proc/net/fib_trie"), "zz\x01 q\n").unwrap();
    assert_unknown(judged(d.path(), &NIC, "nic_quiet"), "/proc/net/fib_trie");
    fs::write(d.path().join("proc/net/fib_trie"), "").unwrap();
    assert_unknown(judged(d.path(), &NIC, "nic_quiet"), "/proc/net/fib_trie");
    let d = copy_of(UNTUNED);
    fs::write(d.path().join("proc/net/ipv6_route"), "zz\x01 q\n").unwrap();
    assert_unknown(judged(d.path(), &NIC, "nic_quiet"), "/proc/net/ipv6_route");
    fs::remove_file(d.path().join("proc/net/ipv6_route")).unwrap();
    fs::remove_file(d.path().join("proc/net/if_inet6")).unwrap();
    assert_unknown(judged(d.path(), &NIC, "nic_quiet"), "not captured");
    fs::write(
        d.path().join("rmp-eval-unreadable.json"),
        r#"{"unreadable":{},"absent":["/proc/net/ipv6_route","/proc/net/if_inet6"]}"#,
    )
    .unwrap();
    assert_eq!(judged(d.path(), &NIC, "nic_quiet").0, "pass");
}

#[test]
fn a_default_affinity_the_kernel_never_prints_is_unknown() {
    let d = copy_of(UNTUNED);
    let p = d.path().join("proc/irq/default_smp_affinity");
    let core = ["--core", "1"];
    assert_eq!(judged(d.path(), &core, "default_affinity").0, "fail");
    // A short group after the first (the kernel pads every group but the first to 8 digits).
    fs::write(&p, "0,0\n").unwrap();
    assert_unknown(judged(d.path(), &core, "default_affinity"), "is not a mask");
    // All zeros: the kernel refuses a default affinity without an online CPU.
    for none in ["0\n", "00000000,00000000\n"] {
        fs::write(&p, none).unwrap();
        assert_unknown(
            judged(d.path(), &core, "default_affinity"),
            "selects no CPU",
        );
    }
    // What the kernel does print still passes.
    fs::write(&p, "1\n").unwrap();
    assert_eq!(
        judged(d.path(), &core, "default_affinity"),
        ("pass".to_string(), "mask 1 (CPUs 0)".to_string())
    );
}

#[test]
fn a_sibling_list_without_the_cpu_itself_is_unknown() {
    let d = copy_of("desktop-i7-smt-untuned");
    let p = d
        .path()
        .join("sys/devices/system/cpu/cpu7/topology/thread_siblings_list");
    let core = ["--core", "7"];
    assert_eq!(judged(d.path(), &core, "smt_sibling").0, "fail");
    for bad in ["\n", "3\n"] {
        fs::write(&p, bad).unwrap();
        assert_unknown(judged(d.path(), &core, "smt_sibling"), "does not hold CPU7");
    }
}

#[test]
fn a_garbage_cpuidle_driver_is_unknown() {
    let d = copy_of(UNTUNED);
    let p = d
        .path()
        .join("sys/devices/system/cpu/cpuidle/current_driver");
    assert_eq!(judged(d.path(), &["--core", "1"], "idle_states").0, "pass");
    fs::write(&p, "zz\x01 q\n").unwrap();
    assert_unknown(
        judged(d.path(), &["--core", "1"], "idle_states"),
        "unexpected value",
    );
}

/// A /proc/PID broken as `breaks` does; irqbalance (not running on the capture) and the snapshot of the tree
/// must both say the processes could not all be read. `as_nobody`: the snapshot runs as nobody (root reads
/// a mode-000 directory anyway).
fn broken_pid_stays_unknown_in_the_snapshot(breaks: impl Fn(&Path), as_nobody: bool) {
    let d = copy_of(UNTUNED);
    let core = ["--core", "1"];
    assert_eq!(judged(d.path(), &core, "irqbalance").0, "pass");
    breaks(&d.path().join("proc/1"));
    let says = "1 processes' names could not be read";
    if !as_nobody {
        assert_unknown(judged(d.path(), &core, "irqbalance"), says);
    }
    let out = tempfile::Builder::new()
        .prefix("ck-broken-snap")
        .tempdir()
        .unwrap();
    let snap = out.path().join("s");
    if as_nobody {
        use std::os::unix::fs::PermissionsExt;
        for p in [d.path(), out.path()] {
            fs::set_permissions(p, fs::Permissions::from_mode(0o777)).unwrap();
        }
        let o = common::as_nobody()
            .arg("--root")
            .arg(d.path())
            .args(["check", "--json", "--core", "1"])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_unknown(verdict(&doc, "irqbalance"), says);
        let o = common::as_nobody()
            .arg("--root")
            .arg(d.path())
            .arg("snapshot")
            .arg(&snap)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{o:?}");
    } else {
        snapshot(d.path(), &snap);
    }
    assert_unknown(judged(&snap, &core, "irqbalance"), says);
    let manifest = fs::read_to_string(snap.join("rmp-eval-unreadable.json")).unwrap();
    assert!(manifest.contains("\"/proc/1/comm\""), "{manifest}");
}

#[test]
fn a_pid_that_is_a_file_is_unknown_in_the_snapshot_too() {
    broken_pid_stays_unknown_in_the_snapshot(
        |p| {
            fs::remove_dir_all(p).unwrap();
            fs::write(p, "x").unwrap();
        },
        false,
    );
}

#[test]
fn an_unreadable_pid_directory_is_unknown_in_the_snapshot_too() {
    if !common::require_root("an_unreadable_pid_directory_is_unknown_in_the_snapshot_too") {
        return;
    }
    broken_pid_stays_unknown_in_the_snapshot(
        |p| {
            use std::os::unix::fs::PermissionsExt;
            // Every other file readable by nobody, as a machine's /proc is.
            let o = std::process::Command::new("chmod")
                .args(["-R", "a+rX"])
                .arg(p.parent().unwrap().parent().unwrap())
                .output()
                .unwrap();
            assert!(o.status.success());
            fs::set_permissions(p, fs::Permissions::from_mode(0o000)).unwrap();
        },
        true,
    );
}

/// A .tar.gz of `n` empty files, plus `extra` members (name, data).
fn tarball(path: &Path, n: usize, extra: &[(&[u8], &[u8])]) {
    let f = fs::File::create(path).unwrap();
    let mut t = tar::Builder::new(flate2::write::GzEncoder::new(
        f,
        flate2::Compression::fast(),
    ));
    let mut put = |name: &[u8], data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        t.append(&h, data).unwrap();
    };
    for i in 0..n {
        put(format!("proc/x{i}").as_bytes(), b"");
    }
    for (name, data) in extra {
        put(name, data);
    }
    t.into_inner().unwrap().finish().unwrap();
}

/// The unpack directories of process `pid`.
fn unpacked_of(pid: u32) -> Vec<std::path::PathBuf> {
    fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("rmp-eval-root-{pid}-"))
        })
        .collect()
}

#[test]
fn a_tarball_over_the_bounds_is_refused_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    let bomb = d.path().join("bomb.tar.gz");
    tarball(&bomb, 200_001, &[]);
    let o = common::check::run(&["--root", bomb.to_str().unwrap(), "check"]);
    assert_eq!(o.status.code(), Some(2));
    let err = common::check::text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("more than 200000 members"), "{err}");
    let big = d.path().join("big.tar.gz");
    let chunk = vec![b'x'; 60 << 20];
    tarball(
        &big,
        0,
        &[
            (b"proc/a", &chunk),
            (b"proc/b", &chunk),
            (b"proc/c", &chunk),
            (b"proc/d", &chunk),
            (b"proc/e", &chunk),
            (b"proc/f", &chunk),
            (b"proc/g", &chunk),
        ],
    );
    let o = common::check::run(&["--root", big.to_str().unwrap(), "check"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::check::text(&o.stderr).contains("unpacks to more than 384 MiB"));
}

#[test]
fn a_member_name_with_escape_sequences_reaches_stderr_escaped() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("esc.tar.gz");
    tarball(&t, 0, &[(b"a\x1b[2J", b"x"), (b"a\x1b[2J/b", b"x")]);
    let o = common::check::run(&["--root", t.to_str().unwrap(), "check"]);
    assert_eq!(o.status.code(), Some(2));
    let err = common::check::text(&o.stderr);
    assert!(!err.contains('\x1b'), "{err:?}");
    assert!(err.contains("\\u{1b}[2J"), "{err:?}");
}

#[test]
fn sigterm_or_sigint_during_the_unpack_leaves_nothing_behind() {
    let d = tempfile::tempdir().unwrap();
    let slow = d.path().join("slow.tar.gz");
    tarball(&slow, 90_000, &[]);
    for sig in ["TERM", "INT"] {
        let mut c = std::process::Command::new(common::check::bin())
            .arg("--root")
            .arg(&slow)
            .arg("check")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = c.id();
        let t0 = std::time::Instant::now();
        while unpacked_of(pid).is_empty() && t0.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!unpacked_of(pid).is_empty(), "SIG{sig}: never unpacking");
        let k = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(k.success());
        let st = c.wait().unwrap();
        assert!(!st.success(), "SIG{sig}: {st:?}");
        assert!(
            unpacked_of(pid).is_empty(),
            "SIG{sig}: {:?} left",
            unpacked_of(pid)
        );
    }
}

#[test]
fn sigterm_sighup_or_sigint_during_the_removal_leaves_nothing_behind() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t.tar.gz");
    tarball(&t, 2_000, &[]);
    for sig in ["TERM", "HUP", "INT"] {
        let flag = d.path().join(format!("removing-{sig}"));
        let mut c = std::process::Command::new(common::check::bin())
            .arg("--root")
            .arg(&t)
            .arg("check")
            .env("RMP_EVAL_TEST_PAUSE_REMOVAL", &flag)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = c.id();
        let t0 = std::time::Instant::now();
        while !flag.exists() && t0.elapsed().as_secs() < 120 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(flag.exists(), "SIG{sig}: the removal never began");
        assert!(!unpacked_of(pid).is_empty(), "SIG{sig}: nothing to remove");
        let k = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(k.success());
        fs::remove_file(&flag).unwrap();
        c.wait().unwrap();
        assert_eq!(
            unpacked_of(pid),
            Vec::<std::path::PathBuf>::new(),
            "SIG{sig}: left behind"
        );
    }
}
