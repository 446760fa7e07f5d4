//! System Management Interrupts during a run: MSR_SMI_COUNT of the RT core and one housekeeping CPU. The kernel
//! reads another CPU's MSR through a function-call IPI to it, so the RT core's counter is read during the run only
//! by the RT thread on that core (a local rdmsr, as cyclictest --smi does), between its cycles (after the wakeup's
//! time is taken), every ~100 ms, into an atomic the supervising thread reads once a counters window; that keeps
//! late cycles attributable to the second that held the SMIs, which a reading before and after the run alone
//! would not. The supervising thread reads the housekeeping CPU's itself, through `Host`. `run --hwlat` has no RT
//! thread and its detector runs on both CPUs counted: a thread pinned to each reads that CPU's counter there
//! (`OwnCpuReaders`). An SMI stops the CPU for the
//! firmware's handler, invisibly to the kernel: only this counter shows it. Where it cannot be read (arm64, AMD,
//! no msr driver, not root) the result says that SMIs were not counted and why — never a zero.

use std::os::unix::fs::FileExt;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host::{Host, HostError};
use crate::machine::msr::{self, MsrError};

/// How often the RT thread reads its core's counter.
const LOCAL_EVERY_US: u64 = 100_000;
/// Marks a failed local read in the shared value: this bit and the errno below it (a count has 32 bits).
const READ_FAILED: u64 = 1 << 40;

/// Points kept per series; past that neighbours are summed and each point covers twice as long.
const CAP: usize = 2048;
/// Windows holding SMIs kept for the attribution of late cycles (the earliest).
pub(crate) const MAX_WINDOWS: usize = 1024;

/// The msr driver, loaded for the run when it was not, and unloaded again when this is dropped.
pub(crate) struct MsrDriver {
    unload: bool,
}

impl MsrDriver {
    /// Makes /dev/cpu/N/msr exist on the live machine: `modprobe msr` when the driver is not loaded. Says what
    /// it did, for the result.
    pub(crate) fn ensure(host: &Host, cpu: usize) -> (MsrDriver, String) {
        let none = MsrDriver { unload: false };
        // modprobe acts on the running kernel, never for a tree.
        if host.kernel().is_none() {
            return (none, "a tree, not the machine: no driver to load".into());
        }
        if host.exists(&msr::dev(cpu)) {
            return (none, "the msr driver was loaded".into());
        }
        if host.exists(msr::MSR_MODULE) {
            return (none, "the msr driver is loaded but shows no device".into());
        }
        match Command::new("modprobe").arg("msr").output() {
            Ok(o) if o.status.success() => (
                MsrDriver { unload: true },
                "the msr driver was loaded for the run and unloaded after it".into(),
            ),
            Ok(o) => (
                none,
                format!(
                    "modprobe msr failed: {}",
                    crate::parse::text::sanitize(String::from_utf8_lossy(&o.stderr).trim(), 200)
                ),
            ),
            Err(e) => (none, format!("modprobe msr could not run: {e}")),
        }
    }
}

impl Drop for MsrDriver {
    fn drop(&mut self) {
        if self.unload {
            let _ = Command::new("modprobe").args(["-r", "msr"]).output();
        }
    }
}

/// Reads the counters of the CPUs counted: the RT core's through the value its RT thread keeps (once
/// `local_reader` handed that out), the others through `Host`.
pub(crate) struct SmiCounter {
    host: Host,
    pub(crate) cpus: Vec<usize>,
    local: Option<Arc<AtomicU64>>,
}

impl SmiCounter {
    /// The RT core and one housekeeping CPU (the first other online one), with the housekeeping CPUs' first
    /// reading, which must succeed, else the reason is returned. The RT core's register is only opened here: this
    /// thread's read of it would be a function-call IPI to the core, so its first reading is the RT thread's, on
    /// the core, before its loop (`LocalSmi::read`), or `Counters::begin`'s when no RT thread runs there. Its
    /// slot in the readings returned holds 0 until then.
    pub(crate) fn open(
        host: &Host,
        rt: usize,
        busy: &[usize],
    ) -> Result<(SmiCounter, Vec<u64>), MsrError> {
        if let Some(why) = msr::not_x86(host) {
            return Err(why);
        }
        let dev = msr::dev(rt);
        std::fs::File::open(host.path(&dev))
            .map_err(|e| MsrError::Host(HostError::from_io(&dev, e)))?;
        let c = SmiCounter {
            host: host.clone(),
            cpus: pair(host, rt, busy),
            local: None,
        };
        let mut first = vec![0];
        for &cpu in &c.cpus[1..] {
            test_seam_record_read(cpu);
            first.push(msr::smi_count(host, cpu)?);
        }
        Ok((c, first))
    }

    pub(crate) fn read(&self) -> Result<Vec<u64>, MsrError> {
        self.cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| match (i, &self.local) {
                (0, Some(v)) => local_value(v.load(Relaxed), cpu),
                _ => {
                    test_seam_record_read(cpu);
                    msr::smi_count(&self.host, cpu)
                }
            })
            .collect()
    }

    /// Whether the RT core's counter is read by the thread running there (else `read` reads it from the calling
    /// thread's CPU: a function-call IPI to the core when that is another CPU, as the supervisor's is).
    pub(crate) fn core_read_locally(&self) -> bool {
        self.local.is_some()
    }

    /// The reader for the RT thread on the RT core, whose first `read`, on the core before the loop, is the
    /// count the run starts from; from then on the supervising thread never reads that core's register itself.
    /// None when the register file cannot be opened (the supervisor then reads it: nothing runs there).
    pub(crate) fn local_reader(&mut self, period_us: u32) -> Option<LocalSmi> {
        let file = std::fs::File::open(self.host.path(&msr::dev(self.cpus[0]))).ok()?;
        let value = Arc::new(AtomicU64::new(READ_FAILED | libc::EAGAIN as u64));
        self.local = Some(Arc::clone(&value));
        let every = (LOCAL_EVERY_US / u64::from(period_us.max(1))).max(1);
        Some(LocalSmi {
            cpu: self.cpus[0],
            file,
            every,
            left: every,
            value,
        })
    }
}

/// The RT core and one housekeeping CPU: the first other online one that runs none of the run's RT threads
/// (`busy`; a thread set's may run on several CPUs), whose register the supervisor reads once a window. None when
/// every CPU runs one: reading another RT CPU's from there would be an IPI to it each window.
fn pair(host: &Host, rt: usize, busy: &[usize]) -> Vec<usize> {
    let mut cpus = vec![rt];
    let online = crate::machine::online_cpus(host).unwrap_or_default();
    cpus.extend(online.into_iter().find(|c| *c != rt && !busy.contains(c)));
    cpus
}

/// One CPU's last reading by its own thread: the value (as `LocalSmi` keeps it) and when it was taken.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    value: u64,
    at_ns: i128,
}

/// The SMI counters of the RT core and one housekeeping CPU, each read by a thread pinned to that CPU every
/// `every` (SCHED_OTHER: it runs between the detector's samples): a local rdmsr, where another thread's read would
/// send the CPU an IPI. Stopped and joined when dropped.
pub(crate) struct OwnCpuReaders {
    pub(crate) cpus: Vec<usize>,
    last: Vec<Arc<Mutex<Reading>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// The counts of a reading of every CPU, and the span of times (realtime ns) in which they were taken.
pub(crate) type Counts = (Vec<u64>, (i128, i128));

impl OwnCpuReaders {
    /// Starts the readers; returns once each has its first reading (which must succeed), with those readings.
    pub(crate) fn start(
        host: &Host,
        rt: usize,
        every: Duration,
    ) -> Result<(OwnCpuReaders, Counts), MsrError> {
        if let Some(why) = msr::not_x86(host) {
            return Err(why);
        }
        let mut r = OwnCpuReaders {
            cpus: pair(host, rt, &[]),
            last: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        for cpu in r.cpus.clone() {
            let (last, thread) = r.spawn(host, cpu, every)?;
            r.last.push(last);
            r.threads.push(thread);
        }
        let first = r.read()?;
        Ok((r, first))
    }

    /// Each CPU's last reading; the first failed one's reason.
    pub(crate) fn read(&self) -> Result<Counts, MsrError> {
        let mut span = (i128::MAX, i128::MIN);
        let mut counts = Vec::new();
        for (m, &cpu) in self.last.iter().zip(&self.cpus) {
            let r = *m.lock().unwrap_or_else(PoisonError::into_inner);
            counts.push(local_value(r.value, cpu)?);
            span = (span.0.min(r.at_ns), span.1.max(r.at_ns));
        }
        Ok((counts, span))
    }

    /// A thread pinned to `cpu` reading its counter every `every`, once its first reading is in.
    fn spawn(
        &self,
        host: &Host,
        cpu: usize,
        every: Duration,
    ) -> Result<(Arc<Mutex<Reading>>, JoinHandle<()>), MsrError> {
        let path = msr::dev(cpu);
        let io = |e| {
            msr::why(
                host,
                path.clone(),
                msr::SMI_COUNT,
                HostError::from_io(&path, e),
            )
        };
        let file = std::fs::File::open(host.path(&path)).map_err(io)?;
        let last = Arc::new(Mutex::new(Reading::default()));
        let (mine, stop) = (Arc::clone(&last), Arc::clone(&self.stop));
        let (first, in_) = std::sync::mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("rmp-eval-smi".into())
            .spawn(move || {
                // Off its CPU a read would be the cross-CPU one this thread is there to avoid.
                let pinned = pin(cpu);
                let mut first = Some(first);
                loop {
                    let value = match &pinned {
                        Ok(()) => read_register(&file, cpu),
                        Err(e) => failed(e),
                    };
                    let at_ns = i128::from(crate::sys::clock::realtime_ns());
                    *mine.lock().unwrap_or_else(PoisonError::into_inner) = Reading { value, at_ns };
                    if let Some(f) = first.take() {
                        let _ = f.send(());
                    }
                    if value & READ_FAILED != 0 || stop.load(Relaxed) {
                        return;
                    }
                    std::thread::sleep(every);
                }
            })
            .map_err(io)?;
        let _ = in_.recv();
        Ok((last, thread))
    }
}

/// Keeps the calling thread on `cpu`.
fn pin(cpu: usize) -> std::io::Result<()> {
    let only = crate::sys::process::Cpus::of(&[cpu])
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    crate::sys::process::set_affinity(&only)
}

impl Drop for OwnCpuReaders {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One pread of MSR_SMI_COUNT through `file` (CPU `cpu`'s register): the count, or READ_FAILED and the errno.
fn read_register(file: &std::fs::File, cpu: usize) -> u64 {
    test_seam_record_read(cpu);
    let mut b = [0u8; 8];
    match file.read_at(&mut b, msr::SMI_COUNT) {
        Ok(8) => u64::from_le_bytes(b) & 0xffff_ffff,
        Ok(_) => READ_FAILED | libc::EIO as u64,
        Err(e) => failed(&e),
    }
}

fn failed(e: &std::io::Error) -> u64 {
    READ_FAILED | (e.raw_os_error().unwrap_or(libc::EIO) as u64 & 0xffff)
}

/// A value the RT thread kept: its count, or the errno of a failed read.
fn local_value(v: u64, cpu: usize) -> Result<u64, MsrError> {
    if v & READ_FAILED == 0 {
        return Ok(v);
    }
    let e = std::io::Error::from_raw_os_error((v & 0xffff) as i32);
    Err(MsrError::Host(HostError::from_io(&msr::dev(cpu), e)))
}

/// The RT core's SMI counter as its own RT thread reads it: an open /dev/cpu/N/msr and the value shared with the
/// supervising thread.
pub(crate) struct LocalSmi {
    cpu: usize,
    file: std::fs::File,
    every: u64,
    left: u64,
    value: Arc<AtomicU64>,
}

impl LocalSmi {
    /// Called once a cycle, after the wakeup's time was taken: reads the register every `every` cycles.
    #[inline]
    pub(crate) fn between_cycles(&mut self) {
        self.left -= 1;
        if self.left == 0 {
            self.left = self.every;
            self.read();
        }
    }

    /// One pread of MSR_SMI_COUNT on this CPU (the calling thread must run on the counted core).
    pub(crate) fn read(&self) {
        self.value
            .store(read_register(&self.file, self.cpu), Relaxed);
    }
}

/// A test seam, compiled only with the `test-seams` feature (see fix/apply.rs's): with RMP_EVAL_TEST_MSR_FILE set,
/// each reading of a CPU's SMI counter appends "CPU ALLOWED" (the register's CPU, the reading thread's allowed
/// CPUs), so that a test sees whether a reading could cross CPUs: tests/run/hwlat.rs.
#[cfg(feature = "test-seams")]
fn test_seam_record_read(cpu: usize) {
    use std::io::Write;
    let Some(out) = std::env::var_os("RMP_EVAL_TEST_MSR_FILE") else {
        return;
    };
    let status = Host::live()
        .read("/proc/thread-self/status")
        .unwrap_or_default();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("?")
        .trim()
        .to_string();
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
    {
        // One write per line: with O_APPEND the readers of two CPUs never interleave within a line.
        let _ = f.write_all(format!("{cpu} {allowed}\n").as_bytes());
    }
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_record_read(_cpu: usize) {}

/// A window of the counters that held SMIs on the RT core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SmiWindow {
    /// Seconds from the start of the loop.
    pub(crate) start_s: f64,
    pub(crate) seconds: f64,
    pub(crate) count: u64,
}

/// The SMIs of a run (the `interference.smi` key of its JSON).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct Smi {
    /// The CPUs counted: the RT core, then one housekeeping CPU.
    pub(crate) cpus: Vec<usize>,
    /// SMIs on each of `cpus` over the run; None when they were not counted.
    pub(crate) total: Option<Vec<u64>>,
    /// Why SMIs were not counted (set whenever `total` is None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) not_counted: Option<String>,
    /// What was done with the msr driver.
    #[serde(default)]
    pub(crate) driver: String,
    /// SMIs on the RT core per interval of `interval_s` (a counters window; doubled each time the series is
    /// halved to stay within 2048 points).
    pub(crate) interval_s: f64,
    pub(crate) per_interval: Vec<u64>,
    /// The windows that held SMIs on the RT core, for the attribution of late cycles (at most MAX_WINDOWS).
    pub(crate) windows: Vec<SmiWindow>,
    #[serde(skip)]
    per: u64,
    #[serde(skip)]
    pending: Option<u64>,
    #[serde(skip)]
    pending_n: u64,
}

impl Smi {
    pub(crate) fn not_counted(why: String, driver: String) -> Self {
        Smi {
            not_counted: Some(why),
            driver,
            ..Default::default()
        }
    }

    pub(crate) fn counting(cpus: Vec<usize>, driver: String, window_s: f64) -> Self {
        Smi {
            total: Some(vec![0; cpus.len()]),
            cpus,
            driver,
            interval_s: window_s,
            per: 1,
            ..Default::default()
        }
    }

    /// Counting stopped mid-run (a read failed): what was counted is dropped, not reported as the run's.
    pub(crate) fn lost(&mut self, why: String) {
        self.total = None;
        self.not_counted = Some(format!(
            "the counter stopped being readable during the run: {why}"
        ));
    }

    /// One window's SMIs per CPU counted (`deltas[0]` the RT core's).
    pub(crate) fn add(&mut self, start_s: f64, seconds: f64, deltas: &[u64]) {
        let Some(total) = &mut self.total else { return };
        for (t, d) in total.iter_mut().zip(deltas) {
            *t += d;
        }
        let rt = deltas.first().copied().unwrap_or(0);
        if rt > 0 && self.windows.len() < MAX_WINDOWS {
            self.windows.push(SmiWindow {
                start_s,
                seconds,
                count: rt,
            });
        }
        self.pending = Some(self.pending.unwrap_or(0) + rt);
        self.pending_n += 1;
        if self.pending_n < self.per.max(1) {
            return;
        }
        self.per_interval.push(self.pending.take().unwrap_or(0));
        self.pending_n = 0;
        if self.per_interval.len() >= CAP {
            self.per_interval = self
                .per_interval
                .chunks(2)
                .map(|c| c.iter().sum())
                .collect();
            self.per = self.per.max(1) * 2;
            self.interval_s *= 2.0;
        }
    }

    /// Flushes a partly filled interval at the end of the run.
    pub(crate) fn close(&mut self) {
        if let Some(p) = self.pending.take() {
            self.per_interval.push(p);
        }
    }

    /// SMIs on the RT core in the second around `at_s` (from the start of the loop): the counters' windows are
    /// a second long and taken by another thread, so their edges are known to within a tenth of a second.
    pub(crate) fn near(&self, at_s: f64) -> Option<&SmiWindow> {
        const EDGE_S: f64 = 0.1;
        self.windows
            .iter()
            .find(|w| at_s >= w.start_s - EDGE_S && at_s <= w.start_s + w.seconds + EDGE_S)
    }

    /// The RT core's SMIs over the run, when counted.
    pub(crate) fn on_rt_core(&self) -> Option<u64> {
        self.total.as_ref().and_then(|t| t.first().copied())
    }
}

/// `--trace`: a late cycle whose second held SMIs on the RT core gets the firmware named in its verdict (the
/// trace cannot see System Management Mode: to it the CPU simply stopped). `cycle × period` places the cycle.
pub(crate) fn attribute_trace(
    t: &mut crate::trace::session::TraceReport,
    smi: &Smi,
    period_us: u32,
) {
    for e in t.explained.iter_mut().filter(|e| e.late_us > 0.0) {
        let at_s = e.cycle as f64 * f64::from(period_us) / 1e6;
        if let Some(w) = smi.near(at_s) {
            let n = if w.count == 1 {
                "1 SMI".to_string()
            } else {
                format!("{} SMIs", w.count)
            };
            e.verdict = format!(
                "{}; {n} on CPU {} in that second ({:.0}–{:.0} s) — the firmware (System Management Mode) is the \
                 likely cause, not fixable from Linux: look in the BIOS setup (power management, legacy USB, watchdog) or ask the board vendor",
                e.verdict,
                e.cpu,
                w.start_s,
                w.start_s + w.seconds
            );
        }
    }
}

/// The words of an attribution to the firmware, for a late cycle whose window held `n` SMIs on `cpu`.
pub(crate) fn blame(late_us: f64, n: u64, cpu: usize) -> String {
    let smis = if n == 1 { "1 SMI" } else { "SMIs" };
    let n_s = if n == 1 {
        String::new()
    } else {
        format!("{n} ")
    };
    format!(
        "late by {late_us:.0} µs: {n_s}{smis} on CPU {cpu} in this window — the firmware (System Management Mode), \
         not fixable from Linux: look in the BIOS setup (power management, legacy USB, watchdog) or ask the board vendor"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_interval_stays_bounded_and_keeps_every_smi() {
        let mut s = Smi::counting(vec![1, 0], "x".into(), 1.0);
        for i in 0..10_000u64 {
            let d = if i % 100 == 0 { 2 } else { 0 };
            s.add(i as f64, 1.0, &[d, 1]);
        }
        s.close();
        assert!(s.per_interval.len() <= CAP);
        assert_eq!(s.per_interval.iter().sum::<u64>(), 200);
        assert_eq!(s.total, Some(vec![200, 10_000]));
        assert_eq!(s.interval_s, 8.0);
        assert_eq!(s.windows.len(), 100);
        assert_eq!(s.near(300.5).map(|w| w.count), Some(2));
        assert_eq!(s.near(350.0), None);
    }

    #[test]
    fn not_counted_is_never_zero() {
        let s = Smi::not_counted("aarch64 has no SMIs".into(), String::new());
        assert_eq!(s.on_rt_core(), None);
        let v = serde_json::to_value(&s).unwrap();
        assert!(v["total"].is_null(), "{v}");
        assert_eq!(v["not_counted"], "aarch64 has no SMIs");
        let mut c = Smi::counting(vec![1], String::new(), 1.0);
        c.add(0.0, 1.0, &[3]);
        c.lost("EIO".into());
        assert_eq!(c.on_rt_core(), None);
        assert!(c.not_counted.unwrap().contains("EIO"));
    }

    #[test]
    fn the_blame_names_count_cpu_and_what_to_do() {
        assert_eq!(
            blame(212.4, 1, 1),
            "late by 212 µs: 1 SMI on CPU 1 in this window — the firmware (System Management Mode), not fixable \
             from Linux: look in the BIOS setup (power management, legacy USB, watchdog) or ask the board vendor"
        );
        assert!(blame(90.0, 3, 2).contains(": 3 SMIs on CPU 2"));
    }

    /// A late cycle 2.3 s into a 1 kHz run, in a second that held 2 SMIs, gets the firmware named; one at 5 s does not.
    #[test]
    fn trace_verdicts_name_the_firmware_in_an_smi_second() {
        use crate::trace::model::Explanation;
        let e = |cycle: u64| Explanation {
            cycle,
            late_us: 250.0,
            cpu: 1,
            timer_us: Some(250.0),
            woken_us: None,
            running_us: None,
            idle_us: 0.0,
            culprits: vec![],
            timeline: vec![],
            verdict: "late by 250 µs: the timer interrupt came 250 µs after the deadline".into(),
            path: None,
            lost: None,
        };
        let mut t = crate::trace::session::TraceReport {
            explained: vec![e(2_300), e(5_000)],
            ..Default::default()
        };
        let mut smi = Smi::counting(vec![1, 0], String::new(), 1.0);
        for i in 0..6 {
            smi.add(f64::from(i), 1.0, &[if i == 2 { 2 } else { 0 }, 0]);
        }
        attribute_trace(&mut t, &smi, 1000);
        assert!(
            t.explained[0]
                .verdict
                .ends_with("; 2 SMIs on CPU 1 in that second (2–3 s) — the firmware (System Management Mode) is the \
                            likely cause, not fixable from Linux: look in the BIOS setup (power management, legacy USB, watchdog) or ask the board vendor"),
            "{}",
            t.explained[0].verdict
        );
        assert!(
            !t.explained[1].verdict.contains("SMI"),
            "{}",
            t.explained[1].verdict
        );
    }

    /// The RT core's register is opened, not read, by the thread that opens the counters (its read would be a
    /// function-call IPI to the core): a core register that cannot be read yet does not stop it, and the count
    /// starts from the core's own first reading.
    #[test]
    fn opening_never_reads_the_rt_cores_register() {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        for cpu in [0usize, 1] {
            std::fs::create_dir_all(d.path().join(format!("dev/cpu/{cpu}"))).unwrap();
        }
        std::fs::File::create(d.path().join("dev/cpu/0/msr"))
            .unwrap()
            .write_all_at(&5u64.to_le_bytes(), msr::SMI_COUNT)
            .unwrap();
        // Empty: a read of the core's register fails until it is written below.
        let core = std::fs::File::create(d.path().join("dev/cpu/1/msr")).unwrap();
        std::fs::create_dir_all(d.path().join("sys/devices/system/cpu")).unwrap();
        std::fs::write(d.path().join("sys/devices/system/cpu/online"), "0-1\n").unwrap();
        let h = Host::with_root(d.path());
        let (mut c, first) =
            SmiCounter::open(&h, 1, &[1]).expect("the core's register is not read");
        assert_eq!(first, [0, 5]);
        let local = c.local_reader(1000).unwrap();
        core.write_all_at(&9u64.to_le_bytes(), msr::SMI_COUNT)
            .unwrap();
        local.read();
        assert_eq!(c.read().unwrap(), [9, 5]);
        // Without the core's device, nothing is counted.
        std::fs::remove_file(d.path().join("dev/cpu/1/msr")).unwrap();
        assert!(SmiCounter::open(&h, 1, &[1]).is_err());
    }

    /// The housekeeping CPU counted is one that runs none of the run's RT threads, or none at all.
    #[test]
    fn the_housekeeping_cpu_counted_runs_no_rt_thread() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/devices/system/cpu")).unwrap();
        let online = d.path().join("sys/devices/system/cpu/online");
        std::fs::write(&online, "0-3\n").unwrap();
        let h = Host::with_root(d.path());
        assert_eq!(pair(&h, 1, &[1]), [1, 0]);
        assert_eq!(pair(&h, 1, &[0, 1]), [1, 2]);
        assert_eq!(pair(&h, 3, &[0, 1, 2, 3]), [3]);
    }

    /// The reader through a `--root` tree's sparse files (the same pread as /dev/cpu/N/msr).
    #[test]
    fn the_counter_reads_a_trees_registers() {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        for (cpu, v) in [(0usize, 5u64), (1, 37_577)] {
            let dir = d.path().join(format!("dev/cpu/{cpu}"));
            std::fs::create_dir_all(&dir).unwrap();
            let f = std::fs::File::create(dir.join("msr")).unwrap();
            f.write_all_at(&v.to_le_bytes(), msr::SMI_COUNT).unwrap();
        }
        std::fs::create_dir_all(d.path().join("sys/devices/system/cpu")).unwrap();
        std::fs::write(d.path().join("sys/devices/system/cpu/online"), "0-1\n").unwrap();
        let h = Host::with_root(d.path());
        let (mut c, first) = SmiCounter::open(&h, 1, &[1]).unwrap();
        assert_eq!(c.cpus, [1, 0]);
        assert_eq!(first, [0, 5]);
        let local = c.local_reader(1000).unwrap();
        local.read();
        assert_eq!(c.read().unwrap(), [37_577, 5]);
        // A tree has no driver to load: nothing is run.
        let (drv, said) = MsrDriver::ensure(&h, 3);
        assert!(!drv.unload);
        assert_eq!(said, "a tree, not the machine: no driver to load");
    }
}
