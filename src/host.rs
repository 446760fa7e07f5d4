//! `Host`: the one place that turns an absolute system path ("/sys/…", "/proc/…", "/etc/…") into a real path.
//!
//! Everything the program reads or writes on the machine goes through a `Host`, so that `--root DIR` (fixture
//! trees in tests, a snapshot of another machine for support engineers) is honoured everywhere.

#[path = "host_read.rs"]
mod read;
#[path = "host_tar.rs"]
mod tar_root;
#[path = "host_tree.rs"]
mod tree;

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Reads larger than this are refused: a garbage or hostile root must not exhaust memory.
pub const MAX_READ: u64 = 64 * 1024 * 1024;
/// The middle of a temporary file's name: `.NAME.rmp-eval.PID`.
const TEMP_MARK: &str = ".rmp-eval.";

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{path}: not found")]
    NotFound { path: String },
    #[error("{path}: permission denied")]
    PermissionDenied { path: String },
    #[error("{path}: leads outside the root through a symbolic link")]
    OutsideRoot { path: String },
    #[error("{path}: file too large (over {MAX_READ} bytes)")]
    TooLarge { path: String },
    #[error("{path}: not a regular file ({what})")]
    NotRegular { path: String, what: &'static str },
    #[error("{path}: more than {} entries", read::MAX_ENTRIES)]
    TooManyEntries { path: String },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

impl HostError {
    pub(crate) fn from_io(path: &str, e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => HostError::NotFound {
                path: path.to_string(),
            },
            io::ErrorKind::PermissionDenied => HostError::PermissionDenied {
                path: path.to_string(),
            },
            _ => HostError::Io {
                path: path.to_string(),
                source: e,
            },
        }
    }

    /// A short reason fit for a check's detail column ("not found", "permission denied", …).
    pub(crate) fn reason(&self) -> String {
        match self {
            HostError::NotFound { .. } => "not found".into(),
            HostError::PermissionDenied { .. } => "permission denied".into(),
            HostError::TooLarge { .. } => "file too large".into(),
            HostError::NotRegular { what, .. } => format!("not a regular file ({what})"),
            HostError::TooManyEntries { .. } => "too many entries".into(),
            HostError::OutsideRoot { .. } => "leads outside the root".into(),
            HostError::Io { source, .. } => source.to_string(),
        }
    }

    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, HostError::NotFound { .. })
    }

    /// The raw OS error number, when there is one (e.g. EINVAL from a managed IRQ).
    pub(crate) fn raw_os_error(&self) -> Option<i32> {
        match self {
            HostError::Io { source, .. } => source.raw_os_error(),
            HostError::PermissionDenied { .. } => Some(libc::EACCES),
            HostError::NotFound { .. } => Some(libc::ENOENT),
            HostError::TooLarge { .. }
            | HostError::OutsideRoot { .. }
            | HostError::NotRegular { .. }
            | HostError::TooManyEntries { .. } => None,
        }
    }
}

pub(crate) type HostResult<T> = Result<T, HostError>;

pub(crate) use read::{Failure, OSRELEASE, UNREADABLE};
pub(crate) use tree::SafeTree;

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
pub struct FileMeta {
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// The PM QoS file: while a process holds it open with 0 written, CPUs stay out of deep C-states (held by the
/// run, looked for by the process checks).
pub(crate) const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    root: PathBuf,
    /// Set by `traced`: every system path this Host (and its clones) resolves is recorded, so that `snapshot`
    /// copies exactly what the checks read.
    trace: Option<Trace>,
    /// What a snapshot recorded as unreadable (loaded on first need).
    recorded: read::Recorded,
    /// The unpacked tarball this root is, if it is one (removed with the last clone).
    keep: tar_root::Keep,
}

/// The system paths a traced Host touched, shared between its clones, and how many accesses that took.
#[derive(Clone, Default)]
pub(crate) struct Trace(
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
);

impl Trace {
    /// The recorded paths, sorted.
    pub(crate) fn paths(&self) -> Vec<String> {
        match self.0.lock() {
            Ok(g) => g.iter().cloned().collect(),
            Err(p) => p.into_inner().iter().cloned().collect(),
        }
    }
    /// Accesses so far (a path touched twice counts twice): what the checks' work costs in system calls.
    pub(crate) fn touched(&self) -> usize {
        self.1.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn record(&self, abs: &str) {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut g = match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if !g.contains(abs) {
            g.insert(abs.to_string());
        }
    }
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Trace")
    }
}

// A trace is bookkeeping, not identity: two Hosts on the same root are the same machine.
impl PartialEq for Trace {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Trace {}

impl Host {
    /// The machine this process runs on.
    pub fn live() -> Self {
        Host {
            root: PathBuf::from("/"),
            trace: None,
            recorded: Default::default(),
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
            recorded: Default::default(),
            keep: Default::default(),
        }
    }

    /// This Host, recording every path it resolves from now on.
    pub(crate) fn traced(&self) -> (Host, Trace) {
        let t = Trace::default();
        let h = Host {
            root: self.root.clone(),
            trace: Some(t.clone()),
            recorded: self.recorded.clone(),
            keep: self.keep.clone(),
        };
        (h, t)
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// True when this is the running machine: only then may syscalls, sockets and commands stand in for files.
    pub(crate) fn is_live(&self) -> bool {
        self.root == Path::new("/")
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

    /// Writes a value to an existing kernel file (sysfs, procfs) in one write, as `echo v > file` does (O_TRUNC:
    /// ignored by the kernel, needed for fixture files where a shorter value must not leave a tail).
    /// Under a root that is not this machine the file is an ordinary one and is replaced atomically instead: a
    /// process killed between truncating and writing would leave it empty.
    pub(crate) fn write_value(&self, abs: &str, value: &str) -> HostResult<()> {
        if !self.is_live() {
            return self.write_atomic(abs, value.as_bytes(), None);
        }
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(self.resolve(abs, true)?)
            .map_err(|e| HostError::from_io(abs, e))?;
        f.write_all(value.as_bytes())
            .map_err(|e| HostError::from_io(abs, e))
    }

    /// Where a write to `abs` lands. A regular file (or nothing yet) is written in place; a symbolic link is
    /// written through to the file it points to, so the link stays a link (images link /etc/kernel/cmdline and
    /// cmdline.txt). A link to nothing, to a directory or out of the root, and any other kind of file, are refused:
    /// replacing them would turn a link into a regular file with the link's 0777 mode.
    pub(crate) fn write_target(&self, abs: &str) -> HostResult<PathBuf> {
        let entry = self.resolve(abs, false)?;
        let refuse = |what: &'static str| HostError::NotRegular {
            path: abs.to_string(),
            what,
        };
        match fs::symlink_metadata(&entry) {
            Ok(m) if m.file_type().is_symlink() => {
                let real = fs::canonicalize(&entry)
                    .map_err(|_| refuse("a symbolic link to nothing; fix writes through links"))?;
                if !self.is_live() {
                    let root =
                        fs::canonicalize(&self.root).map_err(|e| HostError::from_io(abs, e))?;
                    if !real.starts_with(&root) {
                        return Err(HostError::OutsideRoot {
                            path: abs.to_string(),
                        });
                    }
                }
                match fs::metadata(&real) {
                    Ok(t) if t.is_file() => Ok(real),
                    _ => Err(refuse(
                        "a symbolic link to something that is not a regular file",
                    )),
                }
            }
            Ok(m) if !m.is_file() => Err(refuse("not a regular file")),
            _ => Ok(entry),
        }
    }

    /// Mode and owner of the file a write to `abs` would change (the link's target for a link).
    pub(crate) fn target_meta(&self, abs: &str) -> HostResult<FileMeta> {
        let m = fs::metadata(self.write_target(abs)?).map_err(|e| HostError::from_io(abs, e))?;
        Ok(FileMeta {
            mode: m.permissions().mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
        })
    }

    /// True when `abs` itself is a symbolic link (not followed).
    pub(crate) fn is_symlink(&self, abs: &str) -> bool {
        self.resolve(abs, false)
            .and_then(|p| fs::symlink_metadata(p).map_err(|e| HostError::from_io(abs, e)))
            .is_ok_and(|m| m.file_type().is_symlink())
    }

    /// The one file writer of the program. Replaces the file atomically: a temporary file `.NAME.rmp-eval.PID`
    /// beside it (created 0600, exclusively), fsync, mode and owner, rename, fsync of the directory. Mode and owner
    /// are `meta`, else the replaced file's, else 0644 and ours: a write never widens a mode. Links are written
    /// through (see `write_target`). The temporary file is removed on every error; one left by a killed process
    /// is removed by `remove_stale_temps`.
    pub(crate) fn write_atomic(
        &self,
        abs: &str,
        bytes: &[u8],
        meta: Option<&FileMeta>,
    ) -> HostResult<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let target = self.write_target(abs)?;
        let dir = target
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.root.clone());
        fs::create_dir_all(&dir).map_err(|e| HostError::from_io(abs, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}{TEMP_MARK}{}", std::process::id()));
        let keep = match meta {
            Some(m) => Some(m.clone()),
            None => fs::metadata(&target).ok().map(|m| FileMeta {
                mode: m.permissions().mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
            }),
        };
        let res = (|| -> io::Result<()> {
            // A leftover of an earlier process that had our pid: ours to replace.
            let _ = fs::remove_file(&tmp);
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(bytes)?;
            match &keep {
                Some(m) => {
                    // Ownership can only be kept by root; a non-root test run keeps its own.
                    let _ = std::os::unix::fs::fchown(&f, Some(m.uid), Some(m.gid));
                    f.set_permissions(fs::Permissions::from_mode(m.mode))?;
                }
                None => f.set_permissions(fs::Permissions::from_mode(0o644))?,
            }
            f.sync_all()?;
            fs::rename(&tmp, &target)?;
            fs::File::open(&dir)?.sync_all()
        })();
        if res.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        res.map_err(|e| HostError::from_io(abs, e))
    }

    /// Removes the temporary files (`.NAME.rmp-eval.PID`) that a process killed while writing left beside the
    /// file `abs` (in its directory, and in its target's for a link) — only those whose process is gone. Returns
    /// the names removed.
    pub(crate) fn remove_stale_temps(&self, abs: &str) -> Vec<String> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for p in [self.resolve(abs, false), self.write_target(abs)]
            .into_iter()
            .flatten()
        {
            if let Some(d) = p.parent()
                && !dirs.iter().any(|x| x == d)
            {
                dirs.push(d.to_path_buf());
            }
        }
        let mut removed = Vec::new();
        for e in dirs
            .iter()
            .filter_map(|d| fs::read_dir(d).ok())
            .flatten()
            .filter_map(|e| e.ok())
        {
            let n = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = n
                .starts_with('.')
                .then(|| n.rsplit_once(TEMP_MARK))
                .flatten()
                .and_then(|(_, p)| p.parse::<i32>().ok())
            else {
                continue;
            };
            let gone = pid != std::process::id() as i32 && crate::sys::process::is_gone(pid);
            if gone && e.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(e.path()).is_ok()
            {
                removed.push(n);
            }
        }
        removed
    }

    /// An exclusive lock on this machine's tree (its root directory), for fix and rollback: held from before they
    /// read any state until they are done. Not blocking: a second one is told at once.
    pub(crate) fn lock_tree(&self) -> HostResult<Option<crate::sys::fs::FileLock>> {
        let dir = fs::File::open(&self.root).map_err(|e| HostError::from_io("/", e))?;
        crate::sys::fs::try_lock_exclusive(dir).map_err(|e| HostError::from_io("/", e))
    }

    pub fn remove_file(&self, abs: &str) -> HostResult<()> {
        fs::remove_file(self.resolve(abs, false)?).map_err(|e| HostError::from_io(abs, e))
    }

    /// Removes an empty directory (a directory fix created); a directory with something in it is an error.
    pub(crate) fn remove_dir(&self, abs: &str) -> HostResult<()> {
        fs::remove_dir(self.resolve(abs, false)?).map_err(|e| HostError::from_io(abs, e))
    }

    pub(crate) fn create_dir_all(&self, abs: &str) -> HostResult<()> {
        fs::create_dir_all(self.resolve(abs, true)?).map_err(|e| HostError::from_io(abs, e))
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

    #[test]
    fn writes_go_through_links_keep_modes_and_clean_up() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        h.write_atomic("/usr/real", b"a\n", None).unwrap();
        let real = d.path().join("usr/real");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        h.create_dir_all("/etc").unwrap();
        std::os::unix::fs::symlink("../usr/real", d.path().join("etc/link")).unwrap();
        h.write_atomic("/etc/link", b"b\n", None).unwrap();
        assert!(
            std::fs::symlink_metadata(d.path().join("etc/link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&real).unwrap(), b"b\n");
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::os::unix::fs::symlink("nowhere", d.path().join("etc/dangling")).unwrap();
        assert!(matches!(
            h.write_atomic("/etc/dangling", b"x", None),
            Err(HostError::NotRegular { .. })
        ));
        assert!(h.write_atomic("/etc", b"x", None).is_err());
        // A dead process's temporary file goes; a live one's (ours) stays.
        std::fs::write(d.path().join("etc/.link.rmp-eval.4194303"), "x").unwrap();
        let mine = format!(".link.rmp-eval.{}", std::process::id());
        std::fs::write(d.path().join("etc").join(&mine), "x").unwrap();
        assert_eq!(
            h.remove_stale_temps("/etc/link"),
            [".link.rmp-eval.4194303"]
        );
        assert!(d.path().join("etc").join(&mine).exists());
    }
}
