//! What must leave the machine as it was: dry-run, refusal without a terminal, --core 0, a read-only target
//! (failure midway reverts), a SIGKILL between two changes (rollback restores byte for byte). And apply-saved.

use crate::common;
use common::fix as fix_support;
use fix_support::{Root, diff, text};

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ALL_SAFE: &str = "cmdline,sysctl,workqueue,irq_affinity";

#[test]
fn dry_run_refusal_and_core_zero_change_nothing() {
    let r = Root::untuned();
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", ALL_SAFE, "--dry-run", "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps[0]["id"], "cmdline");
    let kinds: Vec<&str> = steps
        .iter()
        .flat_map(|s| s["changes"].as_array().unwrap())
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"file") && kinds.contains(&"value") && kinds.contains(&"command"),
        "{kinds:?}"
    );
    let c = &steps[0]["changes"][0];
    for k in ["kind", "target", "before", "after", "reboot_required"] {
        assert!(c.get(k).is_some(), "change without {k}: {c}");
    }
    assert_eq!(c["reboot_required"], true);
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());

    // No terminal, no --yes: refused, naming --yes.
    let o = r.rmp("fix", &["--core", "1", "--only", ALL_SAFE, "--no-measure"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--yes"),
        "{}",
        text(&o)
    );
    let o = r.rmp("fix", &["--core", "0", "--yes", "--no-measure"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--core 0"),
        "{}",
        text(&o)
    );
    let o = r.rmp("fix", &["--core", "1", "--only", "bogus", "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = r.rmp("fix", &["--core", "1", "--nic", "a/b", "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = r.rmp("fix", &["--core", "1", "--nic", "fxnosuch0", "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no such network interface"),
        "{}",
        text(&o)
    );
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
    // Rollback without a terminal is refused as well, and with nothing to undo says so.
    let o = r.rmp("rollback", &[]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Nothing to undo"),
        "{}",
        text(&o)
    );
}

/// A directory made read-only for the duration of the test: a read-only bind mount as root (root ignores
/// permission bits), chmod otherwise. Undone on drop, even when the test fails.
struct ReadOnly(PathBuf, bool);
impl ReadOnly {
    fn new(dir: PathBuf) -> ReadOnly {
        let root = nix::unistd::geteuid().is_root();
        if root {
            let m = |args: &[&str]| {
                Command::new("mount")
                    .args(args)
                    .arg(&dir)
                    .arg(&dir)
                    .status()
                    .unwrap()
                    .success()
            };
            assert!(m(&["--bind"]), "mount --bind");
            let ro = Command::new("mount")
                .args(["-o", "remount,bind,ro"])
                .arg(&dir)
                .status()
                .unwrap();
            assert!(ro.success(), "remount ro");
        } else {
            use std::os::unix::fs::PermissionsExt;
            let f = dir.join("cpumask");
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        ReadOnly(dir, root)
    }
}
impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.1 {
            let _ = Command::new("umount").arg(&self.0).status();
        } else {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(
                self.0.join("cpumask"),
                std::fs::Permissions::from_mode(0o644),
            );
        }
    }
}

#[test]
fn read_only_target_reverts_what_was_applied() {
    let r = Root::untuned();
    let start = r.tree();
    let guard = ReadOnly::new(r.path("/sys/devices/virtual/workqueue"));
    // cmdline and sysctl come before workqueue: they are applied, then the workqueue write fails.
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", ALL_SAFE, "--yes", "--no-measure"],
    );
    drop(guard);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/sys/devices/virtual/workqueue/cpumask") && err.contains("reverted"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one-line error: {err}");
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
    let o = r.rmp("rollback", &["--yes"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Nothing to undo"),
        "{}",
        text(&o)
    );
}

#[test]
fn sigkill_between_two_changes_is_rolled_back() {
    let r = Root::untuned();
    let start = r.tree();
    let scratch = tempfile::Builder::new()
        .prefix("fx-pause-")
        .tempdir()
        .unwrap();
    // The test seam of src/fix/apply.rs (feature test-seams, on in the tests' build): fix writes this file between
    // its first and second change and waits for it to go.
    let flag = scratch.path().join("paused");
    let mut child = Command::new(fix_support::BIN)
        .args(["fix", "--root"])
        .arg(r.dir.path())
        .args(["--core", "1", "--only", ALL_SAFE, "--yes", "--no-measure"])
        .env("RMP_EVAL_TEST_PAUSE_FILE", &flag)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !flag.exists() {
        assert!(t0.elapsed() < Duration::from_secs(60), "fix never paused");
        assert!(
            child.try_wait().unwrap().is_none(),
            "fix ended before pausing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_ne!(
        diff(&start, &r.tree()),
        Vec::<String>::new(),
        "the first change was applied"
    );
    let o = r.rmp("rollback", &["--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("interrupted"),
        "{}",
        text(&o)
    );
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

#[test]
fn apply_saved_reapplies_after_a_reboot() {
    let r = Root::untuned();
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "irq_affinity,workqueue",
            "--yes",
            "--no-measure",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A reboot brings the kernel defaults back.
    r.write("/proc/irq/27/smp_affinity_list", "1\n");
    r.write("/sys/devices/virtual/workqueue/cpumask", "3\n");
    // An IRQ of enp0s2's (22, listed in its device's msi_irqs), as a driver that sets its affinity at probe
    // (virtio-net) leaves it.
    r.write("/sys/class/net/enp0s2/device/msi_irqs/22", "msix\n");
    r.write("/proc/irq/22/smp_affinity_list", "0-1\n");
    // Not the saved NIC (fix saved none): its own IRQ is kept off the RT core, nothing else is touched.
    let o = r.rmp("apply-saved", &["--nic", "enp0s2"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("not the saved NIC"),
        "{}",
        text(&o)
    );
    assert_eq!(r.read("/proc/irq/22/smp_affinity_list"), "0\n");
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "1\n");
    assert_eq!(r.read("/sys/devices/virtual/workqueue/cpumask"), "3\n");
    std::fs::remove_dir_all(r.path("/sys/class/net/enp0s2/device/msi_irqs")).unwrap();
    r.write("/proc/irq/22/smp_affinity_list", "0\n");
    let o = r.rmp("apply-saved", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r.read("/proc/irq/27/smp_affinity_list"), "0\n");
    assert_eq!(r.read("/sys/devices/virtual/workqueue/cpumask"), "1\n");
    assert_eq!(r.rmp("rollback", &["--yes"]).status.code(), Some(0));
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
    let o = r.rmp("apply-saved", &[]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Nothing saved"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_second_fix_is_refused_while_one_runs() {
    let r = Root::untuned();
    let start = r.tree();
    // fix and rollback lock the tree they work on (its root directory).
    let dir = std::fs::File::open(r.dir.path()).unwrap();
    let held = nix::fcntl::Flock::lock(dir, nix::fcntl::FlockArg::LockExclusiveNonblock).unwrap();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", ALL_SAFE, "--yes", "--no-measure"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("another rmp-eval fix or rollback is running")
    );
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
    drop(held);
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", ALL_SAFE, "--yes", "--no-measure"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r.rmp("rollback", &["--yes"]).status.code(), Some(0));
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}

/// The boot unit, the NIC unit and the udev rule that starts it call commands the CLI accepts (a rename of
/// apply-saved, --nic or --follow, or of the unit, breaks here).
#[test]
fn units_and_udev_rule_call_what_the_cli_accepts() {
    use clap::Parser;
    let unit = include_str!("../../systemd/rmp-eval.service");
    let nic_unit = include_str!("../../systemd/rmp-eval-nic@.service");
    let rule = include_str!("../../udev/99-rmp-eval.rules");
    let exec = |u: &'static str| {
        u.lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .expect("ExecStart")
    };
    let wants = rule
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.split("ENV{SYSTEMD_WANTS}+=\"").nth(1)?.split('"').next())
        .expect("SYSTEMD_WANTS");
    assert_eq!(wants, "rmp-eval-nic@$name.service");
    // $name is the kernel's name (eth0) until 80-net-setup-link.rules renames the device: the rule must come later.
    let installed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/debian/rules")).unwrap();
    let file = installed
        .split_whitespace()
        .find_map(|w| w.strip_prefix("$(PKG)/lib/udev/rules.d/"))
        .expect("debian/rules installs a udev rule");
    assert!(
        file > "80-net-setup-link.rules",
        "{file} runs before the rename"
    );
    // The rename's "move" event replaces the add's properties (12-igb-nic: no watcher without it).
    assert!(rule.contains("ACTION==\"add|move\""), "{rule}");
    for u in [unit, nic_unit] {
        assert!(u.contains("ConditionPathExists=/var/lib/rmp-eval/runtime.json"));
    }
    let nic_cmd = exec(nic_unit).replace("%i", "enp2s0");
    // A name the kernel allows that reads as an option when passed on its own.
    let dash_cmd = exec(nic_unit).replace("%i", "-x");
    for cmd in [exec(unit), &nic_cmd, &dash_cmd] {
        let argv: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(argv[0], "/usr/sbin/rmp-eval", "{cmd}");
        let cli =
            rmp_eval::cli::Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert!(
            matches!(cli.command, Some(rmp_eval::cli::Command::ApplySaved(_))),
            "{cmd}"
        );
    }
    assert!(nic_cmd.ends_with("--nic=enp2s0 --follow"), "{nic_cmd}");
    let argv: Vec<&str> = dash_cmd.split_whitespace().collect();
    let Some(rmp_eval::cli::Command::ApplySaved(a)) =
        rmp_eval::cli::Cli::try_parse_from(&argv).unwrap().command
    else {
        panic!("{dash_cmd}");
    };
    assert!(format!("{a:?}").contains(r#"nic: Some("-x")"#), "{a:?}");
}
