//! Host's file layer's system calls: open by path, open inside a root (openat2), fstat, directory entries; file
//! locks (flock) and the tracefs mount. `Host` (host/read/) keeps the logic — which flags, when to fall back,
//! what a file's kind means; here only the calls.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A path as a C string; an inner NUL is EINVAL (no such file can exist).
fn c_path(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// A fresh descriptor from a call returning `fd` or -1 with errno.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: fd is a fresh, valid descriptor the kernel just returned; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// fstat(fd).
pub(crate) fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: stat is plain C data, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes one stat into the buffer we own; the fd is open for the call's duration (borrowed).
    super::check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// open(path, flags | O_CLOEXEC).
pub(crate) fn open(path: &Path, flags: i32) -> io::Result<OwnedFd> {
    let c = c_path(path.as_os_str().as_bytes())?;
    // SAFETY: open with a NUL-terminated path we own; the returned fd is taken over by OwnedFd at once.
    owned(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) }.into())
}

/// openat2(dir, rel, flags | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): `rel` ("" is the directory
/// itself) resolved as if `dir` were `/`, so that no symlink leads out. ENOSYS before Linux 5.6.
pub(crate) fn open_in_root(dir: &OwnedFd, rel: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = c_path(if rel.is_empty() { b"." } else { rel.as_bytes() })?;
    // SAFETY: open_how is plain C data; all-zero is valid (no flags, no mode, no resolve flags).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: openat2 reads `how` (its size given) and the NUL-terminated path; both outlive the call, and the
    // dir fd is borrowed open for it.
    owned(unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    })
}

/// mkfifo(path, mode): tests make FIFOs to show that reading one does not block.
#[cfg(test)]
pub(crate) fn mkfifo(path: &Path, mode: libc::mode_t) -> io::Result<()> {
    let c = c_path(path.as_os_str().as_bytes())?;
    // SAFETY: mkfifo reads the NUL-terminated path we own.
    super::check(unsafe { libc::mkfifo(c.as_ptr(), mode) }).map(drop)
}

/// Calls `each` with every entry name of the directory open as `fd` ("." and ".." too), until it says Break;
/// `Ok(false)` when it did.
pub(crate) fn each_entry(
    fd: OwnedFd,
    mut each: impl FnMut(&[u8]) -> std::ops::ControlFlow<()>,
) -> io::Result<bool> {
    let mut dir = nix::dir::Dir::from_fd(fd)?;
    for e in dir.iter() {
        if each(e?.file_name().to_bytes()).is_break() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// An flock(2) held on a file until this is dropped (or the process ends).
pub(crate) struct FileLock {
    _lock: nix::fcntl::Flock<File>,
}

/// flock(LOCK_SH), waiting while an exclusive holder has it.
pub(crate) fn lock_shared(f: File) -> io::Result<FileLock> {
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockShared)
        .map(|l| FileLock { _lock: l })
        .map_err(|(_, e)| e.into())
}

/// flock(LOCK_EX | LOCK_NB): `None` when another holder has it.
pub(crate) fn try_lock_exclusive(f: File) -> io::Result<Option<FileLock>> {
    match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(l) => Ok(Some(FileLock { _lock: l })),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e.into()),
    }
}

/// mount -t tracefs nodev `on`: on the running machine only (`Kernel`).
pub(crate) fn mount_tracefs(_: crate::host::Kernel, on: &Path) -> io::Result<()> {
    nix::mount::mount(
        Some("nodev"),
        on,
        Some("tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(io::Error::from)
}

/// umount(`on`).
pub(crate) fn umount(on: &Path) -> io::Result<()> {
    nix::mount::umount(on).map_err(io::Error::from)
}
