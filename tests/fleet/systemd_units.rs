//! Every unit under systemd/ passes `systemd-analyze verify` (Debian's systemd), in a root holding the system's
//! own units, the units as the package installs them and the built binary as /usr/sbin/rmp-eval (verify checks
//! that ExecStart can run). Warnings count as failures: an unknown key is only a warning to systemd.

use std::path::Path;
use std::process::Command;

const SYSTEM_UNITS: &str = "/lib/systemd/system";

fn units() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".service") || n.ends_with(".timer") || n.ends_with(".slice"))
        .collect();
    v.sort();
    v
}

/// A root with the system's units, ours, and the binary; returns (root, stderr, success) of verify on `names`.
fn verify(extra: Option<(&str, &str)>, names: &[String]) -> (String, bool) {
    assert!(
        Path::new(SYSTEM_UNITS).join("sysinit.target").exists(),
        "no systemd units in {SYSTEM_UNITS}: install Debian's systemd (tests/install-deps.sh)"
    );
    let root = tempfile::tempdir().unwrap();
    let sys = root.path().join("lib/systemd");
    std::fs::create_dir_all(&sys).unwrap();
    let st = Command::new("cp")
        .args(["-a", SYSTEM_UNITS])
        .arg(&sys)
        .status()
        .unwrap();
    assert!(st.success());
    for n in units() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("systemd")
            .join(&n);
        std::fs::copy(src, sys.join("system").join(&n)).unwrap();
    }
    if let Some((name, text)) = extra {
        std::fs::write(sys.join("system").join(name), text).unwrap();
    }
    let sbin = root.path().join("usr/sbin");
    std::fs::create_dir_all(&sbin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_rmp-eval"), sbin.join("rmp-eval")).unwrap();
    // --man=no: the man page is the package's (the package suite checks it); here only the units.
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(format!("--root={}", root.path().display()))
        .args(names)
        .output()
        .expect("systemd-analyze (Debian's systemd)");
    (
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.success(),
    )
}

#[test]
fn every_unit_passes_systemd_analyze_verify_without_a_warning() {
    let names = units();
    assert!(
        names.contains(&"rmp-eval-monitor.timer".to_string()),
        "{names:?}"
    );
    let (err, ok) = verify(None, &names);
    assert!(
        ok && err.trim().is_empty(),
        "systemd-analyze verify {names:?}:\n{err}"
    );
}

#[test]
fn a_unit_with_a_mistake_is_caught() {
    let bad = "[Unit]\nDescription=x\n[Service]\nType=oneshot\nExecStart=/usr/sbin/rmp-eval monitor\nBogus=1\n";
    let (err, ok) = verify(
        Some(("rmp-eval-bad.service", bad)),
        &["rmp-eval-bad.service".to_string()],
    );
    assert!(
        !ok || !err.trim().is_empty(),
        "a unit with an unknown key went through:\n{err}"
    );
    let missing = "[Service]\nExecStart=/usr/sbin/not-there\n";
    let (_, ok) = verify(
        Some(("rmp-eval-bad.service", missing)),
        &["rmp-eval-bad.service".to_string()],
    );
    assert!(!ok, "an ExecStart that cannot run went through");
}
