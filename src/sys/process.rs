//! This process and its threads: memory locking and malloc's trimming, SCHED_FIFO, CPU affinity, the
//! signal mask, children that die with us. The RT setup of measure/session/rt.rs calls these before its loop starts;
//! none is called inside a loop.

use std::io;
use std::process::Command;

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::unistd::Pid;

/// mlockall(MCL_CURRENT | MCL_FUTURE), as cyclictest does: every page mapped now and later is resident before it
/// is used, so no RT loop takes a page fault, whichever path it runs.
pub(crate) fn lock_all_memory() -> io::Result<()> {
    // SAFETY: mlockall takes only flags and touches no memory of ours.
    super::check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) }).map(drop)
}

/// Tells glibc's malloc never to give memory back: no heap trim (M_TRIM_THRESHOLD -1) and no allocation served
/// by its own mmap (M_MMAP_MAX 0), whose free would munmap it. A munmap or trim by any thread of the process sends
/// a TLB-shootdown IPI to every CPU that runs the process, the RT core included. For the life of the process:
/// the pages it keeps are few. Returns false when malloc refused either setting.
pub(crate) fn keep_freed_memory() -> bool {
    // SAFETY: mallopt takes two integers and changes only malloc's own parameters.
    let trim = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, -1) };
    // SAFETY: as above.
    let mmap = unsafe { libc::mallopt(libc::M_MMAP_MAX, 0) };
    trim == 1 && mmap == 1
}

/// A test seam (`test-seams` only): memory unlocked and a page mapped afresh and written, so that the calling
/// thread takes a page fault — the page-fault test's proof that it sees one (tests/common/run.rs).
#[cfg(feature = "test-seams")]
pub(crate) fn take_a_page_fault() {
    let _ = unlock_all_memory();
    // SAFETY: a new private anonymous page, written once through the pointer mmap returned; never unmapped (a
    // test seam, once per run).
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p != libc::MAP_FAILED {
            p.cast::<u8>().write_volatile(1);
        }
    }
}

/// munlockall().
pub(crate) fn unlock_all_memory() -> io::Result<()> {
    nix::sys::mman::munlockall().map_err(io::Error::from)
}

/// The calling thread to SCHED_FIFO at `priority` (EPERM without CAP_SYS_NICE or an RT limit).
pub(crate) fn set_fifo(priority: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: pthread_self() is the calling thread's valid handle and `param` lives across the call.
    match unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Blocks every signal in the calling thread (they go to a thread that has them unblocked).
pub(crate) fn block_all_signals() -> io::Result<()> {
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None).map_err(io::Error::from)
}

/// The signals that end the program when nothing handles them and a terminal or a service manager sends.
const ENDING: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT held back (blocked) in this thread while the guard lives, so that work
/// which leaves files behind can see one arrive (`arrived`), clean up, and then let it act: dropping the guard
/// restores the mask and a held signal does what it would have done (by default, end the program).
pub(crate) struct HeldSignals(SigSet);

impl HeldSignals {
    pub(crate) fn hold() -> io::Result<HeldSignals> {
        let mut set = SigSet::empty();
        for s in ENDING {
            set.add(s);
        }
        let mut old = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old))
            .map_err(io::Error::from)?;
        Ok(HeldSignals(old))
    }

    /// True once one of the held signals is pending.
    pub(crate) fn arrived(&self) -> bool {
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigpending writes a whole sigset_t into the pointer it is given, which points at one.
        if unsafe { libc::sigpending(set.as_mut_ptr()) } != 0 {
            return false;
        }
        // SAFETY: sigpending returned 0, so it initialised the set.
        let set = unsafe { set.assume_init() };
        // SAFETY: sigismember reads the initialised set; the signal numbers are valid.
        ENDING
            .iter()
            .any(|s| unsafe { libc::sigismember(&set, *s as libc::c_int) } == 1)
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.0), None);
    }
}

/// A set of CPUs, as the kernel's affinity mask holds it.
#[derive(Clone)]
pub(crate) struct Cpus(CpuSet);

impl Cpus {
    /// These CPUs; `Err(cpu)` names the first one beyond the mask's size.
    pub(crate) fn of(cpus: &[usize]) -> Result<Cpus, usize> {
        let mut set = CpuSet::new();
        for &c in cpus {
            set.set(c).map_err(|_| c)?;
        }
        Ok(Cpus(set))
    }

    pub(crate) fn contains(&self, cpu: usize) -> bool {
        self.0.is_set(cpu).unwrap_or(false)
    }

    pub(crate) fn without(mut self, cpu: usize) -> Cpus {
        let _ = self.0.unset(cpu);
        self
    }

    pub(crate) fn is_empty(&self) -> bool {
        !(0..CpuSet::count()).any(|c| self.contains(c))
    }
}

/// The calling thread's CPU affinity.
pub(crate) fn affinity() -> io::Result<Cpus> {
    sched_getaffinity(Pid::from_raw(0))
        .map(Cpus)
        .map_err(io::Error::from)
}

/// Pins the calling thread to `cpus`.
pub(crate) fn set_affinity(cpus: &Cpus) -> io::Result<()> {
    sched_setaffinity(Pid::from_raw(0), &cpus.0).map_err(io::Error::from)
}

/// The CPU affinity of thread `tid` (of any process we may see).
pub(crate) fn affinity_of(tid: i32) -> io::Result<Cpus> {
    sched_getaffinity(Pid::from_raw(tid))
        .map(Cpus)
        .map_err(io::Error::from)
}

/// Pins thread `tid` to `cpus`.
pub(crate) fn set_affinity_of(tid: i32, cpus: &Cpus) -> io::Result<()> {
    sched_setaffinity(Pid::from_raw(tid), &cpus.0).map_err(io::Error::from)
}

/// The calling thread's id (gettid).
pub(crate) fn thread_id() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// The child `cmd` starts gets SIGKILL when the thread that spawned it ends (PR_SET_PDEATHSIG), so that a load
/// generator never outlives a run that was killed.
pub(crate) fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure makes one async-signal-safe call (prctl with integers) and
    // allocates nothing (last_os_error reads errno).
    unsafe {
        cmd.pre_exec(|| {
            // SAFETY: prctl(PR_SET_PDEATHSIG, SIGKILL) takes only integers.
            super::check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0)).map(drop)
        });
    }
}

/// Whether process `pid` is gone (kill(pid, 0) says ESRCH); a process we may not signal is not gone.
pub(crate) fn is_gone(pid: i32) -> bool {
    nix::sys::signal::kill(Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH)
}

/// A signal sent to a process group.
#[derive(Clone, Copy)]
pub(crate) enum GroupSignal {
    Term,
    Kill,
}

/// killpg(pgid, SIGTERM or SIGKILL).
pub(crate) fn signal_group(pgid: u32, sig: GroupSignal) -> io::Result<()> {
    let pgid = i32::try_from(pgid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let sig = match sig {
        GroupSignal::Term => nix::sys::signal::Signal::SIGTERM,
        GroupSignal::Kill => nix::sys::signal::Signal::SIGKILL,
    };
    nix::sys::signal::killpg(Pid::from_raw(pgid), sig).map_err(io::Error::from)
}

/// Whether this process runs as (effective) root.
pub(crate) fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The effective user and group ids of this process.
pub(crate) fn effective_ids() -> (u32, u32) {
    (
        nix::unistd::geteuid().as_raw(),
        nix::unistd::getegid().as_raw(),
    )
}
