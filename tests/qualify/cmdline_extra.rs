//! qualify --cmdline-extra: the user's own kernel parameters go on the trial boot's line with the tuning's, so a
//! parameter that cannot boot (a root= that names no disk) is caught by the trial and never reaches the default
//! entry; a healthy one is committed with the rest. Bad values are one line and exit 2 with nothing written.

use super::trial_cycle::{STATE, boot_trial, planned, resume, samples, state};
use crate::common::fix::{Root, text};

/// The planned state of trial_cycle.rs, started with `--cmdline-extra` given these parameters.
fn planned_with(extra: &[&str]) -> Root {
    let r = planned();
    let mut q = state(&r);
    q["cmdline_extra"] = serde_json::json!(extra);
    r.write(STATE, &q.to_string());
    r
}

#[test]
fn a_bad_extra_parameter_is_one_line_and_exit_2() {
    let r = Root::untuned();
    for (bad, says) in [
        ("root=$(reboot)", "not a kernel parameter"),
        ("=1", "not a kernel parameter"),
        ("panic=0", "panic= is the trial boot's own"),
    ] {
        let o = r.rmp("qualify", &["--core", "1", "--cmdline-extra", bad, "--yes"]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{bad}: {err}");
        assert!(!r.exists(STATE));
    }
}

#[test]
fn the_plan_names_the_extra_parameters_on_the_command_line_step() {
    let r = Root::untuned();
    // No terminal and no --yes: the plan is shown, then the question is refused.
    let o = r.rmp(
        "qualify",
        &["--core", "1", "--cmdline-extra", "loglevel=3,threadirqs"],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        out.contains("step cmdline (with your loglevel=3 threadirqs): tried in a trial boot first"),
        "{out}"
    );
}

#[test]
fn an_extra_root_that_cannot_boot_fails_its_trial_and_never_reaches_the_default_entry() {
    let r = planned_with(&["root=/dev/nowhere", "rootdelay=1"]);
    let cfg = r.read("/boot/grub/grub.cfg");
    assert!(resume(&r).contains("trial boot armed"));
    let line = boot_trial(&r);
    // The user's root= takes the place of the entry's own: the trial kernel would find no root and panic.
    assert!(
        line.contains("root=/dev/nowhere") && !line.contains("root=UUID"),
        "{line}"
    );
    assert!(
        line.contains("rootdelay=1") && line.contains("isolcpus=managed_irq,domain,1"),
        "{line}"
    );
    // It panicked (panic=10) and GRUB booted the default entry: the old line in a new boot.
    r.write(
        "/proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 root=UUID=1 ro quiet\n",
    );
    let out = resume(&r);
    assert!(out.contains("the trial boot failed"), "{out}");
    let q = state(&r);
    let why = q["steps"][0]["outcome"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("root=/dev/nowhere is not on the running command line"),
        "{q}"
    );
    assert_eq!(r.read("/boot/grub/grub.cfg"), cfg);
    assert_eq!(
        std::fs::read(r.path("/boot/grub/grubenv")).unwrap(),
        samples("grubenv-debian12-rt-qemu.bin")
    );
    assert!(!r.exists("/boot/grub/custom.cfg"));
    assert!(!r.exists("/var/lib/rmp-eval/cmdline"));
    assert_eq!(q["phase"]["phase"], "done");
}

#[test]
fn a_healthy_extra_parameter_is_committed_with_the_tuning() {
    let r = planned_with(&["loglevel=3"]);
    resume(&r);
    let line = boot_trial(&r);
    assert!(line.contains("loglevel=3"), "{line}");
    r.write("/sys/devices/system/cpu/isolated", "1\n");
    assert!(resume(&r).contains("done"));
    let kept = r.read("/var/lib/rmp-eval/cmdline");
    assert!(
        kept.contains("loglevel=3") && kept.contains("isolcpus=managed_irq,domain,1"),
        "{kept}"
    );
}
