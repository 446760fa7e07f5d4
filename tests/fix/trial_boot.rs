//! `fix --trial-boot` on the captured Debian 12 RT guest with GRUB's generated files (tests/fixtures/samples):
//! the plan shows the trial entry in place of the permanent change; fix writes only the one-time entry; the
//! after-boot unit's command (`after-boot`) judges the boot it runs in — the trial healthy: the command line made
//! permanent; anything else: the trial entry undone and why — and rollback restores every byte at any point.
//! A boot is made by hand: a new boot id, the command line the trial entry gives, the isolated set.

use crate::common;
use common::fix::{BOOT_A, BOOT_B, Root, Trial, diff, ok, sample_bytes, text};

const PENDING: &str = "/var/lib/rmp-eval/trial-boot.json";
const DONE: &str = "/var/lib/rmp-eval/trial-boot-done.json";
const DROPIN: &str = "/etc/default/grub.d/99-rmp-eval.cfg";
/// The captured Debian 12 RT guest with GRUB's generated files.
fn grub() -> Trial {
    Trial::on(Root::untuned_grub())
}

/// `fix --trial-boot` of the command line and sysctl (which take effect now) on a GRUB tree: its output.
fn fix_trial(t: &Trial) -> String {
    t.fix("cmdline,sysctl", &[])
}

fn stage(r: &Root, file: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(&r.read(file)).unwrap();
    v["stage"]["stage"].as_str().unwrap().to_string()
}

fn grubenv_as_found(r: &Root) -> bool {
    std::fs::read(r.path("/boot/grub/grubenv")).unwrap()
        == sample_bytes("grubenv-debian12-rt-qemu.bin")
}

#[test]
fn the_dry_run_shows_the_trial_entry_and_says_it_is_tried_before_it_is_kept() {
    let r = Root::untuned_grub();
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &[
            "--core",
            "1",
            "--only",
            "cmdline",
            "--trial-boot",
            "--dry-run",
        ],
    );
    ok(&o);
    let t = text(&o);
    assert!(t.contains("Trial boot of the kernel command line"), "{t}");
    assert!(t.contains("tried before it is kept"), "{t}");
    assert!(
        t.contains("/boot/grub/custom.cfg") && t.contains("next_entry=rmp-eval-trial"),
        "{t}"
    );
    // The permanent change is named for later, not in the plan's changes: no diff of the drop-in.
    let dropin_diff = "+++ b/etc/default/grub.d/99-rmp-eval.cfg";
    assert!(t.contains(&format!("change ({DROPIN}, ")), "{t}");
    assert!(!t.contains(dropin_diff), "{t}");
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
    // Without --trial-boot the same plan writes the drop-in directly.
    let o = r.rmp("fix", &["--core", "1", "--only", "cmdline", "--dry-run"]);
    assert!(!text(&o).contains("custom.cfg") && text(&o).contains(dropin_diff));
}

#[test]
fn a_healthy_trial_boot_is_made_permanent_and_rollback_restores_every_byte() {
    let t = grub();
    let r = &t.r;
    let out = fix_trial(&t);
    assert!(out.contains("armed: the next boot boots it once"), "{out}");
    assert!(
        r.read("/boot/grub/grubenv")
            .contains("\nnext_entry=rmp-eval-trial\n")
    );
    assert!(
        !r.exists(DROPIN),
        "the default entry's configuration waits for the trial"
    );
    assert!(
        r.exists("/etc/sysctl.d/99-rmp-eval.conf"),
        "the other steps are applied now"
    );
    assert_eq!(stage(r, PENDING), "armed");
    // The after-boot unit in the same boot (no reboot yet): nothing is judged.
    assert!(t.after_boot().contains("armed"));
    assert_eq!(stage(r, PENDING), "armed");
    t.boot_grub();
    let out = t.after_boot();
    assert!(out.contains("kept: the boot was healthy"), "{out}");
    assert!(!r.exists(PENDING));
    assert_eq!(stage(r, DONE), "kept");
    assert!(r.exists(DROPIN));
    assert!(
        r.read("/var/lib/rmp-eval/cmdline")
            .contains("isolcpus=managed_irq,domain,1")
    );
    assert!(!r.exists("/boot/grub/custom.cfg"));
    assert!(grubenv_as_found(r));
    let st = text(&r.rmp("fix", &["--status"]));
    assert!(
        st.contains("kept") && st.contains("this boot's command line"),
        "{st}"
    );
    // A later boot does nothing more.
    assert!(t.after_boot().contains("nothing armed"));
    t.rolls_back();
}

#[test]
fn a_trial_boot_that_did_not_come_up_healthy_is_undone_and_says_why() {
    let t = grub();
    let r = &t.r;
    fix_trial(&t);
    // GRUB booted the trial (clearing next_entry), its kernel panicked (panic=10) and GRUB booted the default
    // entry: a new boot, the old line.
    common::fix::grub_spends_next_entry(r);
    r.write("/proc/sys/kernel/random/boot_id", BOOT_B);
    let out = t.after_boot();
    assert!(
        out.contains("undone, the command line left as it was"),
        "{out}"
    );
    assert!(
        out.contains("isolcpus=managed_irq,domain,1 is not on the running command line"),
        "{out}"
    );
    assert_eq!(stage(r, DONE), "undone");
    assert!(!r.exists("/boot/grub/custom.cfg") && !r.exists(DROPIN));
    assert!(grubenv_as_found(r));
    assert!(text(&r.rmp("fix", &["--status"])).contains("not healthy"));
    t.rolls_back();
}

#[test]
fn a_boot_that_skipped_the_armed_trial_leaves_it_armed_once_more_then_judges() {
    let t = grub();
    let r = &t.r;
    let line = r.read("/proc/cmdline");
    fix_trial(&t);
    // Power lost before the reboot: GRUB read the grubenv from before the arming and booted the default entry;
    // Linux replayed its journal, so the file shows the trial still armed. That boot says nothing of the trial.
    r.write("/proc/sys/kernel/random/boot_id", BOOT_B);
    let out = t.after_boot();
    assert!(out.contains("it stays armed for one more boot"), "{out}");
    assert_eq!(stage(r, PENDING), "armed");
    assert!(r.exists("/boot/grub/custom.cfg"), "{out}");
    let p: serde_json::Value = serde_json::from_str(&r.read(PENDING)).unwrap();
    assert_eq!(p["retries"], 1, "{p}");
    // The same boot again: nothing judged.
    assert!(t.after_boot().contains("armed"));
    assert_eq!(stage(r, PENDING), "armed");
    // Skipped a second time: judged, the trial undone.
    r.write(
        "/proc/sys/kernel/random/boot_id",
        "6a1f0d7e-9a43-4c59-9c7e-000000000003\n",
    );
    r.write("/proc/cmdline", &line);
    let out = t.after_boot();
    assert!(out.contains("not healthy"), "{out}");
    assert_eq!(stage(r, DONE), "undone");
    assert!(!r.exists("/boot/grub/custom.cfg"));
    t.rolls_back();
}

#[test]
fn rollback_at_any_stage_restores_every_byte() {
    // Armed, before the reboot.
    let t = grub();
    fix_trial(&t);
    t.rolls_back();
    assert!(!t.r.exists(PENDING));
    // Armed, in the trial boot after GRUB cleared next_entry (save_env), before it is judged.
    let t = grub();
    let r = &t.r;
    fix_trial(&t);
    let env = r.read("/boot/grub/grubenv");
    let mut cleared = env
        .replacen("next_entry=rmp-eval-trial\n", "next_entry=\n", 1)
        .into_bytes();
    cleared.resize(1024, b'#');
    std::fs::write(r.path("/boot/grub/grubenv"), &cleared).unwrap();
    t.boot_grub();
    t.rolls_back();
    // A second trial while one is pending is refused before anything changes.
    let t = grub();
    let r = &t.r;
    fix_trial(&t);
    let before = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", "cmdline", "--trial-boot", "--yes"],
    );
    assert!(
        text(&o).contains("a trial boot is under way"),
        "{}",
        text(&o)
    );
    assert_eq!(diff(&before, &r.tree()), Vec::<String>::new());
}

#[test]
fn killed_while_arming_the_next_boot_undoes_what_was_written() {
    let t = grub();
    let r = &t.r;
    // Killed between the trial entry (custom.cfg) and grubenv: the record says arming, the run is cut short.
    common::fix::killed_mid_run(
        r,
        "fix",
        &["--core", "1", "--only", "cmdline", "--trial-boot", "--yes"],
    );
    assert_eq!(stage(r, PENDING), "arming");
    assert!(r.exists("/boot/grub/custom.cfg") && grubenv_as_found(r));
    // grubenv never named the trial: the machine boots its default entry.
    r.write("/proc/sys/kernel/random/boot_id", BOOT_B);
    let out = t.after_boot();
    assert!(
        out.contains("fix stopped before the trial entry was complete"),
        "{out}"
    );
    assert_eq!(stage(r, DONE), "undone");
    assert_eq!(common::fix::journal_runs(r), 0);
    t.rolls_back();
}

#[test]
fn killed_after_arming_before_the_record_said_so_the_trial_is_judged_all_the_same() {
    let t = grub();
    let r = &t.r;
    fix_trial(&t);
    // As if fix died between its trial run's last write and the record's: the record still says arming.
    let mut p: serde_json::Value = serde_json::from_str(&r.read(PENDING)).unwrap();
    p["stage"] = serde_json::json!({"stage": "arming", "journals": 1});
    r.write(PENDING, &p.to_string());
    t.boot_grub();
    assert!(t.after_boot().contains("kept"));
    t.rolls_back();
}

#[test]
fn killed_while_committing_the_next_start_finishes_the_commit() {
    let t = grub();
    let r = &t.r;
    fix_trial(&t);
    t.boot_grub();
    // Killed between two changes of the permanent configuration (the drop-in written, update-grub not run).
    common::fix::killed_mid_run(r, "after-boot", &[]);
    assert_eq!(stage(r, PENDING), "committing");
    // Started again (by hand, or the unit at the next boot of the same line): the cut-short run undone, the
    // commit written again, the trial entry undone.
    let out = t.after_boot();
    assert!(out.contains("kept"), "{out}");
    assert_eq!(
        common::fix::journal_runs(r),
        2,
        "the sysctl run and the commit"
    );
    assert!(!r.exists("/boot/grub/custom.cfg") && grubenv_as_found(r));
    // Killed after the done record was written but before the pending one was removed: the same end again.
    let done = r.read(DONE);
    let mut p: serde_json::Value = serde_json::from_str(&done).unwrap();
    let trial = "/var/lib/rmp-eval/journal/gone.json";
    p["stage"] = serde_json::json!({"stage": "committing", "trial": trial, "journals": 1});
    r.write(PENDING, &p.to_string());
    assert!(t.after_boot().contains("kept"));
    assert!(!r.exists(PENDING));
    assert_eq!(common::fix::journal_runs(r), 2);
    t.rolls_back();
}

/// The trial cycle on another loader: armed (only the trial's files), booted by `boot`, kept; then a second
/// tree whose trial boot came back on the old line: undone. Both roll back to every byte.
fn cycle_on(make: fn() -> Root, trial_files: &[&str], boot: fn(&Root), permanent: &str) {
    for healthy in [true, false] {
        let t = Trial::on(make());
        let r = &t.r;
        let before = r.read(permanent);
        let out = t.fix("cmdline", &["--no-measure"]);
        for f in trial_files {
            assert!(r.exists(f), "{f}: {out}");
        }
        assert_eq!(
            r.read(permanent),
            before,
            "the default is untouched while armed"
        );
        if healthy {
            boot(r);
        } else {
            r.write("/proc/sys/kernel/random/boot_id", BOOT_B);
        }
        let out = t.after_boot();
        assert_eq!(
            stage(r, DONE),
            if healthy { "kept" } else { "undone" },
            "{out}"
        );
        assert_eq!(r.read(permanent).contains("nohz_full=1"), healthy);
        for f in trial_files {
            assert!(!r.exists(f), "{f} is undone");
        }
        t.rolls_back();
    }
}

const ENTRY: &str = "title Debian GNU/Linux 12\nversion 6.1.0-50-rt-amd64\noptions root=UUID=0b5e ro quiet\n\
    linux /5f3c/6.1.0-50-rt-amd64/linux\ninitrd /5f3c/6.1.0-50-rt-amd64/initrd.img-6.1.0-50-rt-amd64\n";
const EFI_GUID: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

fn systemd_boot() -> Root {
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    r.write("/boot/efi/loader/loader.conf", "timeout 3\n");
    r.write(
        "/boot/efi/loader/entries/5f3c-6.1.0-50-rt-amd64.conf",
        ENTRY,
    );
    r.write("/etc/kernel/cmdline", "root=UUID=0b5e ro quiet\n");
    // EFI variables: 4 bytes of attributes, then UTF-16LE with its NUL.
    let var = |text: &str| {
        let mut v = vec![7u8, 0, 0, 0];
        v.extend(text.encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
        v
    };
    let efivars = r.path("/sys/firmware/efi/efivars");
    std::fs::create_dir_all(&efivars).unwrap();
    std::fs::write(
        efivars.join(format!("LoaderInfo-{EFI_GUID}")),
        var("systemd-boot 252"),
    )
    .unwrap();
    std::fs::write(
        efivars.join(format!("LoaderEntrySelected-{EFI_GUID}")),
        var("5f3c-6.1.0-50-rt-amd64.conf"),
    )
    .unwrap();
    r.write("/proc/sys/kernel/random/boot_id", BOOT_A);
    r
}

/// A boot of the line in `file` (its `options` line for an entry, its first line for a Pi).
fn boot_line_of(r: &Root, file: &str) {
    let text = r.read(file);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("options "))
        .unwrap_or_else(|| text.lines().next().unwrap());
    r.write("/proc/sys/kernel/random/boot_id", BOOT_B);
    r.write("/proc/cmdline", &format!("{line}\n"));
    r.write("/sys/devices/system/cpu/isolated", "1\n");
}

#[test]
fn systemd_boot_trial_boot_on_a_tree() {
    cycle_on(
        systemd_boot,
        &["/boot/efi/loader/entries/rmp-eval-trial.conf"],
        |r| boot_line_of(r, "/boot/efi/loader/entries/rmp-eval-trial.conf"),
        "/etc/kernel/cmdline",
    );
}

fn raspberry_pi() -> Root {
    let r = Root::untuned();
    r.remove("/etc/default/grub");
    r.remove("/etc/default/grub.d");
    r.write("/proc/device-tree/model", "Raspberry Pi 4 Model B Rev 1.5");
    r.write(
        "/boot/firmware/config.txt",
        &String::from_utf8(sample_bytes("rpi4-config-debian-raspi-firmware.txt")).unwrap(),
    );
    r.write(
        "/boot/firmware/cmdline.txt",
        "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait\n",
    );
    r.write("/proc/sys/kernel/random/boot_id", BOOT_A);
    r
}

/// Judged on trees only: there is no Pi firmware here to boot tryboot.txt.
#[test]
fn raspberry_pi_trial_boot_on_a_tree() {
    cycle_on(
        raspberry_pi,
        &[
            "/boot/firmware/tryboot.txt",
            "/boot/firmware/cmdline-rmp-eval-trial.txt",
        ],
        |r| boot_line_of(r, "/boot/firmware/cmdline-rmp-eval-trial.txt"),
        "/boot/firmware/cmdline.txt",
    );
}
