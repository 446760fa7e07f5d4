//! The RT environment, set up as cyclictest does: memory locked, /dev/cpu_dma_latency held at 0, and an RT thread
//! that is pinned, SCHED_FIFO, with a small pre-faulted stack and every signal blocked (signals go to the main
//! thread, which turns them into a stop flag).

use std::fs::File;
use std::io::Write;
use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::host::{CPU_DMA_LATENCY, Host};
use crate::sys::process as sys;

/// Stack of the RT threads: small, so that mlockall(MCL_FUTURE) does not pin 8 MiB per thread (64 KiB overflowed
/// in the debug build of the NIC receiver).
pub(crate) const RT_STACK: usize = 256 * 1024;
/// How much of it is touched before the loop starts, so that the loop never faults a stack page in.
const PREFAULT: usize = 64 * 1024;

/// malloc told never to give memory back, then mlockall(MCL_CURRENT | MCL_FUTURE), as cyclictest does: every page
/// of the process resident before it is used, threads created later included, so no RT loop takes a page fault on
/// any path; and no thread's free or trim unmaps memory (a TLB-shootdown IPI to the RT core) while they run.
pub(crate) fn lock_memory() -> Result<()> {
    sys::keep_freed_memory();
    sys::lock_all_memory().map_err(|e| {
        Error::failed(format!(
            "cannot lock memory (mlockall: {e}): run as root or raise RLIMIT_MEMLOCK"
        ))
    })
}

/// Undoes `lock_memory`, so that a run inside a longer command (fix's before/after) leaves no lock behind.
pub(crate) fn unlock_memory() {
    let _ = sys::unlock_all_memory();
}

/// /dev/cpu_dma_latency held at 0 while this lives; closing the file releases the request.
pub(crate) struct DmaLatency {
    file: Option<File>,
    /// Why it could not be held, when it could not (the run goes on: it is a tuning, not a precondition).
    pub(crate) note: Option<String>,
}

impl DmaLatency {
    pub(crate) fn hold(host: &Host) -> Self {
        let path = host.path(CPU_DMA_LATENCY);
        let opened = std::fs::OpenOptions::new().write(true).open(&path);
        match opened.and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|_| f)) {
            Ok(f) => DmaLatency {
                file: Some(f),
                note: None,
            },
            Err(e) => DmaLatency {
                file: None,
                note: Some(format!(
                    "{CPU_DMA_LATENCY} not held at 0 ({e}); deep C-states may add latency"
                )),
            },
        }
    }

    pub(crate) fn held(&self) -> bool {
        self.file.is_some()
    }
}

/// Whether this process may run a thread at SCHED_FIFO `priority`: tried on a short-lived thread, so that a run
/// without permission says so before it prints or measures anything. The same message as `enter_rt`.
pub(crate) fn probe_fifo(priority: u8) -> Result<()> {
    let t = std::thread::spawn(move || sys::set_fifo(priority));
    t.join()
        .unwrap_or_else(|_| Err(std::io::Error::from_raw_os_error(libc::EPERM)))
        .map_err(|e| fifo_error(priority, e))
}

/// SCHED_FIFO refused: EPERM says what to do, anything else is passed on.
fn fifo_error(priority: u8, e: std::io::Error) -> Error {
    if e.raw_os_error() == Some(libc::EPERM) {
        Error::failed(format!(
            "no permission for SCHED_FIFO priority {priority}: run as root (or with CAP_SYS_NICE)"
        ))
    } else {
        Error::sys(format!("SCHED_FIFO priority {priority}"), e)
    }
}

/// Pins the calling thread, makes it SCHED_FIFO at `priority`, blocks every signal in it and pre-faults its stack.
pub(crate) fn enter_rt(core: usize, priority: u8) -> Result<()> {
    sys::block_all_signals().map_err(|e| Error::sys("pthread_sigmask", e))?;
    pin_to(&[core])?;
    sys::set_fifo(priority).map_err(|e| fifo_error(priority, e))?;
    prefault_stack();
    Ok(())
}

/// Pins the calling thread to these CPUs.
pub(crate) fn pin_to(cpus: &[usize]) -> Result<()> {
    let set = sys::Cpus::of(cpus).map_err(|c| Error::usage(format!("CPU {c} is out of range")))?;
    sys::set_affinity(&set).map_err(|e| Error::sys(format!("pinning to CPU {cpus:?}"), e))
}

#[inline(never)]
fn prefault_stack() {
    let mut buf = [0u8; PREFAULT];
    // Touch one byte per page; black_box keeps the writes.
    for i in (0..PREFAULT).step_by(4096) {
        buf[i] = 1;
    }
    std::hint::black_box(&mut buf);
}

/// Moves the calling thread, the process's last, onto `core` for the process's end: the core has held the
/// process's page tables (lazily) since its last loop ended, so the teardown of its memory at exit, done from
/// another CPU, is a TLB-shootdown IPI to the core; done on the core, it is local. cyclictest, whose main thread
/// runs on the measured CPU, ends there too. What this costs the core instead: one wakeup, at most.
pub(crate) fn end_on(core: usize) {
    let _ = pin_to(&[core]);
    test_seam_record_end();
}

/// A test seam, compiled only with the `test-seams` feature (see `test_seam_record_threads`): with
/// RMP_EVAL_TEST_END_FILE set, `end_on` writes "THREADS CPUS": how many threads the process has left and the
/// calling thread's allowed CPUs (tests/run/ends_on_core.rs).
#[cfg(feature = "test-seams")]
fn test_seam_record_end() {
    let Some(out) = std::env::var_os("RMP_EVAL_TEST_END_FILE") else {
        return;
    };
    let host = Host::live();
    let threads = host.list("/proc/self/task").unwrap_or_default().len();
    let status = host.read("/proc/thread-self/status").unwrap_or_default();
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("?")
        .trim();
    let _ = std::fs::write(out, format!("{threads} {cpus}\n"));
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_record_end() {}

/// A thread running at RT priority, started by `spawn_rt`.
pub(crate) struct RtThread<T> {
    handle: JoinHandle<Option<T>>,
}

impl<T> RtThread<T> {
    pub(crate) fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    pub(crate) fn join(self) -> Result<T> {
        match self.handle.join() {
            Ok(Some(v)) => Ok(v),
            _ => Err(Error::failed("the RT thread stopped unexpectedly")),
        }
    }
}

/// Starts `f` on a new thread set up by `enter_rt`; returns only when the setup is done, with its error if it
/// failed (then `f` never runs). When `f` returns, the calling thread is unparked (see `session::supervise`).
pub(crate) fn spawn_rt<F, T>(name: &str, core: usize, priority: u8, f: F) -> Result<RtThread<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_rt_ready(name, core, priority, || (), move |()| f())
}

/// `spawn_rt`, with `ready` run on the thread once it is set up and before this returns: what must be done on the
/// core before the run goes on (the core's first SMI reading, which from another CPU would be an IPI to it);
/// `f` takes what it gives.
pub(crate) fn spawn_rt_ready<R, F, T>(
    name: &str,
    core: usize,
    priority: u8,
    ready: impl FnOnce() -> R + Send + 'static,
    f: F,
) -> Result<RtThread<T>>
where
    F: FnOnce(R) -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel::<Result<()>>(1);
    // The spawning thread supervises; unparking it when done lets it wait without polling.
    let waker = std::thread::current();
    let handle = std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(RT_STACK)
        .spawn(move || match enter_rt(core, priority) {
            Ok(()) => {
                test_seam_record_threads();
                let r = ready();
                let _ = tx.send(Ok(()));
                let v = f(r);
                waker.unpark();
                Some(v)
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                None
            }
        })
        .map_err(|e| Error::sys("starting the RT thread", e))?;
    match rx.recv() {
        Ok(Ok(())) => Ok(RtThread { handle }),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => {
            let _ = handle.join();
            Err(Error::failed("the RT thread stopped during its setup"))
        }
    }
}

/// A test seam, compiled only with the `test-seams` feature (see fix/apply.rs's): with
/// RMP_EVAL_TEST_THREADS_FILE set, the first RT thread of the process, once set up and before its loop, writes
/// each thread of the process as "TID NAME POLICY CPUS" (POLICY: /proc's field 41, 1 = SCHED_FIFO; CPUS: the
/// allowed list), so that a test sees every mask at the instant the first RT thread starts: tests/run/confined.rs.
#[cfg(feature = "test-seams")]
fn test_seam_record_threads() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static DONE: AtomicBool = AtomicBool::new(false);
    let Some(out) = std::env::var_os("RMP_EVAL_TEST_THREADS_FILE") else {
        return;
    };
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let host = Host::live();
    let mut lines = String::new();
    for tid in host.list("/proc/self/task").unwrap_or_default() {
        let stat = host
            .read(&format!("/proc/self/task/{tid}/stat"))
            .unwrap_or_default();
        let status = host
            .read(&format!("/proc/self/task/{tid}/status"))
            .unwrap_or_default();
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let policy = stat[close + 2..].split_whitespace().nth(38).unwrap_or("?");
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("?")
            .trim();
        lines += &format!("{tid} {} {policy} {cpus}\n", &stat[open + 1..close]);
    }
    let _ = std::fs::write(out, lines);
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_record_threads() {}
