//! Putting what was written where a boot loader reads it: syncfs, then a freeze/thaw cycle of the file system
//! (FIFREEZE/FITHAW). A boot loader reads the disk without replaying the file system's journal; syncfs makes
//! the data durable, but ext4 may keep the newest metadata (a renamed grub.cfg's directory entry, its inode)
//! in the journal only. Freezing checkpoints the journal into place, as OSTree does before it boots a new
//! deployment.
//!
//! A frozen file system blocks every writer on it: a process killed between freeze and thaw would leave the
//! machine stuck. A guardian child is forked before the freeze, holding the read end of a pipe whose write end
//! only this process holds: the child thaws when the pipe reaches end of file (this process gone, however it
//! died: the kernel closes its descriptors) and exits without thawing when it reads this process's "thawed"
//! byte. The child ignores SIGTERM, SIGINT and SIGHUP (a unit's stop, a closed terminal) and only makes
//! async-signal-safe system calls. Only a SIGKILL of both within the freeze's few milliseconds leaves it
//! frozen; `echo j > /proc/sysrq-trigger` (emergency thaw) then thaws every file system.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// _IOWR('X', 119, int) and _IOWR('X', 120, int) from <linux/fs.h>.
const FIFREEZE: libc::c_ulong = 0xC004_5877;
const FITHAW: libc::c_ulong = 0xC004_5878;

/// What the cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cycle {
    /// Synced, frozen (the journal checkpointed) and thawed.
    Done,
    /// Synced; the file system cannot be frozen (errno: EOPNOTSUPP, or EBUSY when someone else froze it, whom
    /// this leaves alone).
    SyncedOnly(i32),
}

/// syncfs, then FIFREEZE and FITHAW of the file system holding `dir`, the thaw guarded by a child as above.
/// Only on the running machine (`Kernel`): never a tree's or a test's host file system.
pub(crate) fn sync_freeze_thaw(_: crate::host::Kernel, dir: &Path) -> io::Result<Cycle> {
    let fd = super::fs::open(dir, libc::O_RDONLY | libc::O_DIRECTORY)?;
    // SAFETY: syncfs on a descriptor we hold open for the call.
    super::check(unsafe { libc::syncfs(fd.as_raw_fd()) })?;
    let (rd, wr) = pipe()?;
    let child = fork_guardian(&fd, rd, &wr)?;
    // SAFETY: FIFREEZE takes no argument the kernel reads; the descriptor is open for the call.
    let frozen = super::check(unsafe { libc::ioctl(fd.as_raw_fd(), FIFREEZE, 0) });
    let thawed = match frozen {
        // SAFETY: as FIFREEZE.
        Ok(_) => super::check(unsafe { libc::ioctl(fd.as_raw_fd(), FITHAW, 0) }).map(|_| ()),
        Err(_) => Ok(()),
    };
    // The guardian's all-clear only once thawed: after a failed thaw, end of file makes it try again.
    if thawed.is_ok() {
        // SAFETY: write of one byte from a local buffer to the pipe we own.
        unsafe { libc::write(wr.as_raw_fd(), b"t".as_ptr().cast(), 1) };
    }
    drop(wr);
    let mut status = 0;
    // SAFETY: waitpid for our own child, with a local status buffer.
    unsafe { libc::waitpid(child, &mut status, 0) };
    thawed?;
    match frozen {
        Ok(_) => Ok(Cycle::Done),
        Err(e) => match e.raw_os_error() {
            Some(n @ (libc::EOPNOTSUPP | libc::ENOTTY | libc::EINVAL | libc::EBUSY)) => {
                Ok(Cycle::SyncedOnly(n))
            }
            _ => Err(e),
        },
    }
}

/// pipe2(O_CLOEXEC): (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    super::check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both are fresh descriptors the kernel just returned; nobody else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Forks the guardian: it waits on `rd` and thaws `fs` unless it reads the all-clear. Returns its pid; the
/// read end is closed here.
fn fork_guardian(fs: &OwnedFd, rd: OwnedFd, wr: &OwnedFd) -> io::Result<libc::pid_t> {
    let (fs, rd_raw, wr) = (fs.as_raw_fd(), rd.as_raw_fd(), wr.as_raw_fd());
    // SAFETY: the child runs only async-signal-safe calls (signal, read, ioctl, _exit) on descriptors it
    // inherited, allocates nothing and never returns into Rust code: safe in a forked multi-threaded process.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above; the child's own copies of the descriptors, and `_exit` ends it.
        unsafe { guardian(fs, rd_raw, wr) }
    }
    drop(rd);
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// The guardian's body, in the forked child.
///
/// # Safety
/// Call only in a child just forked: it exits the process.
unsafe fn guardian(fs: libc::c_int, rd: libc::c_int, wr: libc::c_int) -> ! {
    // SAFETY: close, signal, read, ioctl and _exit are async-signal-safe; the buffer is on this stack.
    unsafe {
        // Its copy of the write end closed, end of file means the parent's is gone.
        libc::close(wr);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let mut b = 0u8;
        let n = loop {
            let n = libc::read(rd, (&mut b as *mut u8).cast(), 1);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break n;
            }
        };
        if n != 1 {
            libc::ioctl(fs, FITHAW, 0);
        }
        libc::_exit(0)
    }
}

#[cfg(test)]
mod tests;
