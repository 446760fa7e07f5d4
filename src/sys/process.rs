//! This process and its threads: memory locking and code mapped a page at a time, SCHED_FIFO, CPU affinity, the
//! signal mask, children that die with us. The RT setup of measure/rt.rs calls these before its loop starts; none
//! is called inside a loop.

use std::io;
use std::process::Command;

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::unistd::Pid;

/// mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT), or without ONFAULT on kernels before 4.4 (EINVAL).
pub(crate) fn lock_all_memory() -> io::Result<()> {
    let all = libc::MCL_CURRENT | libc::MCL_FUTURE;
    // SAFETY: mlockall takes only flags and touches no memory of ours.
    match super::check(unsafe { libc::mlockall(all | libc::MCL_ONFAULT) }) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            // SAFETY: as above.
            super::check(unsafe { libc::mlockall(all) }).map(drop)
        }
        r => r.map(drop),
    }
}

/// Splits the read-only segments (code, constants) of the program and of the libraries loaded with it (libc, libm,
/// the loader) into mappings of `SPLIT_PAGES` pages, so that a page fault there maps those at most. The kernel
/// maps, on each fault on a file mapping, up to 64 KiB of neighbouring pages already in the page cache
/// ("fault-around"), but never beyond the mapping; with mlockall every page so mapped stays resident, and start-up
/// code spread over the binary then pins most of it (BENCHMARKS.md, "Measurement overhead"). MADV_RANDOM alone does
/// not stop fault-around; given to every other chunk it gives those pages flags different from their neighbours',
/// which keeps the kernel from merging them back into one mapping. Then what was mapped of those segments so far
/// (the loader, start-up, the command's setup; with fault-around: most of libc) is dropped, so that the process
/// maps again only what it uses next: the pages stay in the page cache, and are mapped again a chunk at most at a
/// time. Must come before mlockall (locked pages cannot be dropped). Not for an
/// object with text relocations, whose read-only pages the loader wrote, nor under a debugger. Best effort: a range
/// the kernel refuses keeps its default. Returns how many chunks were advised.
pub(crate) fn split_code_mappings() -> usize {
    let mut walk = Walk {
        advised: 0,
        drop_mapped: !traced(),
    };
    // SAFETY: dl_iterate_phdr calls `split_segments` once per loaded object, with a valid `dl_phdr_info`, while
    // it holds the loader's lock; `walk` outlives the call and is only touched through the pointer given.
    unsafe {
        libc::dl_iterate_phdr(Some(split_segments), (&raw mut walk).cast());
    }
    walk.advised
}

/// What `split_segments` is given and counts.
struct Walk {
    advised: usize,
    /// Drop what is mapped: not under a debugger, whose breakpoints are private copies of code pages that dropping
    /// would silently undo.
    drop_mapped: bool,
}

/// Whether a tracer (a debugger, strace) is attached: /proc/self/status's TracerPid is not 0.
fn traced() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("TracerPid:"))
                .map(|v| v.trim() != "0")
        })
        .unwrap_or(false)
}

/// Whether a loaded object's dynamic section asks for text relocations (DT_TEXTREL, or DF_TEXTREL in DT_FLAGS): the
/// loader then wrote into its read-only segments, whose pages are no longer the file's.
fn has_text_relocations(base: usize, headers: &[libc::Elf64_Phdr]) -> bool {
    const DT_NULL: usize = 0;
    const DT_TEXTREL: usize = 22;
    const DT_FLAGS: usize = 30;
    const DF_TEXTREL: usize = 4;
    let Some(dynamic) = headers.iter().find(|ph| ph.p_type == libc::PT_DYNAMIC) else {
        return false;
    };
    let mut entry = (base + dynamic.p_vaddr as usize) as *const [usize; 2];
    loop {
        // SAFETY: PT_DYNAMIC locates the object's loaded dynamic section, an array of (tag, value) pairs of
        // machine words ended by DT_NULL; the loop stops there.
        let [tag, value] = unsafe { entry.read() };
        match tag {
            DT_NULL => return false,
            DT_TEXTREL => return true,
            DT_FLAGS if value & DF_TEXTREL != 0 => return true,
            _ => {}
        }
        // SAFETY: not past DT_NULL, so the next entry is inside the array.
        entry = unsafe { entry.add(1) };
    }
}

/// Pages per mapping `split_code_mappings` makes: fault-around maps at most that many. Measured (BENCHMARKS.md): 1
/// page peaked ~0.1 MB lower than 2 but took ~4 ms more CPU at start (twice the madvise calls and mappings); 4
/// peaked ~0.3 MB higher for ~1 ms less.
const SPLIT_PAGES: usize = 2;

/// dl_iterate_phdr's callback for `split_code_mappings`: MADV_RANDOM on every other chunk of each read-only
/// PT_LOAD segment of one object (not the vDSO, which is the kernel's), then MADV_DONTNEED on all of them, which
/// drops what the loader and the start-up before `main` mapped of them.
unsafe extern "C" fn split_segments(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: sysconf only reads a constant of the system.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    // SAFETY: dl_iterate_phdr passes a valid `dl_phdr_info` for the duration of the call.
    let info = unsafe { &*info };
    // SAFETY: `dlpi_name` is null or a NUL-terminated string of the loader's, alive during the call.
    let name =
        (!info.dlpi_name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) });
    if info.dlpi_phdr.is_null() || name.is_some_and(|n| n.to_bytes().starts_with(b"linux-")) {
        return 0;
    }
    // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers of a loaded object.
    let headers =
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    let text_relocations = has_text_relocations(info.dlpi_addr as usize, headers);
    let read_only = headers
        .iter()
        .filter(|ph| ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W == 0);
    // SAFETY: `data` is `split_code_mappings`' `walk`, alive and not otherwise borrowed during the call.
    let walk = unsafe { &mut *data.cast::<Walk>() };
    for ph in read_only {
        let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
        let end = start + ph.p_memsz as usize;
        // Whole pages inside the segment: a page it shares with a neighbour is left as it is.
        let first = start.next_multiple_of(page);
        let mut at = first;
        let chunk = SPLIT_PAGES * page;
        while at + chunk <= end {
            // SAFETY: advice only (nothing is freed, moved or changed) on pages the loader mapped read-only.
            if unsafe { libc::madvise(at as *mut libc::c_void, chunk, libc::MADV_RANDOM) } == 0 {
                walk.advised += 1;
            }
            at += 2 * chunk;
        }
        let whole = end.saturating_sub(first) / page * page;
        if whole > 0 && walk.drop_mapped && !text_relocations {
            // SAFETY: a read-only segment of an object without text relocations holds only the file's own pages,
            // never written: dropping them loses nothing, and a later use maps the page again from the page cache.
            unsafe { libc::madvise(first as *mut libc::c_void, whole, libc::MADV_DONTNEED) };
        }
    }
    0
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
