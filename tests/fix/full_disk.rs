//! A full /var (a small tmpfs at several fill levels) and a read-only /etc. fix either applies
//! and journals everything (and rollback then restores the tree), or says so in one line, exits 2 and leaves the
//! tree as it was — or names exactly what remains. Needs root (mount).

use crate::common;
use common::fix as fix_support;
use fix_support::{Root, diff, text};

use std::path::{Path, PathBuf};
use std::process::Command;

/// A mount on a directory of the test root, undone on drop even when the test fails.
struct Mount(PathBuf);
impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Mount {
        std::fs::create_dir_all(dir).unwrap();
        let st = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "fx-fullfs",
            ])
            .arg(dir)
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs");
        Mount(dir.to_path_buf())
    }
    fn read_only(dir: &Path) -> Mount {
        let ok = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .status()
                .unwrap()
                .success()
        };
        assert!(ok(&["--bind"]), "mount --bind");
        let m = Mount(dir.to_path_buf());
        let st = Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(st.success(), "remount ro");
        m
    }
}
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let s = nix::sys::statvfs::statvfs(dir).unwrap();
    s.blocks_available() as u64 * s.fragment_size() as u64
}

const STEPS: &str = "cmdline,sysctl,workqueue,irq_affinity";

/// One fix on a root whose /var has `left` bytes free; returns what happened.
fn one(left: u64) -> &'static str {
    let r = Root::untuned();
    let var = r.path("/var");
    let _m = Mount::tmpfs(&var, "512k");
    let free = free_bytes(&var);
    if free > left {
        std::fs::write(var.join("filler"), vec![0u8; (free - left) as usize]).unwrap();
    }
    let start = r.tree();
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", STEPS, "--yes", "--no-measure"],
    );
    match o.status.code() {
        Some(0) => {
            let rb = r.rmp("rollback", &["--yes"]);
            assert_eq!(rb.status.code(), Some(0), "left {left}: {}", text(&rb));
            assert_eq!(diff(&start, &r.tree()), Vec::<String>::new(), "left {left}");
            "applied and rolled back"
        }
        Some(2) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(err.lines().count(), 1, "left {left}: one line: {err}");
            if err.contains("reverting failed for") {
                // Then the remains are named and the journal is kept for rollback.
                assert!(err.contains("rmp-eval rollback"), "{err}");
                "refused, remains named"
            } else {
                assert!(err.contains("nothing"), "left {left}: {err}");
                assert_eq!(
                    diff(&start, &r.tree()),
                    Vec::<String>::new(),
                    "left {left}: {err}"
                );
                "refused, nothing changed"
            }
        }
        _ => panic!("left {left}: {}", text(&o)),
    }
}

#[test]
fn full_var_at_several_fill_levels() {
    if !common::require_root("fix_fullfs") {
        return;
    }
    let mut seen = Vec::new();
    for left in [0, 8192, 24576, 28672, 30720, 32768, 36864, 262144] {
        seen.push((left, one(left)));
    }
    eprintln!("{seen:?}");
    // The fill levels span both outcomes: the test saw a refusal and a success.
    assert!(
        seen.iter().any(|(_, s)| s.starts_with("refused")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|(_, s)| s.starts_with("applied")),
        "{seen:?}"
    );
}

#[test]
fn read_only_etc() {
    if !common::require_root("fix_fullfs") {
        return;
    }
    let r = Root::untuned();
    let start = r.tree();
    let m = Mount::read_only(&r.path("/etc"));
    let o = r.rmp(
        "fix",
        &["--core", "1", "--only", STEPS, "--yes", "--no-measure"],
    );
    drop(m);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/etc/") && err.contains("nothing is left changed"),
        "{err}"
    );
    assert_eq!(diff(&start, &r.tree()), Vec::<String>::new());
}
