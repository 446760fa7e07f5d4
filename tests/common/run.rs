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

/// Each thread's (name, minor faults, major faults).
pub type Faults = Vec<(String, u64, u64)>;

/// The minor and major faults (fields 10 and 12 of /proc/PID/task/TID/stat) of each thread of `pid` whose name
/// starts with `prefix`, by name.
pub fn thread_faults(pid: u32, prefix: &str) -> Faults {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find(" ("), stat.rfind(") ")) else {
            continue;
        };
        let name = &stat[open + 2..close];
        let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        if name.starts_with(prefix) {
            out.push((
                name.to_string(),
                f[7].parse().unwrap(),
                f[9].parse().unwrap(),
            ));
        }
    }
    out.sort();
    out
}

/// The RT threads' faults (named rmp-eval-…) of a run `cmd` spawns (of about 4 s), and of each of `also`'s
/// processes (every thread named rmp-eval…), read after the first measured cycles (300 ms after the RT threads
/// appear) and again at 3 s, with a statistics reset (SIGUSR1, as the live view's `r`) between: (before, after).
pub fn faults_across_a_run(mut cmd: Command, rt_threads: usize, also: &[u32]) -> (Faults, Faults) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let read = |pid: u32| {
        let mut v = thread_faults(pid, "rmp-eval-");
        for &p in also {
            v.extend(thread_faults(p, "rmp-eval"));
        }
        v
    };
    let started = std::time::Instant::now();
    while thread_faults(child.id(), "rmp-eval-").len() < rt_threads
        && started.elapsed().as_secs() < 3
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let before = read(child.id());
    std::thread::sleep(std::time::Duration::from_millis(1500).saturating_sub(started.elapsed()));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGUSR1,
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(3000).saturating_sub(started.elapsed()));
    let after = read(child.id());
    let status = child.wait().unwrap();
    assert!(matches!(status.code(), Some(0 | 1 | 3)), "{status:?}");
    assert_eq!(
        before
            .iter()
            .filter(|t| t.0.starts_with("rmp-eval-"))
            .count(),
        rt_threads,
        "{before:?}"
    );
    (before, after)
}
