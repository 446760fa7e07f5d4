//! A qualify whose baseline is already measured, driven through its command-line step on the captured Debian 12
//! RT guest (tests/fixtures) with GRUB's grub.cfg and grubenv from the VM image (tests/fixtures/samples): each
//! `qualify --resume` is what rmp-eval-qualify.service runs at a boot. No measurement is made (the plan has no
//! sweep and is not one at a time): what is judged is the boot files, the state and rollback.

use crate::common;
use common::fix::{Root, Tree, diff, ok, text};

use common::fix::{BOOT_A, BOOT_B};
pub(super) const STATE: &str = "/var/lib/rmp-eval/qualify.json";

pub(super) fn samples(name: &str) -> Vec<u8> {
    common::fix::sample_bytes(name)
}

/// The untuned guest with GRUB's generated files, in its first boot, with qualify planned and its baseline
/// measured: a command-line step, then a sysctl step.
pub(super) fn planned() -> Root {
    let r = Root::untuned_grub();
    r.write(
        STATE,
        r#"{"version":1,"started":"2026-12-06T08:00:00Z","core":1,"nic":null,"one_at_a_time":false,
            "seconds":10.0,"steps":[{"step":"cmdline","reboot":true},{"step":"sysctl","reboot":false}],
            "sweep":[],"baseline":"/var/lib/rmp-eval/results/base.json",
            "phase":{"phase":"step","index":0,"stage":{"stage":"applying","journals":null}}}"#,
    );
    r
}

pub(super) fn state(r: &Root) -> serde_json::Value {
    serde_json::from_str(&r.read(STATE)).unwrap()
}

pub(super) fn resume(r: &Root) -> String {
    let o = r.rmp("qualify", &["--resume"]);
    ok(&o);
    text(&o)
}

/// Boots the trial: a new boot id and the command line the trial entry gives.
pub(super) fn boot_trial(r: &Root) -> String {
    common::fix::boot_grub_trial(r)
}

#[test]
fn a_healthy_trial_boot_is_committed_and_rollback_restores_every_byte() {
    let r = planned();
    let start = r.tree();
    let out = resume(&r);
    assert!(out.contains("trial boot armed"), "{out}");
    assert!(out.contains("reboot now (systemctl reboot)"), "{out}");
    assert!(
        r.read("/boot/grub/grubenv")
            .contains("\nnext_entry=rmp-eval-trial\n")
    );
    // The default entry's configuration is not touched before the trial has booted.
    assert!(!r.exists("/etc/default/grub.d/99-rmp-eval.cfg"));
    assert_eq!(state(&r)["phase"]["stage"]["stage"], "trial_armed");
    // Resumed in the same boot (killed before the reboot): the trial is not armed twice.
    let journals = std::fs::read_dir(r.path("/var/lib/rmp-eval/journal"))
        .unwrap()
        .count();
    assert!(resume(&r).contains("reboot now"));
    assert_eq!(
        std::fs::read_dir(r.path("/var/lib/rmp-eval/journal"))
            .unwrap()
            .count(),
        journals
    );

    let line = boot_trial(&r);
    assert!(
        line.contains("isolcpus=managed_irq,domain,1") && line.ends_with("panic=10"),
        "{line}"
    );
    r.write("/sys/devices/system/cpu/isolated", "1\n");
    let out = resume(&r);
    assert!(out.contains("done"), "{out}");
    committed_then_rolled_back(&r, &start);
}

/// Done with the trial committed: the permanent configuration holds the trial's parameters, the trial entry is
/// gone and grubenv is as it was; then the boot the test made is put back and rollback restores every byte.
pub(super) fn committed_then_rolled_back(r: &Root, start: &Tree) {
    let q = state(r);
    assert_eq!(q["phase"]["phase"], "done", "{q}");
    assert_eq!(q["steps"][0]["outcome"]["outcome"], "kept");
    assert!(
        r.read("/var/lib/rmp-eval/cmdline")
            .contains("isolcpus=managed_irq,domain,1")
    );
    assert!(!r.exists("/boot/grub/custom.cfg"));
    assert_eq!(
        std::fs::read(r.path("/boot/grub/grubenv")).unwrap(),
        samples("grubenv-debian12-rt-qemu.bin")
    );
    r.write("/proc/sys/kernel/random/boot_id", BOOT_A);
    std::fs::write(r.path("/proc/cmdline"), &start["proc/cmdline"].0).unwrap();
    std::fs::write(
        r.path("/sys/devices/system/cpu/isolated"),
        &start["sys/devices/system/cpu/isolated"].0,
    )
    .unwrap();
    ok(&r.rmp("rollback", &["--yes"]));
    let mut want = start.clone();
    want.remove(STATE.trim_start_matches('/'));
    // The qualification's result stays, a record like the measurements' results.
    let changed: Vec<String> = diff(&want, &r.tree())
        .into_iter()
        .filter(|p| !p.starts_with("var/lib/rmp-eval/qualification/"))
        .collect();
    assert_eq!(changed, Vec::<String>::new());
}

#[test]
fn a_trial_boot_that_did_not_come_up_is_recorded_and_leaves_the_default_as_it_was() {
    let r = planned();
    resume(&r);
    // The trial kernel panicked (panic=10) and GRUB booted the default entry: a new boot, the old line.
    common::fix::grub_spends_next_entry(&r);
    r.write("/proc/sys/kernel/random/boot_id", BOOT_B);
    let out = resume(&r);
    assert!(out.contains("the trial boot failed"), "{out}");
    // Each phase is said once: the next step's "applying" is not repeated when it records its journal count.
    assert_eq!(
        out.lines()
            .filter(|l| *l == "qualify: step 2: applying")
            .count(),
        1,
        "{out}"
    );
    let q = state(&r);
    assert_eq!(q["steps"][0]["outcome"]["outcome"], "trial_failed");
    assert!(
        q["steps"][0]["outcome"]["why"]
            .as_str()
            .unwrap()
            .contains("isolcpus"),
        "{q}"
    );
    assert!(!r.exists("/boot/grub/custom.cfg"));
    assert!(!r.exists("/var/lib/rmp-eval/cmdline"));
    assert_eq!(
        std::fs::read(r.path("/boot/grub/grubenv")).unwrap(),
        samples("grubenv-debian12-rt-qemu.bin")
    );
    // qualify went on without it: the sysctl step applied.
    assert_eq!(q["steps"][1]["outcome"]["outcome"], "kept");
    assert_eq!(q["phase"]["phase"], "done");
    let out = r.rmp("qualify", &["--status"]);
    assert!(
        text(&out).contains("trial boot failed, left out"),
        "{}",
        text(&out)
    );
}

#[test]
fn rollback_after_grub_booted_the_trial_restores_grubenv_without_force() {
    let r = planned();
    let start = r.tree();
    assert!(resume(&r).contains("trial boot armed"));
    // The trial boot: grub.cfg's header cleared next_entry with save_env (in place, padded to 1024 bytes).
    let env = r.read("/boot/grub/grubenv");
    let mut cleared = env
        .replacen("next_entry=rmp-eval-trial\n", "next_entry=\n", 1)
        .into_bytes();
    cleared.resize(1024, b'#');
    assert_ne!(cleared, env.as_bytes());
    std::fs::write(r.path("/boot/grub/grubenv"), &cleared).unwrap();
    boot_trial(&r);
    // The engineer gives up before qualify judged the trial: an ordinary rollback puts every byte back.
    let o = r.rmp("rollback", &["--yes"]);
    ok(&o);
    assert!(!text(&o).contains("changed since fix"), "{}", text(&o));
    assert_eq!(
        std::fs::read(r.path("/boot/grub/grubenv")).unwrap(),
        samples("grubenv-debian12-rt-qemu.bin")
    );
    assert!(!r.exists("/boot/grub/custom.cfg"));
    let mut want = start.clone();
    want.remove(STATE.trim_start_matches('/'));
    for f in ["proc/cmdline", "proc/sys/kernel/random/boot_id"] {
        want.remove(f);
    }
    let mut now = r.tree();
    for f in ["proc/cmdline", "proc/sys/kernel/random/boot_id"] {
        now.remove(f);
    }
    assert_eq!(diff(&want, &now), Vec::<String>::new());
}

#[test]
fn killed_after_done_before_the_result_was_written_the_resume_writes_it() {
    let r = planned();
    // The state says done, the process died before the result: nothing under /var/lib/rmp-eval/qualification.
    let mut q = state(&r);
    q["phase"] = serde_json::json!({"phase": "done"});
    r.write(STATE, &q.to_string());
    let out = resume(&r);
    assert!(out.contains("Result: "), "{out}");
    let dir = r.path("/var/lib/rmp-eval/qualification");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["20261206T080000Z.html", "20261206T080000Z.json"]);
    // Written once: the next boot's resume has nothing to do.
    assert!(resume(&r).contains("nothing under way"));
}
