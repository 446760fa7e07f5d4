//! On a small ext4 image this test makes and loop-mounts itself (never the host's file systems). Needs root:
//! skipped without it, failed under RMP_EVAL_REQUIRE_ROOT=1 (the gate of tests/common, which a unit test cannot
//! reach).

use super::*;
use std::process::Command;

/// The image, mounted in a directory of its own; thawed (if a failed assertion left it frozen) and unmounted
/// on drop.
struct Loop {
    dir: tempfile::TempDir,
}

impl Loop {
    fn image(&self) -> std::path::PathBuf {
        self.dir.path().join("boot.img")
    }
    fn mnt(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }
    /// What GRUB would read of `file`: the image's blocks, its journal not replayed (debugfs -c).
    fn unreplayed(&self, file: &str) -> String {
        let o = Command::new("debugfs")
            .args(["-c", "-R", &format!("cat /{file}")])
            .arg(self.image())
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Ok(fd) = super::super::fs::open(&self.mnt(), libc::O_RDONLY | libc::O_DIRECTORY) {
            // SAFETY: FITHAW on our own loop mount; no argument read.
            unsafe { libc::ioctl(fd.as_raw_fd(), FITHAW, 0) };
        }
        let _ = Command::new("umount").arg(self.mnt()).status();
    }
}

/// A fresh 16 MiB ext4 image, loop-mounted; None without root (unless required).
fn mounted() -> Option<Loop> {
    if !super::super::process::is_root() {
        assert!(
            std::env::var("RMP_EVAL_REQUIRE_ROOT").as_deref() != Ok("1"),
            "needs root (RMP_EVAL_REQUIRE_ROOT=1)"
        );
        return None;
    }
    let l = Loop {
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir(l.mnt()).unwrap();
    let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
    ok(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
        .arg(l.image())
        .arg("16M"));
    ok(Command::new("mount")
        .args(["-o", "loop"])
        .arg(l.image())
        .arg(l.mnt()));
    Some(l)
}

fn is_frozen(dir: &Path) -> bool {
    let fd = super::super::fs::open(dir, libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
    // SAFETY: FITHAW on our own loop mount: EINVAL when it was not frozen. A frozen one is thawed by it.
    unsafe { libc::ioctl(fd.as_raw_fd(), FITHAW, 0) == 0 }
}

#[test]
fn after_the_cycle_what_was_written_is_in_place_without_the_journal_and_the_fs_is_thawed() {
    let Some(l) = mounted() else { return };
    let cfg = l.mnt().join("grub.cfg");
    std::fs::write(&cfg, "menuentry committed\n").unwrap();
    std::fs::File::open(&cfg).unwrap().sync_all().unwrap();
    let k = crate::host::Host::live().kernel().unwrap();
    assert_eq!(sync_freeze_thaw(k, &l.mnt()).unwrap(), Cycle::Done);
    assert_eq!(l.unreplayed("grub.cfg"), "menuentry committed\n");
    assert!(!is_frozen(&l.mnt()));
    // A write after it completes.
    std::fs::write(l.mnt().join("after"), "x").unwrap();
}

#[test]
fn the_guardian_thaws_when_its_parent_is_gone() {
    let Some(l) = mounted() else { return };
    let fd = super::super::fs::open(&l.mnt(), libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
    let (rd, wr) = pipe().unwrap();
    let child = fork_guardian(&fd, rd, &wr).unwrap();
    // SAFETY: FIFREEZE on our own loop mount.
    assert_eq!(unsafe { libc::ioctl(fd.as_raw_fd(), FIFREEZE, 0) }, 0);
    // The parent's end closed without the all-clear, as when the process is killed.
    drop(wr);
    let mut status = 0;
    // SAFETY: waitpid for the child forked above.
    unsafe { libc::waitpid(child, &mut status, 0) };
    assert!(!is_frozen(&l.mnt()), "the guardian did not thaw");
}
