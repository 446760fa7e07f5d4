//! tracefs for one run: found (or mounted, when it is not), set up to record the latency events of the RT CPU
//! only into that CPU's ring buffer, and put back as it was found when dropped — every file's old value is read
//! before the new one is written, and restored in reverse order; a tracefs we mounted is unmounted. What the run
//! then reads and writes through it: tracefs/read.rs.

mod hwlat;
mod read;
mod senders;

use crate::host::Host;

pub(crate) use hwlat::{HwlatSettings, HwlatTracer, restore_leftovers};
pub(crate) use read::drain;

pub(crate) const TRACEFS: &str = "/sys/kernel/tracing";
/// Older systems only have it under debugfs.
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";
/// Per-CPU buffer for the RT CPU: at ~1 MB/s of text-equivalent events at 1 kHz, seconds of slack for the reader.
const BUFFER_KB: &str = "4096";

/// The events that explain a late wakeup on the RT CPU, by tracefs path under events/. Missing ones are skipped
/// (irq_vectors is x86, ipi_entry/exit arm64; napi/net show the NIC receive path). Each one that fires in the
/// wakeup path of every cycle costs the loop time, so the cyclic run leaves out two that add nothing there
/// (BENCHMARKS.md, set 7: the median wakeup 1.11 → 1.03–1.05 of plain): sched_waking (the loop is woken by its
/// own timer on its own CPU, where sched_wakeup tells the same moment) and x86's local_timer_entry/exit (the
/// timer interrupt's work is its hrtimer callbacks, which are recorded — the tick among them).
pub(crate) const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "ipi/ipi_entry",
    "ipi/ipi_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
    "napi/napi_poll",
    "net/netif_receive_skb",
];

/// NIC mode (every CPU) adds the receive path: who woke the receiver (sched_waking fires on the waker's CPU,
/// sched_wakeup may fire on the receiver's), the timer interrupt, where the frame entered (netif_rx), where
/// NET_RX was raised, and the sends.
pub(crate) const NIC_EVENTS: &[&str] = &[
    "sched/sched_waking",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "net/netif_rx",
    "net/net_dev_xmit",
    "irq/softirq_raise",
];

#[derive(Debug, thiserror::Error)]
pub(crate) enum TraceError {
    #[error("no tracefs: {TRACEFS} cannot be mounted here (kernel without CONFIG_TRACING?)")]
    Missing,
    #[error("mounting tracefs on {TRACEFS}: {0}")]
    Mount(std::io::Error),
    #[error("tracefs is in use ({0}); {1} would disturb that trace (run without {1})")]
    Busy(String, &'static str),
    #[error(
        "this kernel has no hwlat tracer: CONFIG_HWLAT_TRACER; Debian's linux-image-rt-amd64 / linux-image-amd64 have it"
    )]
    NoHwlat,
    #[error("tracefs: {0}")]
    Host(#[from] crate::host::HostError),
    #[error("tracefs: {0}: {1}")]
    Io(String, std::io::Error),
}

impl From<TraceError> for crate::error::Error {
    fn from(e: TraceError) -> Self {
        crate::error::Error::failed(e.to_string())
    }
}

pub(crate) struct Tracefs {
    host: Host,
    dir: String,
    mounted: bool,
    /// The old values, in the order they were changed.
    saved: Vec<SavedTracefs>,
    pub(crate) events: Vec<String>,
    /// The same as SYS/NAME.
    enabled: Vec<String>,
    /// The kernel offers the timerlat tracer (not used: it runs its own SCHED_FIFO thread on the CPU).
    pub(crate) timerlat: bool,
    /// The instance recording the IPIs' senders (senders.rs), relative to `dir`.
    instance: Option<String>,
}

/// One file's value as it was found: what the kernel takes back, and under a --root tree (ordinary files) the
/// bytes themselves, so that the tree is left byte for byte as it was.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SavedTracefs {
    pub(crate) rel: String,
    pub(crate) value: String,
    pub(crate) raw: String,
}

/// The current value of a tracefs file as it must be written back: trace_clock lists all clocks with the current
/// one in brackets; buffer_size_kb reads "7 (expanded: 1408)" before the buffer was first used.
pub(crate) fn restorable(raw: &str) -> String {
    let raw = raw.trim();
    if let (Some(a), Some(b)) = (raw.find('['), raw.find(']'))
        && a < b
    {
        return raw[a + 1..b].to_string();
    }
    if let Some((_, e)) = raw.split_once("(expanded: ") {
        return e.trim_end_matches(')').to_string();
    }
    raw.to_string()
}

impl Tracefs {
    /// Finds tracefs, mounting it on /sys/kernel/tracing when it is not mounted (live machine only).
    pub(crate) fn open(host: &Host) -> Result<Self, TraceError> {
        let found = [TRACEFS, DEBUGFS_TRACING]
            .into_iter()
            .find(|d| host.exists(&format!("{d}/trace_marker")));
        let kernel = host.kernel().filter(|_| host.is_dir(TRACEFS));
        let (dir, mounted) = match (found, kernel) {
            (Some(d), _) => (d.to_string(), false),
            (None, Some(k)) => {
                crate::sys::fs::mount_tracefs(k, &host.path(TRACEFS)).map_err(TraceError::Mount)?;
                (TRACEFS.to_string(), true)
            }
            (None, None) => return Err(TraceError::Missing),
        };
        let mut t = Tracefs {
            host: host.clone(),
            dir,
            mounted,
            saved: Vec::new(),
            events: Vec::new(),
            enabled: Vec::new(),
            timerlat: false,
            instance: None,
        };
        t.timerlat = t
            .read("available_tracers")
            .is_ok_and(|s| s.split_whitespace().any(|w| w == "timerlat"));
        Ok(t)
    }

    fn abs(&self, rel: &str) -> String {
        format!("{}/{rel}", self.dir)
    }

    fn read(&self, rel: &str) -> Result<String, TraceError> {
        Ok(self.host.read(&self.abs(rel))?)
    }

    /// The value of `rel` as it must be put back.
    fn found(&self, rel: &str) -> Result<SavedTracefs, TraceError> {
        let raw = self.read(rel)?;
        Ok(SavedTracefs {
            rel: rel.to_string(),
            value: restorable(&raw),
            raw,
        })
    }

    /// Writes `value`, keeping the old value for the restore.
    fn set(&mut self, rel: &str, value: &str) -> Result<(), TraceError> {
        let old = self.found(rel)?;
        self.host.write_value(&self.abs(rel), value)?;
        self.saved.push(old);
        Ok(())
    }

    /// Writes the saved values back, last changed first. A value the kernel refuses because of another one not yet
    /// restored (hwlat's width must stay below its window) is tried once more after the others.
    /// Puts every changed file back, newest change first; a write the kernel refused is tried once more after
    /// the others (one may wait on another). Returns what still could not be put back, one line each, for the user.
    fn restore(&mut self) -> Vec<String> {
        let mut refused = Vec::new();
        while let Some(s) = self.saved.pop() {
            if self.put_back(&s).is_err() {
                refused.push(s);
            }
        }
        refused
            .into_iter()
            .filter_map(|s| {
                self.put_back(&s).err().map(|e| {
                    format!(
                        "could not put back {} (was {:?}): {e}; write it back by hand",
                        self.abs(&s.rel),
                        s.value
                    )
                })
            })
            .collect()
    }

    fn put_back(&self, s: &SavedTracefs) -> Result<(), crate::host::HostError> {
        self.host.put_back(&self.abs(&s.rel), &s.raw, &s.value)
    }

    /// Records `EVENTS` (and with `nic`, NIC_EVENTS) on `cpus` only, on CLOCK_MONOTONIC (so the loop's deadlines
    /// are trace times), into cleared per-CPU buffers. Refuses when someone else is tracing.
    pub(crate) fn configure(&mut self, cpus: &[usize], nic: bool) -> Result<(), TraceError> {
        self.refuse_busy("--trace")?;
        self.set("tracing_on", "0")?;
        self.set("trace_clock", "mono")?;
        // The mask in the kernel's format (parse::mask, the one writer of masks).
        self.set("tracing_cpumask", &crate::parse::mask::format(cpus, 0))?;
        for cpu in cpus {
            self.set(&format!("per_cpu/cpu{cpu}/buffer_size_kb"), BUFFER_KB)?;
            self.host
                .write_value(&self.abs(&format!("per_cpu/cpu{cpu}/trace")), "")?;
        }
        let extra = if nic { NIC_EVENTS } else { &[] };
        for e in EVENTS.iter().chain(extra) {
            let rel = format!("events/{e}/enable");
            if self.host.exists(&self.abs(&rel)) {
                self.set(&rel, "1")?;
                self.events
                    .push(e.rsplit('/').next().unwrap_or(e).to_string());
                self.enabled.push(e.to_string());
            }
        }
        self.set("tracing_on", "1")
    }

    /// Err when someone else traces: another tracer than nop, or events enabled. `option` is what would disturb it.
    fn refuse_busy(&self, option: &'static str) -> Result<(), TraceError> {
        let tracer = self.read("current_tracer")?.trim().to_string();
        let enabled = self.read("set_event")?;
        if tracer != "nop" || !enabled.trim().is_empty() {
            let n = enabled.lines().count();
            return Err(TraceError::Busy(
                format!("current_tracer={tracer}, {n} events enabled"),
                option,
            ));
        }
        Ok(())
    }

    /// Stops recording (before the last reads of the pipe).
    pub(crate) fn stop(&self) {
        let _ = self.host.write_value(&self.abs("tracing_on"), "0");
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        // A drop has no caller to hand an error to, and a tracer left running is the user's to know about.
        let left = self.remove_instance();
        for line in self.restore().into_iter().chain(left) {
            eprintln!("rmp-eval: {line}");
        }
        if self.mounted {
            let _ = crate::sys::fs::umount(&self.host.path(&self.dir));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_they_are_written_back() {
        // Read on the development VM's freshly mounted tracefs (kernel 6.18).
        assert_eq!(
            restorable("[local] global counter uptime perf mono mono_raw boot tai x86-tsc\n"),
            "local"
        );
        assert_eq!(restorable("7 (expanded: 1408)\n"), "1408");
        assert_eq!(restorable("3\n"), "3");
    }

    #[test]
    fn a_root_without_tracefs_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            Tracefs::open(&Host::with_root(d.path())),
            Err(TraceError::Missing)
        ));
    }
}
