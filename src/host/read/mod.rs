//! The read side of `Host`: reads that never block and never leave the root.
//!
//! A machine's tree examined elsewhere (a snapshot, an unpacked tarball) is untrusted: a FIFO would make a
//! plain open() wait forever for a writer, a device node's open() may act on the device, and links may point
//! anywhere. So every read first opens the path with O_PATH (which opens nothing), looks at what it is, and
//! only then opens a regular file for reading (O_NONBLOCK, and the same inode checked again); anything else is
//! `NotRegular`, which checks report as unknown with the reason. Under a root, paths are resolved by the
//! kernel as if the root were "/" (openat2 RESOLVE_IN_ROOT): absolute links and ".." stay inside it, as they
//! would on the machine itself. Paths a snapshot could not read are reported with the reason it recorded, not
//! as absent (host/recorded.rs).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::recorded::Failure;
use super::{Host, HostError, HostResult, MAX_READ, Shared};
use crate::sys::fs as fs_sys;

/// Directory listings longer than this are refused (a crafted tree must not exhaust memory).
pub(crate) const MAX_ENTRIES: usize = 1 << 20;
/// The kernel release of `uname -r`.
pub(crate) const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// Set once openat2 turns out to be missing (kernel < 5.6) or filtered (seccomp): then the canonicalizing
/// `resolve` stands in (links leading outside the root are refused rather than kept inside).
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
/// How often an openat2 that met a concurrent rename (EAGAIN) is tried again before its error stands.
const OPENAT2_TRIES: u32 = 100;

/// What a Host loads once and shares with its clones: the snapshot's recorded failures (host/recorded.rs) and
/// the root directory, opened once (O_PATH) for every openat2 under it.
pub(crate) type Loaded = Shared<Cache>;

#[derive(Default)]
pub(crate) struct Cache {
    pub(super) failures: OnceLock<BTreeMap<String, Failure>>,
    /// The paths a snapshot recorded as absent from the machine it was taken on.
    pub(super) absent: OnceLock<std::collections::BTreeSet<String>>,
    root_fd: OnceLock<OwnedFd>,
}

/// The names of the kinds of file, as errors and snapshots say them.
pub(super) const KINDS: [(libc::mode_t, &str); 7] = [
    (libc::S_IFIFO, "FIFO"),
    (libc::S_IFSOCK, "socket"),
    (libc::S_IFCHR, "character device"),
    (libc::S_IFBLK, "block device"),
    (libc::S_IFDIR, "directory"),
    (libc::S_IFLNK, "symbolic link"),
    (libc::S_IFREG, "regular file"),
];

fn kind_of(m: &libc::stat) -> &'static str {
    KINDS
        .iter()
        .find(|k| k.0 == m.st_mode & libc::S_IFMT)
        .map_or("special file", |k| k.1)
}

impl Host {
    /// Opens `abs` with `flags` (O_PATH to look, O_RDONLY to read) without blocking and inside the root.
    fn open_at(&self, abs: &str, flags: i32) -> HostResult<OwnedFd> {
        // openat2 allows no other flags with O_PATH (EINVAL); O_PATH opens nothing, so cannot block anyway.
        let flags = if flags & libc::O_PATH != 0 {
            flags
        } else {
            flags | libc::O_NONBLOCK | libc::O_NOCTTY
        };
        let p = self.path(abs);
        let io = |e: io::Error| HostError::from_io(abs, e);
        if self.is_live() {
            return fs_sys::open(&p, flags).map_err(io);
        }
        if !NO_OPENAT2.load(Ordering::Relaxed) && !force_fallback() {
            // Kept only once opened: a root created after this Host is still found.
            let root = match self.loaded.root_fd.get() {
                Some(fd) => fd,
                None => {
                    let fd =
                        fs_sys::open(self.root(), libc::O_PATH | libc::O_DIRECTORY).map_err(io)?;
                    let _ = self.loaded.root_fd.set(fd);
                    self.loaded
                        .root_fd
                        .get()
                        .ok_or_else(|| io(io::Error::from_raw_os_error(libc::EBADF)))?
                }
            };
            let rel = p.strip_prefix(self.root()).unwrap_or(&p).to_string_lossy();
            let mut tries = 0;
            loop {
                match fs_sys::open_in_root(root, &rel, flags) {
                    // A rename or mount anywhere on the machine raced with a ".." of the path, and the kernel
                    // could not prove it stayed inside: openat2(2) says to try again (a busy machine does this
                    // about once in a thousand reads through a sysfs link).
                    Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && tries < OPENAT2_TRIES => {
                        tries += 1;
                    }
                    Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                        NO_OPENAT2.store(true, Ordering::Relaxed);
                        break;
                    }
                    r => return r.map_err(io),
                }
            }
        }
        fs_sys::open(&self.resolve_for_read(abs)?, flags).map_err(io)
    }

    /// What `abs` is (following links inside the root), without opening it for reading.
    fn stat_at(&self, abs: &str) -> HostResult<libc::stat> {
        let fd = self.open_at(abs, libc::O_PATH)?;
        fs_sys::fstat(&fd).map_err(|e| HostError::from_io(abs, e))
    }

    /// Opens `abs` for reading and makes sure it is still the file `st` described (not swapped between the
    /// two looks).
    fn open_stated(&self, abs: &str, st: &libc::stat) -> HostResult<OwnedFd> {
        let fd = self.open_at(abs, libc::O_RDONLY)?;
        let again = fs_sys::fstat(&fd).map_err(|e| HostError::from_io(abs, e))?;
        if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino) {
            return Err(HostError::Io {
                path: abs.into(),
                source: io::Error::other("changed while being read"),
            });
        }
        Ok(fd)
    }

    pub(super) fn read_raw(&self, abs: &str) -> HostResult<Vec<u8>> {
        let st = self.stat_at(abs)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(HostError::NotRegular {
                path: abs.into(),
                what: kind_of(&st),
            });
        }
        // Under a root the size is real (sysfs and procfs report 4096 or 0; their reads are bounded below).
        if !self.is_live() && st.st_size as u64 > MAX_READ {
            return Err(HostError::TooLarge { path: abs.into() });
        }
        let fd = self.open_stated(abs, &st)?;
        let mut buf = Vec::new();
        fs::File::from(fd)
            .take(MAX_READ + 1)
            .read_to_end(&mut buf)
            .map_err(|e| HostError::from_io(abs, e))?;
        if buf.len() as u64 > MAX_READ {
            return Err(HostError::TooLarge { path: abs.into() });
        }
        Ok(buf)
    }

    /// The file's bytes: regular files only (a FIFO, socket or device is `NotRegular`), at most MAX_READ.
    pub(crate) fn read_bytes(&self, abs: &str) -> HostResult<Vec<u8>> {
        let r = self.read_raw(abs);
        self.or_recorded(abs, r)
    }

    /// The file as text; invalid UTF-8 is replaced rather than refused (a garbage file still gets a verdict).
    pub(crate) fn read(&self, abs: &str) -> HostResult<String> {
        let b = self.read_bytes(abs)?;
        Ok(match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// The file's text with surrounding whitespace (the trailing newline of sysfs values) removed.
    pub(crate) fn read_trimmed(&self, abs: &str) -> HostResult<String> {
        Ok(self.read(abs)?.trim().to_string())
    }

    /// The kernel release (`uname -r`) as /proc/sys/kernel/osrelease gives it, so that a snapshot answers for
    /// its machine. On the running machine without a readable /proc (a chroot) the kernel is asked instead,
    /// through uname(2): a result must not record an empty kernel. A tree's missing file stays an error.
    pub(crate) fn kernel_release(&self) -> HostResult<String> {
        match self.read_trimmed(OSRELEASE) {
            Err(e) if self.is_live() => crate::sys::uname::release().map_err(|_| e),
            r => r,
        }
    }

    /// Entry names of a directory, sorted; at most MAX_ENTRIES.
    pub(crate) fn list(&self, abs: &str) -> HostResult<Vec<String>> {
        // A directory the snapshot could not list still exists in the copy (its children may have been read):
        // the recorded failure comes first.
        if let Some(e) = self.recorded(abs) {
            return Err(e);
        }
        let r = (|| {
            let fd = self.open_at(abs, libc::O_RDONLY | libc::O_DIRECTORY)?;
            let mut names = Vec::new();
            let all = fs_sys::each_entry(fd, |n| {
                if n == b"." || n == b".." {
                    return ControlFlow::Continue(());
                }
                if names.len() == MAX_ENTRIES {
                    return ControlFlow::Break(());
                }
                names.push(String::from_utf8_lossy(n).into_owned());
                ControlFlow::Continue(())
            })
            .map_err(|e| HostError::from_io(abs, e))?;
            if !all {
                return Err(HostError::TooManyEntries { path: abs.into() });
            }
            names.sort();
            Ok(names)
        })();
        self.or_recorded(abs, r)
    }

    /// The eight bytes at `offset` of `abs`, little-endian: a model-specific register through the msr driver
    /// (/dev/cpu/N/msr, where the offset is the register's number), or the same eight bytes in a tree's regular
    /// file (a `--root` tree carries a sparse file): one code path, one pread. A character device is opened on
    /// the live machine only; under a root it is `NotRegular`, as for every other read.
    pub(crate) fn read_u64_at(&self, abs: &str, offset: u64) -> HostResult<u64> {
        use std::os::unix::fs::FileExt;
        let st = self.stat_at(abs)?;
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFREG && !(self.is_live() && kind == libc::S_IFCHR) {
            return Err(HostError::NotRegular {
                path: abs.into(),
                what: kind_of(&st),
            });
        }
        let fd = self.open_stated(abs, &st)?;
        let mut b = [0u8; 8];
        fs::File::from(fd)
            .read_exact_at(&mut b, offset)
            .map_err(|e| HostError::from_io(abs, e))?;
        Ok(u64::from_le_bytes(b))
    }

    /// True when the path exists (or a snapshot recorded it as unreadable).
    pub(crate) fn exists(&self, abs: &str) -> bool {
        self.stat_at(abs).is_ok() || self.recorded(abs).is_some()
    }

    pub(crate) fn is_dir(&self, abs: &str) -> bool {
        self.stat_at(abs)
            .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
    }
}

#[cfg(test)]
thread_local! {
    static FALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Tests exercise the path taken without openat2 on this thread only.
#[cfg(test)]
pub(crate) fn set_force_fallback(on: bool) {
    FALLBACK.with(|f| f.set(on));
}

fn force_fallback() -> bool {
    #[cfg(test)]
    return FALLBACK.with(|f| f.get());
    #[cfg(not(test))]
    false
}

#[cfg(test)]
mod tests;
