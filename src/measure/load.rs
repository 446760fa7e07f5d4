//! `run --load cpu,io,vm,net,irq`: stress-ng (the Debian package, in the package's Recommends) on the
//! housekeeping CPUs only (every online CPU but the RT ones, through stress-ng's --taskset) for the run's length.
//! It never outlives the run: it has its own process group, which is killed when the `Load` is dropped (a normal
//! end, Ctrl+C, SIGTERM, an error), and PR_SET_PDEATHSIG kills stress-ng when rmp-eval itself dies (kill -9);
//! stress-ng's workers end when their parent does.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sys::process::{GroupSignal, signal_group};

/// Where stress-ng is looked for (never through the PATH of whoever runs rmp-eval as root).
pub(crate) const STRESS_NG: &str = "/usr/bin/stress-ng";

/// One kind of load and the stress-ng stressors that make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LoadKind {
    /// One CPU-bound worker per housekeeping CPU.
    Cpu,
    /// Mixed file I/O in a temporary directory.
    Io,
    /// Memory: allocation, page faults, writes (64 MiB per worker).
    Vm,
    /// Loopback TCP traffic (socket system calls and softirqs).
    Net,
    /// Timer interrupts at a high rate.
    Irq,
}

impl LoadKind {
    pub(crate) const ALL: [LoadKind; 5] = [
        LoadKind::Cpu,
        LoadKind::Io,
        LoadKind::Vm,
        LoadKind::Net,
        LoadKind::Irq,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            LoadKind::Cpu => "cpu",
            LoadKind::Io => "io",
            LoadKind::Vm => "vm",
            LoadKind::Net => "net",
            LoadKind::Irq => "irq",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<LoadKind> {
        LoadKind::ALL.into_iter().find(|k| k.name() == s)
    }

    fn args(self, workers: usize) -> Vec<String> {
        let n = workers.to_string();
        match self {
            LoadKind::Cpu => vec!["--cpu".into(), n],
            LoadKind::Io => vec!["--iomix".into(), "1".into()],
            LoadKind::Vm => vec!["--vm".into(), "1".into(), "--vm-bytes".into(), "64M".into()],
            LoadKind::Net => vec!["--sock".into(), "1".into()],
            LoadKind::Irq => vec![
                "--timer".into(),
                "1".into(),
                "--timer-freq".into(),
                "100000".into(),
            ],
        }
    }
}

/// What the result records about the load.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadInfo {
    pub(crate) kinds: Vec<LoadKind>,
    /// The housekeeping CPUs it ran on.
    pub(crate) cpus: Vec<usize>,
    /// The stress-ng command line.
    pub(crate) command: String,
}

/// stress-ng running; stopped (its whole process group) when dropped.
pub(crate) struct Load {
    child: Child,
    tmp: Option<tempdir::TempDir>,
    pub(crate) info: LoadInfo,
}

mod tempdir {
    /// A private directory for stress-ng's I/O files, removed with the load.
    pub(crate) struct TempDir(pub std::path::PathBuf);
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The online CPUs minus the RT ones; refused when none is left.
pub(crate) fn housekeeping(online: &[usize], rt: &[usize]) -> Result<Vec<usize>> {
    let hk: Vec<usize> = online.iter().copied().filter(|c| !rt.contains(c)).collect();
    if hk.is_empty() {
        return Err(Error::usage(format!(
            "--load needs a CPU besides the RT ones ({rt:?}) to run on"
        )));
    }
    Ok(hk)
}

impl Load {
    /// Starts stress-ng with `kinds` on `cpus`; `secs` bounds it too (its own --timeout, a backstop).
    pub(crate) fn start(kinds: &[LoadKind], cpus: &[usize], secs: Option<f64>) -> Result<Load> {
        if !std::path::Path::new(STRESS_NG).exists() {
            return Err(Error::failed(format!(
                "--load needs stress-ng, which is not installed ({STRESS_NG} missing): apt install stress-ng"
            )));
        }
        let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        let tmp = std::env::temp_dir().join(format!("rmp-eval-load-{}", std::process::id()));
        std::fs::create_dir_all(&tmp)
            .map_err(|e| Error::sys(format!("creating {}", tmp.display()), e))?;
        let tmp = tempdir::TempDir(tmp);
        let mut args: Vec<String> = vec![
            "--taskset".into(),
            list.join(","),
            "--temp-path".into(),
            tmp.0.display().to_string(),
            "--quiet".into(),
            "--timeout".into(),
            // 0 is "run forever" for stress-ng: a run without an end is ended by us.
            secs.map_or("0".into(), |s| format!("{}s", (s + 30.0).ceil() as u64)),
        ];
        for k in kinds {
            args.extend(k.args(cpus.len()));
        }
        let mut cmd = Command::new(STRESS_NG);
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        crate::sys::process::die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| Error::sys("starting stress-ng", e))?;
        Ok(Load {
            child,
            tmp: Some(tmp),
            info: LoadInfo {
                kinds: kinds.to_vec(),
                cpus: cpus.to_vec(),
                command: format!("stress-ng {}", args.join(" ")),
            },
        })
    }

    /// Stops the whole process group: SIGTERM, then SIGKILL after 2 s.
    pub(crate) fn stop(mut self) -> LoadInfo {
        self.halt();
        std::mem::take(&mut self.info)
    }

    fn halt(&mut self) {
        let pg = self.child.id();
        let _ = signal_group(pg, GroupSignal::Term);
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(2) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The workers too, whatever the leader did.
        let _ = signal_group(pg, GroupSignal::Kill);
        let _ = self.child.wait();
        self.tmp = None;
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        if self.tmp.is_some() {
            self.halt();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn housekeeping_is_every_online_cpu_but_the_rt_ones() {
        assert_eq!(housekeeping(&[0, 1, 2, 3], &[3]).unwrap(), [0, 1, 2]);
        assert_eq!(housekeeping(&[0, 1, 2, 3], &[2, 3]).unwrap(), [0, 1]);
        assert!(housekeeping(&[0], &[0]).is_err());
        for k in LoadKind::ALL {
            assert_eq!(LoadKind::from_name(k.name()), Some(k));
            assert!(k.args(2)[0].starts_with("--"));
        }
        assert_eq!(LoadKind::from_name("disk"), None);
    }
}
