//! A snapshot's GRUB files are read, never run: a tree (directory or tarball) whose /etc/default/grub runs a
//! command, or whose drop-in starts a `setsid` job, leaves no trace on the examining machine after `check` and
//! `fix --dry-run`, and what GRUB would do is said to be unknown with the file and line.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::check::{run, text};
use common::fix::Root;

/// A marker path no other test uses.
fn marker(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir()
        .join(format!("pwned-{what}-{}-{nanos}", std::process::id()))
        .to_string_lossy()
        .into_owned()
}

/// Whether a process whose command line holds `needle` is alive.
fn process_with(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
    })
}

fn tarball(root: &Path, out: &Path) {
    let st = Command::new("tar")
        .arg("czf")
        .arg(out)
        .arg("-C")
        .arg(root)
        .arg(".")
        .status()
        .unwrap();
    assert!(st.success());
}

/// `check` and `fix --dry-run` on `root`: nothing of the file ran, the reason is said.
fn nothing_runs(root: &Path, markers: &[&str], reason: &str) {
    let r = root.to_str().unwrap();
    let check = run(&["--root", r, "check", "--core", "1", "--json"]);
    let fix = run(&["--root", r, "fix", "--core", "1", "--dry-run"]);
    // A job the file would have started in the background gets a moment to show itself.
    std::thread::sleep(std::time::Duration::from_millis(300));
    for m in markers {
        assert!(!Path::new(m).exists(), "{m} was created from {r}");
        assert!(!process_with(m), "a process of {r}'s GRUB file runs");
    }
    let doc: serde_json::Value = serde_json::from_slice(&check.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&check.stderr)));
    // The checks that the command-line step would fix say that it cannot tell, and why.
    let isolated = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "core_isolated")
        .unwrap();
    let remedy = isolated.to_string();
    assert!(
        remedy.contains("cannot") && remedy.contains(reason),
        "{remedy}"
    );
    // The plan's prose is wrapped at 80 cells: its words, whatever the line breaks.
    let said = text(&fix.stdout);
    let words = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(&format!("refused: GRUB: {reason}")),
        "{said}"
    );
}

#[test]
fn a_trees_grub_file_never_runs_from_a_directory_or_a_tarball() {
    let touched = marker("touch");
    let late = marker("setsid");
    for (file, text, reason) in [
        (
            "/etc/default/grub",
            format!("GRUB_CMDLINE_LINUX=\"quiet\"\ntouch {touched}-$(id -u)\n"),
            "/etc/default/grub line 2: `touch` is a command, not an assignment",
        ),
        (
            "/etc/default/grub.d/50-evil.cfg",
            format!(
                "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT x\"\nsetsid sh -c 'touch {late}; sleep 600' >/dev/null 2>&1 &\n"
            ),
            "/etc/default/grub.d/50-evil.cfg line 2: `setsid` is a command, not an assignment",
        ),
    ] {
        let r = Root::untuned();
        r.write(file, &text);
        let uid_marker = format!("{touched}-{}", pwned_uid());
        let markers = [touched.as_str(), uid_marker.as_str(), late.as_str()];
        nothing_runs(r.dir.path(), &markers, reason);
        let parent = tempfile::tempdir().unwrap();
        let tgz = parent.path().join("snapshot.tar.gz");
        tarball(r.dir.path(), &tgz);
        nothing_runs(&tgz, &markers, reason);
    }
    for m in [touched.clone(), format!("{touched}-{}", pwned_uid()), late] {
        let _ = std::fs::remove_file(m);
    }
}

/// The uid `id -u` would print for any user the file might have run as: nobody under root, else ours.
fn pwned_uid() -> String {
    let out = Command::new("id").arg("-u").output().unwrap();
    let me = text(&out.stdout).trim().to_string();
    if me == "0" { "65534".into() } else { me }
}
