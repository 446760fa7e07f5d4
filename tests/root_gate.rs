//! The one gate of tests/common: a strict run (RMP_EVAL_REQUIRE_ROOT=1) without root fails instead of skipping.
//! Shown by running this very test binary again as `nobody`.

use crate::common;

use std::process::Command;

/// What every root test starts with; the other test runs it as nobody.
#[test]
fn gated_probe() {
    if !common::require_root("gated_probe") {
        return;
    }
    assert!(nix::unistd::geteuid().is_root());
}

fn probe_as_nobody(strict: bool) -> std::process::Output {
    let me = std::env::current_exe().unwrap();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(&me)
        .args([
            "--exact",
            "root_gate::gated_probe",
            "--test-threads=1",
            "--nocapture",
        ])
        .env_remove("RMP_EVAL_REQUIRE_ROOT");
    if strict {
        c.env("RMP_EVAL_REQUIRE_ROOT", "1");
    }
    c.output().expect("setpriv (util-linux)")
}

#[test]
fn strict_gate_fails_without_root_and_lenient_one_says_skipped() {
    if !common::require_root("strict_gate_fails_without_root") {
        return;
    }
    let strict = probe_as_nobody(true);
    let out = String::from_utf8_lossy(&strict.stdout).into_owned()
        + &String::from_utf8_lossy(&strict.stderr);
    assert!(
        !strict.status.success(),
        "strict run as nobody passed:\n{out}"
    );
    assert!(out.contains("cannot run here (needs root)"), "{out}");

    let lenient = probe_as_nobody(false);
    let out = String::from_utf8_lossy(&lenient.stdout).into_owned()
        + &String::from_utf8_lossy(&lenient.stderr);
    assert!(
        lenient.status.success(),
        "lenient run as nobody failed:\n{out}"
    );
    assert!(out.contains("skipped (needs root)"), "{out}");
}
