use super::*;
use crate::fix::journal;
use crate::fix::kind::How;
use crate::fix::{Plan, Step, StepId};

/// grub.cfg and grubenv as update-grub wrote them in the PREEMPT_RT Debian 12 guest of tests/vm (image
/// base-73f83d25b77ccac1, /boot/grub after its first boot).
const GRUB_CFG_VM: &str =
    include_str!("../../../../../tests/fixtures/samples/grub-cfg-debian12-rt-qemu.txt");
const GRUBENV_VM: &[u8] =
    include_bytes!("../../../../../tests/fixtures/samples/grubenv-debian12-rt-qemu.bin");
const RUNNING: &str = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 root=UUID=d4f18350-3f96-4d0b-86ee-f1cf61643631 ro console=ttyS0,115200 quiet\n";
const EXT4: &str = "/dev/vda1 / ext4 rw,relatime 0 0\nproc /proc proc rw 0 0\n";

fn tree(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Host) {
    let d = tempfile::tempdir().unwrap();
    for (p, b) in files {
        let p = d.path().join(p.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b).unwrap();
    }
    let h = Host::with_root(d.path());
    (d, h)
}

fn vm() -> (tempfile::TempDir, Host) {
    tree(&[
        (GRUB_CFG, GRUB_CFG_VM.as_bytes()),
        (GRUBENV, GRUBENV_VM),
        (PROC_CMDLINE, RUNNING.as_bytes()),
        ("/proc/mounts", EXT4.as_bytes()),
        ("/etc/default/grub", b"GRUB_DEFAULT=0\n"),
    ])
}

fn params() -> Vec<String> {
    ["isolcpus=managed_irq,domain,1", "nohz_full=1"]
        .map(String::from)
        .to_vec()
}

fn file(c: &Change) -> (&str, &[u8]) {
    match c {
        Change::File(f) => (f.path.as_str(), f.after.as_deref().unwrap()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_trial_entry_copies_the_booted_entry_with_the_new_line_and_next_entry_names_it() {
    let (_d, h) = vm();
    let t = plan(&h, &params()).unwrap();
    let want_line = "root=UUID=d4f18350-3f96-4d0b-86ee-f1cf61643631 ro console=ttyS0,115200 quiet \
                     isolcpus=managed_irq,domain,1 nohz_full=1 panic=10";
    assert_eq!(t.cmdline.join(" "), want_line);
    assert_eq!(t.changes.len(), 2);
    let (path, custom) = file(&t.changes[0]);
    assert_eq!(path, CUSTOM_CFG);
    let custom = String::from_utf8(custom.to_vec()).unwrap();
    assert!(
        custom.contains("menuentry 'rmp-eval trial boot' --id 'rmp-eval-trial' {\n"),
        "{custom}"
    );
    assert!(
        custom.contains(&format!(
            "\tlinux\t/boot/vmlinuz-6.1.0-50-rt-amd64 {want_line}\n"
        )),
        "{custom}"
    );
    // The rest of the booted entry as it is: the disk it searches, the initrd.
    for l in [
        "\tsearch --no-floppy --fs-uuid --set=root d4f18350-3f96-4d0b-86ee-f1cf61643631\n",
        "\tinitrd\t/boot/initrd.img-6.1.0-50-rt-amd64\n",
    ] {
        assert!(custom.contains(l), "{l} in {custom}");
    }
    assert_eq!(custom.matches('{').count(), custom.matches('}').count());
    let (path, env) = file(&t.changes[1]);
    assert_eq!(path, GRUBENV);
    assert_eq!(env.len(), 1024);
    let env = String::from_utf8_lossy(env);
    assert!(
        env.starts_with("# GRUB Environment Block\n# WARNING"),
        "{env}"
    );
    assert!(env.contains("\nnext_entry=rmp-eval-trial\n#"), "{env}");
    assert_eq!(t.reboot, ["systemctl", "reboot"]);
    // Neither grub.cfg nor /etc/default/grub is changed: the default entry stays what it was.
    assert!(
        t.changes
            .iter()
            .all(|c| !matches!(c.target().as_str(), GRUB_CFG | "/etc/default/grub"))
    );
}

#[test]
fn arming_the_trial_is_journaled_and_undoing_it_restores_every_byte() {
    let (d, h) = vm();
    let t = plan(&h, &params()).unwrap();
    let step = Step {
        id: StepId::Cmdline,
        title: "trial boot".into(),
        why: "try the command line once".into(),
        changes: t.changes,
        notes: vec![],
    };
    let report = crate::fix::apply::apply(&h, &Plan { steps: vec![step] }, 1, None).unwrap();
    let read = |p: &str| std::fs::read(d.path().join(p.trim_start_matches('/'))).ok();
    assert!(read(CUSTOM_CFG).is_some());
    assert_ne!(read(GRUBENV).as_deref(), Some(GRUBENV_VM));
    // What GRUB does when it boots the trial: `set next_entry=; save_env next_entry` rewrites the block. The
    // trial's run is undone with force: grubenv's only other writer is GRUB clearing what the trial set.
    let env = String::from_utf8(read(GRUBENV).unwrap()).unwrap();
    let cleared = env.replace("next_entry=rmp-eval-trial\n", "next_entry=\n#############");
    std::fs::write(d.path().join("boot/grub/grubenv"), &cleared).unwrap();
    let runs = journal::load_all(&h).unwrap();
    let (path, run) = runs.iter().find(|(p, _)| *p == report.journal).unwrap();
    let how = How {
        dry_run: false,
        force: true,
    };
    let undone = crate::fix::undo::undo(&h, run, how);
    assert!(
        undone.left.is_empty() && undone.problems.is_empty(),
        "{path}"
    );
    assert_eq!(read(CUSTOM_CFG), None);
    assert_eq!(read(GRUBENV).as_deref(), Some(GRUBENV_VM));
    assert_eq!(read(GRUB_CFG).as_deref(), Some(GRUB_CFG_VM.as_bytes()));
}

#[test]
fn next_entry_replaces_an_earlier_one_and_a_block_that_is_not_grubs_is_refused() {
    let once = with_next_entry(Some(GRUBENV_VM)).unwrap();
    let twice = with_next_entry(Some(&once)).unwrap();
    assert_eq!(once, twice);
    assert_eq!(
        String::from_utf8_lossy(&twice)
            .matches("next_entry=")
            .count(),
        1
    );
    // No grubenv yet: a new block.
    let new = with_next_entry(None).unwrap();
    assert!(new.starts_with(b"# GRUB Environment Block\nnext_entry=rmp-eval-trial\n#"));
    assert_eq!(new.len(), 1024);
    assert!(with_next_entry(Some(b"saved_entry=0\n")).is_err());
    assert!(with_next_entry(Some(&GRUBENV_VM[..1000])).is_err());
}

#[test]
fn a_trial_is_refused_where_grub_could_not_clear_it_or_would_not_boot_it() {
    let refused = |files: &[(&str, &[u8])]| {
        let (_d, h) = vm();
        for (p, b) in files {
            std::fs::write(h.path(p), b).unwrap();
        }
        plan(&h, &params()).unwrap_err().0
    };
    let e = refused(&[(
        "/proc/mounts",
        b"/dev/sda2 / ext4 rw 0 0\n/dev/sda1 /boot btrfs rw 0 0\n",
    )]);
    assert!(e.contains("/dev/sda1 (btrfs)"), "{e}");
    let e = refused(&[("/proc/mounts", b"/dev/mapper/vg-root / ext4 rw 0 0\n")]);
    assert!(e.contains("cannot clear next_entry"), "{e}");
    // /boot on its own ext4 next to an LVM root: fine.
    let (_d, h) = vm();
    std::fs::write(
        h.path("/proc/mounts"),
        "/dev/mapper/vg-root / ext4 rw 0 0\n/dev/sda1 /boot ext4 rw 0 0\n",
    )
    .unwrap();
    assert!(plan(&h, &params()).is_ok());
    let no_once = GRUB_CFG_VM.replace("save_env next_entry", "true");
    let e = refused(&[(GRUB_CFG, no_once.as_bytes())]);
    assert!(e.contains("does not boot next_entry once"), "{e}");
    let e = refused(&[(PROC_CMDLINE, b"BOOT_IMAGE=/boot/vmlinuz-9 ro\n")]);
    assert!(e.contains("no entry that loads /boot/vmlinuz-9"), "{e}");
    // A trial entry already there (not judged yet) is not written twice.
    let (_d, h) = vm();
    let t = plan(&h, &params()).unwrap();
    std::fs::write(h.path(CUSTOM_CFG), file(&t.changes[0]).1).unwrap();
    assert!(plan(&h, &params()).unwrap_err().0.contains("already holds"));
    assert!(plan(&h, &["init=$(x)".to_string()]).is_err());
}

#[test]
fn the_entry_is_found_inside_a_submenu_too() {
    let image = "/boot/vmlinuz-6.1.0-50-rt-amd64";
    let first = entry_of(GRUB_CFG_VM, image).unwrap();
    assert!(first[0].starts_with("menuentry 'Debian GNU/Linux' "));
    assert_eq!(first.last(), Some(&"}"));
    // Without the top entry, the submenu's.
    let cut = GRUB_CFG_VM.replacen("menuentry 'Debian GNU/Linux' ", "menuentry_x ", 1);
    let inner = entry_of(&cut, image).unwrap();
    assert!(
        inner[0].contains("with Linux 6.1.0-50-rt-amd64"),
        "{inner:?}"
    );
    assert_eq!(inner.last().map(|l| l.trim()), Some("}"));
    assert_eq!(entry_of(GRUB_CFG_VM, "/boot/vmlinuz-x"), None);
}
