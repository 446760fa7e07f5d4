//! A run in a chroot without /proc (a build root, an installer) still records the kernel it ran on: the live
//! /proc/sys/kernel/osrelease cannot be read there, so the kernel is asked through uname(2). A `--root` tree that
//! lacks the file is a captured machine, not this one: check reports its kernel as unknown, never this one's.

use crate::common;
use common::run::*;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Copies `src` to the same path under `root`, its directories made.
fn copy_in(root: &Path, src: &str) {
    let to = root.join(src.trim_start_matches('/'));
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(src, &to).unwrap_or_else(|e| panic!("copying {src}: {e}"));
}

/// A chroot holding the binary and the shared libraries ldd names, and no /proc, /sys or /dev.
fn chroot_with_the_binary() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("cy-chroot-")
        .tempdir()
        .unwrap();
    copy_in(d.path(), bin());
    let ldd = Command::new("ldd").arg(bin()).output().unwrap();
    assert!(ldd.status.success(), "ldd: {}", text(&ldd.stderr));
    // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" and "/lib64/ld-linux-x86-64.so.2 (0x…)".
    for line in text(&ldd.stdout).lines() {
        let path = line.split_whitespace().find(|w| w.starts_with('/'));
        if let Some(p) = path {
            copy_in(d.path(), p);
        }
    }
    d
}

#[test]
fn a_run_in_a_chroot_without_proc_records_the_running_kernel() {
    let _live = common::lock::LIVE.shared();
    let test = "a_run_in_a_chroot_without_proc_records_the_running_kernel";
    if !common::require_root(test) {
        return;
    }
    let jail = chroot_with_the_binary();
    assert!(!jail.path().join("proc").exists());
    // The run's --root inside the chroot: the online CPU list, where the results are kept.
    let tree = jail.path().join("tree/sys/devices/system/cpu");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy("/sys/devices/system/cpu/online", tree.join("online")).unwrap();
    let dir = jail.path().to_path_buf();
    let mut cmd = Command::new(bin());
    cmd.args([
        "run",
        "--root",
        "/tree",
        "--no-config",
        "-i",
        "200",
        "--json",
    ])
    .env_clear();
    // SAFETY: between fork and exec only chroot(2) and chdir(2), with a path made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::chroot(&dir)?;
            nix::unistd::chdir("/")?;
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)));
    let live = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(v["kernel"], live.trim(), "{v}");
    // And the machine's name (uname(2)'s nodename; the jail has no /etc/hostname).
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(v["identity"]["hostname"], name.trim(), "{v}");
    // The saved result says the same.
    let saved = results(&jail.path().join("tree"));
    assert_eq!(saved.len(), 1, "{saved:?}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved[0]).unwrap()).unwrap();
    assert_eq!(s["kernel"], live.trim());
}

#[test]
fn a_root_tree_without_osrelease_keeps_its_kernel_unknown() {
    let root = root_tree();
    let o = Command::new(bin())
        .args(["check", "--root", root.path().to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    let live = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let flat = v.to_string();
    assert!(
        !flat.contains(live.trim()),
        "the live kernel in a tree's check: {v}"
    );
}
