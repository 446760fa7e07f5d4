//! check's command-line behaviour: bad input, exit codes, the original's --only-config, pipes, colour, and runs
//! without root.

use crate::common;
use ck_util::*;
use common::check as ck_util;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn seed() -> String {
    fixture("seed-i3-13100te").to_str().unwrap().to_string()
}

/// A copy of the seed machine's tree to change (a temp dir named PREFIX…).
fn seed_copy(prefix: &str) -> tempfile::TempDir {
    let tmp = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    let st = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", seed()))
        .arg(tmp.path())
        .status()
        .unwrap();
    assert!(st.success(), "cp -a {}", seed());
    tmp
}

#[test]
fn bad_core_and_nic_are_one_line_errors_with_exit_2() {
    let s = seed();
    for args in [
        &["--root", &s, "check", "--core", "4"][..],
        &["--root", &s, "check", "--core", "-1"],
        &["--root", &s, "check", "--core", "x"],
        &["--root", &s, "check", "--core", "1.5"],
        &["--root", &s, "check", "--nic", "a/b"],
        &["--root", &s, "check", "--nic", "way-too-long-name0"],
        &["--root", &s, "check", "--nic", ""],
    ] {
        let o = run(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("rmp-eval: "), "{err}");
        assert!(o.stdout.is_empty());
    }
    let o = run(&["--root", &s, "check", "--core", "4"]);
    assert_eq!(
        text(&o.stderr).trim(),
        "rmp-eval: --core 4: no such online CPU (online: 0-3)"
    );
}

#[test]
fn a_root_that_is_no_machine_is_exit_2() {
    let o = run(&["--root", "/nonexistent-ck-root", "check"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot tell which CPUs are online"), "{err}");
}

#[test]
fn core_zero_is_checked_but_fails_isolation() {
    let o = run(&["--root", &seed(), "check", "--core", "0"]);
    // fix refuses CPU 0: no line may send the user to a step it will refuse; the by-hand block says why.
    let out = text(&o.stdout);
    assert!(!out.contains("[fix:") && !out.contains("repairs:"), "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("RT core isolated, nohz_full on RT core")
            && flat.contains(": fix does not tune CPU 0"),
        "{out}"
    );
    let (code, doc) = check_json(&fixture("seed-i3-13100te"), &["--core", "0"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        verdict(&doc, "core_isolated"),
        ("fail".into(), "CPU0 selected; choose non-CPU0".into())
    );
}

#[test]
fn missing_nic_is_bad_input_and_no_nic_means_no_nic_section() {
    // A NIC that does not exist is bad input (exit 2, the interfaces there are), as in run, reflect and fix.
    let o = run(&["--root", &seed(), "check", "--nic", "eth9"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "rmp-eval: --nic eth9: no such network interface (interfaces here: enp2s0, lo)\n"
    );
    // Without --nic there is no NIC section at all.
    let (_, doc) = check_json(&fixture("seed-i3-13100te"), &[]);
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["section"] != "nic")
    );
    let o = run(&["--root", &seed(), "check"]);
    assert!(!text(&o.stdout).contains("NIC "), "{}", text(&o.stdout));
}

#[test]
fn exit_0_when_nothing_fails() {
    // A copy of the seed machine with every failing knob repaired.
    let tmp = seed_copy("ck-good");
    let w = |p: &str, v: &str| std::fs::write(tmp.path().join(p), v).unwrap();
    w(
        "proc/cmdline",
        "root=/dev/sda1 ro isolcpus=3 nohz_full=3 rcu_nocbs=3 irqaffinity=0,1 intel_idle.max_cstate=0 skew_tick=1 tsc=reliable\n",
    );
    w("proc/sys/kernel/nmi_watchdog", "0\n");
    w(
        "rmp-eval-snapshot.json",
        r#"{"ethtool":{"enp2s0":{"coalesce":{"rx_usecs":0,"adaptive_rx":false},"eee":{"enabled":false,"active":false}}}}"#,
    );
    w(
        "proc/net/if_inet6",
        "00000000000000000000000000000001 01 80 10 80       lo\n",
    );
    w("proc/sys/vm/stat_interval", "10\n");
    w(
        "sys/kernel/mm/transparent_hugepage/enabled",
        "always madvise [never]\n",
    );
    w("sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
    w(
        "sys/devices/system/cpu/cpu3/cpufreq/scaling_min_freq",
        "4100000\n",
    );
    w(
        "sys/devices/system/cpu/cpu3/cpufreq/scaling_cur_freq",
        "4099000\n",
    );
    w("proc/sys/kernel/osrelease", "6.17.2-rt-amd64\n");
    w(
        "boot/config-6.17.2-rt-amd64",
        "CONFIG_PREEMPT_RT=y\nCONFIG_FUTEX_PRIVATE_HASH=y\nCONFIG_XDP_SOCKETS=y\n",
    );
    let (code, doc) = check_json(tmp.path(), &["--nic", "enp2s0"]);
    let fails: Vec<_> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .collect();
    assert!(fails.is_empty(), "{fails:?}");
    assert_eq!(code, Some(0));
}

#[test]
fn only_config_is_check_with_the_original_options() {
    let s = seed();
    let a = run(&["--root", &s, "-oc", "-sc", "3", "-n", "enp2s0"]);
    let b = run(&["--root", &s, "check", "--core", "3", "--nic", "enp2s0"]);
    assert_eq!(text(&a.stdout), text(&b.stdout));
    assert_eq!(a.status.code(), Some(1));
}

#[test]
fn closed_pipe_does_not_panic() {
    let mut child = Command::new(bin())
        .args(["--root", &seed(), "check", "--nic", "enp2s0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(first.starts_with("Hostname: rmp-ipc"), "{first}");
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
    assert_ne!(o.status.code(), Some(101));
}

#[test]
fn no_colour_when_not_a_terminal() {
    let o = run(&["--root", &seed(), "check", "--nic", "enp2s0"]);
    assert!(!text(&o.stdout).contains('\x1b'));
}

/// Runs the binary as nobody (no capabilities), as `setpriv` allows when the tests run as root.
fn as_nobody(args: &[&str]) -> Option<std::process::Output> {
    if !nix::unistd::Uid::effective().is_root() {
        return None;
    }
    Some(common::as_nobody().args(args).output().expect("setpriv"))
}

#[test]
fn without_root_unreadable_files_are_unknown_not_an_abort() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = seed_copy("ck-nonroot");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        tmp.path().join("proc/swaps"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    std::fs::set_permissions(
        tmp.path().join("proc/interrupts"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let Some(o) = as_nobody(&["--root", tmp.path().to_str().unwrap(), "check", "--json"]) else {
        common::cannot_run("check_as_nobody", "needs root to drop to nobody");
        return;
    };
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4 | 5)),
        "{}",
        text(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        verdict(&doc, "swap"),
        ("unknown".into(), "/proc/swaps: permission denied".into())
    );
    assert_eq!(verdict(&doc, "unrelated_irqs").0, "unknown");
    assert!(
        verdict(&doc, "unrelated_irqs")
            .1
            .contains("permission denied")
    );
    // And on the live machine: a verdict for every check, not an abort.
    let o = as_nobody(&["check", "--json"]).unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4 | 5)),
        "{}",
        text(&o.stderr)
    );
}
