//! `Host`: the one place that turns an absolute system path ("/sys/…", "/proc/…", "/etc/…") into a real path.
//!
//! Everything the program reads or writes on the machine goes through a `Host`, so that `--root DIR` (fixture
//! trees in tests, a snapshot of another machine for support engineers) is honoured everywhere.

mod error;
mod read;
mod recorded;
mod tar_root;
mod trace;
mod tree;
mod write;
pub(crate) use write::WriteStep;

use std::fs;
use std::path::{Path, PathBuf};

/// Reads larger than this are refused: a garbage or hostile root must not exhaust memory.
pub const MAX_READ: u64 = 64 * 1024 * 1024;
/// The middle of a temporary file's name: `.NAME.rmp-eval.PID`.
const TEMP_MARK: &str = ".rmp-eval.";

pub(crate) use error::HostError;
pub(crate) use error::HostResult;

pub(crate) use read::OSRELEASE;
pub(crate) use recorded::{Failure, UNREADABLE};
pub(crate) use trace::Trace;
pub(crate) use tree::{SafeTree, parent as parent_of};

/// `a/b/../c` → `/a/c`: an absolute system path with "." and ".." resolved lexically ("/.." stays "/").
pub fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    format!("/{}", out.join("/"))
}

/// A file's previous state as recorded before a change (for journals and snapshots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileMeta {
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// The PM QoS file: while a process holds it open with 0 written, CPUs stay out of deep C-states (held by the
/// run, looked for by the process checks).
pub(crate) const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// What a Host shares with its clones but is not part of what it is (a cache, the paths it touched): two Hosts
/// on the same root are the same machine whatever they hold, so any two compare equal.
#[derive(Default)]
pub(crate) struct Shared<T>(std::sync::Arc<T>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(std::sync::Arc::clone(&self.0))
    }
}
impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
impl<T> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}
impl<T> PartialEq for Shared<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for Shared<T> {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    root: PathBuf,
    /// Set by `traced`: every system path this Host (and its clones) resolves is recorded, so that `snapshot`
    /// copies exactly what the checks read.
    trace: Option<Trace>,
    /// What a snapshot recorded as unreadable and the root's directory fd (each loaded on first need).
    loaded: read::Loaded,
    /// The unpacked tarball this root is, if it is one (removed with the last clone).
    keep: tar_root::KeepUnpacked,
}

/// Proof that a `Host` is the running machine (see `Host::kernel`); only a live Host makes one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernel(());

impl Host {
    /// The machine this process runs on.
    pub fn live() -> Self {
        Host {
            root: PathBuf::from("/"),
            trace: None,
            loaded: Default::default(),
            keep: Default::default(),
        }
    }

    /// A machine whose filesystem is laid out under `root` (a fixture tree or an unpacked snapshot). A root that
    /// resolves to "/" (`/tmp/..`, a link to /) is the running machine and is treated as such.
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        let root: PathBuf = root.into();
        if fs::canonicalize(&root).is_ok_and(|c| c == Path::new("/")) {
            return Host::live();
        }
        Host {
            root,
            trace: None,
            loaded: Default::default(),
            keep: Default::default(),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// True when this is the running machine: only then may syscalls, sockets and commands stand in for files.
    pub(crate) fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// The running kernel behind this Host, when it is the running machine: what acts on the machine other than
    /// through its files (ethtool ioctls, netlink, prctl, mounts, programs such as systemctl) takes it, so that a
    /// --root run cannot reach the machine it runs on by mistake.
    pub(crate) fn kernel(&self) -> Option<Kernel> {
        self.is_live().then_some(Kernel(()))
    }

    /// Whether a file that reads `now` already holds the value `recorded`: on the running kernel the same value
    /// (`same_value`, by the value's own comparison) is enough, as the kernel normalises what it reads back; a
    /// tree must also hold the same text.
    pub(crate) fn holds(&self, now: &str, recorded: &str, same_value: bool) -> bool {
        same_value && (self.is_live() || now.trim() == recorded.trim())
    }

    /// Puts a kernel value back: on the running kernel `kernel_text` (the value in the form the kernel takes; it
    /// normalises what it reads back anyway), in a tree the `recorded` bytes, so that a tree put back is byte for
    /// byte the one before.
    pub(crate) fn put_back(
        &self,
        abs: &str,
        recorded: &str,
        kernel_text: &str,
    ) -> Result<(), HostError> {
        let bytes = if self.is_live() {
            kernel_text
        } else {
            recorded
        };
        self.write_value(abs, bytes)
    }

    /// The real path of an absolute system path. `abs` must start with '/'; ".." components are dropped so that
    /// a crafted name cannot escape the root.
    pub(crate) fn path(&self, abs: &str) -> PathBuf {
        if let Some(t) = &self.trace {
            t.record(abs);
        }
        let mut p = self.root.clone();
        for comp in abs.split('/') {
            if comp.is_empty() || comp == "." || comp == ".." {
                continue;
            }
            p.push(comp);
        }
        p
    }

    /// The real path to operate on. Under a root other than "/", symbolic links (a crafted snapshot, a fixture
    /// with an absolute link) must not lead reads or writes outside the root: the deepest existing ancestor is
    /// canonicalized and must stay inside. `follow_last` = false for operations on the entry itself (readlink,
    /// lstat, rename over it, unlink), where only the parent is resolved.
    fn resolve(&self, abs: &str, follow_last: bool) -> HostResult<PathBuf> {
        let p = self.path(abs);
        if self.is_live() {
            return Ok(p);
        }
        let outside = || HostError::OutsideRoot {
            path: abs.to_string(),
        };
        let root = fs::canonicalize(&self.root).map_err(|e| HostError::from_io(abs, e))?;
        let (mut existing, mut rest) = match (follow_last, p.parent(), p.file_name()) {
            (false, Some(parent), Some(name)) => (parent.to_path_buf(), vec![name.to_os_string()]),
            _ => (p.clone(), Vec::new()),
        };
        loop {
            match fs::canonicalize(&existing) {
                Ok(mut real) => {
                    if !real.starts_with(&root) {
                        return Err(outside());
                    }
                    for r in rest.iter().rev() {
                        real.push(r);
                    }
                    return Ok(real);
                }
                Err(_) => match existing.file_name() {
                    Some(n) => {
                        rest.push(n.to_os_string());
                        existing.pop();
                    }
                    None => return Ok(p),
                },
            }
        }
    }

    /// `resolve` for the read side when openat2 is not available.
    fn resolve_for_read(&self, abs: &str) -> HostResult<PathBuf> {
        self.resolve(abs, true)
    }

    /// The target of a symlink, as stored (not resolved through the root).
    pub(crate) fn readlink(&self, abs: &str) -> HostResult<PathBuf> {
        fs::read_link(self.resolve(abs, false)?).map_err(|e| HostError::from_io(abs, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_stays_under_root() {
        let h = Host::with_root("/tmp/r");
        assert_eq!(
            h.path("/sys/kernel/realtime"),
            PathBuf::from("/tmp/r/sys/kernel/realtime")
        );
        assert_eq!(
            h.path("/sys/../../etc/passwd"),
            PathBuf::from("/tmp/r/sys/etc/passwd")
        );
        assert!(Host::live().is_live());
        assert!(!h.is_live());
    }

    #[test]
    fn read_missing_and_atomic_write() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        assert!(h.read("/etc/x").unwrap_err().is_not_found());
        h.write_atomic("/etc/x", b"hello\n", None).unwrap();
        assert_eq!(h.read_trimmed("/etc/x").unwrap(), "hello");
        assert_eq!(h.list("/etc").unwrap(), vec!["x".to_string()]);
    }

    #[test]
    fn symlinks_do_not_lead_outside_the_root() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        h.create_dir_all("/etc").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("etc/out")).unwrap();
        std::os::unix::fs::symlink("../etc", d.path().join("etc/inside")).unwrap();
        // Reads resolve the link as the machine would (inside the root, where that path does not exist)...
        assert!(h.read("/etc/out/secret").unwrap_err().is_not_found());
        assert!(h.list("/etc/out").is_err());
        // ...and writes refuse it.
        assert!(h.write_atomic("/etc/out/new", b"y", None).is_err());
        assert!(!outside.path().join("new").exists());
        // Links that stay inside work, and the link itself can still be read.
        assert_eq!(h.list("/etc/inside").unwrap().len(), 2);
        assert!(h.readlink("/etc/out").is_ok());
    }

    #[test]
    fn invalid_utf8_is_replaced_not_refused() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        h.write_atomic("/proc/bad", &[0xff, b'1', 0xfe], None)
            .unwrap();
        assert!(h.read("/proc/bad").unwrap().contains('1'));
    }

    #[test]
    fn a_root_that_resolves_to_slash_is_the_machine() {
        assert!(Host::with_root("/tmp/..").is_live());
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/", d.path().join("slash")).unwrap();
        assert!(Host::with_root(d.path().join("slash")).is_live());
        assert!(!Host::with_root(d.path()).is_live());
    }
}
