//! Helpers shared by the check tests: run the built binary, parse its JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rmp-eval"))
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("run rmp-eval")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `rmp-eval --root SRC snapshot OUT`.
pub fn snapshot_of(src: &Path, out: &Path) -> Output {
    run(&[
        "--root",
        src.to_str().unwrap(),
        "snapshot",
        out.to_str().unwrap(),
    ])
}

/// A snapshot of SRC into OUT that must succeed.
pub fn snapshot(src: &Path, out: &Path) {
    let o = snapshot_of(src, out);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

/// `check --json` on a root: (exit code, parsed document).
pub fn check_json(root: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec!["--root", root.to_str().unwrap(), "check", "--json"];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.stderr.is_empty(), "stderr: {}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&o.stdout)));
    (o.status.code(), v)
}

/// `check --json` on a root whose stderr holds one note, and that note says `says` (a tree whose `online` is
/// unreadable: the CPUs come from elsewhere, and check says so).
pub fn check_json_noting(
    root: &Path,
    extra: &[&str],
    says: &str,
) -> (Option<i32>, serde_json::Value) {
    let mut args = vec!["--root", root.to_str().unwrap(), "check", "--json"];
    args.extend_from_slice(extra);
    let o = run(&args);
    let err = text(&o.stderr);
    assert!(
        err.starts_with("note: ") && err.lines().count() == 1 && err.contains(says),
        "stderr: {err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&o.stdout)));
    (o.status.code(), v)
}

/// (status, detail) of check `id`.
pub fn verdict(doc: &serde_json::Value, id: &str) -> (String, String) {
    let c = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"));
    (
        c["status"].as_str().unwrap().to_string(),
        c["detail"].as_str().unwrap().to_string(),
    )
}

pub fn status(doc: &serde_json::Value, id: &str) -> String {
    verdict(doc, id).0
}

/// A copy of fixture `name` at DIR/root, to change as a test needs: the directory (removed when dropped) and the root.
pub fn fixture_copy(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::Builder::new()
        .prefix("ck-copy")
        .tempdir()
        .unwrap();
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(fixture(name))
        .arg(d.path().join("root"))
        .status()
        .unwrap();
    assert!(st.success(), "cp -a {name}");
    let root = d.path().join("root");
    (d, root)
}
