//! Shared by the run tests (tests/run/): a root tree holding only the online CPU list (so that results/ land in a
//! temp dir, never in the real /var/lib), the binary, and the root check (SCHED_FIFO and mlockall need it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rmp-eval")
}

/// A fresh --root tree (prefix cy-) with the machine's online CPU list; removed when dropped.
pub fn root_tree() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("cy-run-")
        .tempdir()
        .unwrap();
    let cpu = d.path().join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::copy("/sys/devices/system/cpu/online", cpu.join("online")).unwrap();
    d
}

pub fn results(root: &Path) -> Vec<PathBuf> {
    let dir = root.join("var/lib/rmp-eval/results");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

pub fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// `rmp-eval run --root ROOT --no-config ARGS…`, to run or spawn: a run on a root tree (its results land in the
/// tree, not the machine's), without a config file.
pub fn run_on(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.arg("run")
        .arg("--root")
        .arg(root)
        .arg("--no-config")
        .args(args);
    c
}

/// Asserts a run measured: exit 0 (pass), 1 (fail) or 3 (inconclusive, as a short clean run is).
pub fn assert_measured(o: &Output) {
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 3)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The venv with HdrHistogram's reference Python library, `hdrh` (tests/install-deps.sh makes it;
/// RMP_EVAL_HDRH_VENV overrides); a missing one fails in a strict run.
pub fn hdrh_python() -> Option<PathBuf> {
    let venv = std::env::var_os("RMP_EVAL_HDRH_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/rmp-eval-tests/hdrh-venv"));
    let py = venv.join("bin/python");
    if py.exists() {
        Some(py)
    } else {
        super::cannot_run(
            "hdrh",
            &format!("{} missing: run tests/install-deps.sh", py.display()),
        );
        None
    }
}

/// The venv with scipy (tests/install-deps.sh makes it; RMP_EVAL_SCIPY_VENV overrides); a missing one fails in a
/// strict run.
pub fn scipy_python() -> Option<PathBuf> {
    let venv = std::env::var_os("RMP_EVAL_SCIPY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/rmp-eval-tests/scipy-venv"));
    let py = venv.join("bin/python");
    if py.exists() {
        Some(py)
    } else {
        super::cannot_run(
            "scipy",
            &format!("{} missing: run tests/install-deps.sh", py.display()),
        );
        None
    }
}

/// Waits until the run `child` (started with `RMP_EVAL_CHECKPOINT_S`) has saved a checkpoint under `root`: it is
/// measuring and its signal handlers are in place, which a fixed sleep cannot promise on a loaded machine (a
/// signal that came first would kill it). Fails if the run ends first, or after 60 s.
pub fn wait_for_checkpoint(root: &Path, child: &mut std::process::Child) {
    let t = std::time::Instant::now();
    loop {
        let saved = results(root).into_iter().any(|f| {
            std::fs::read(&f)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v["checkpoint"] == true)
        });
        if saved {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before its first checkpoint");
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(60),
            "no checkpoint within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
