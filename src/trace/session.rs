//! `--trace` around one run: tracefs set up for the RT CPU, the marker the loop writes, the reader thread; at the
//! end, tracing stopped, tracefs put back, the kept windows decoded into the event model and explained, and their
//! text rendered to be saved beside the result.

use serde::{Deserialize, Serialize};

use super::analyse::{Explanation, explain};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::collect::{Collected, Collector, Keep, Kept, Source};
use super::event::{TraceEntry, render};
use super::marker::{Gate, Marker};
use super::raw::NoRaw;
use super::raw::read::RawPipes;
use super::raw::{Schema, saved_cmdlines};
use super::receive;
use super::senders::{self, IpiSenders, UNKNOWN};
use super::tracefs::{TraceError, Tracefs};
use super::window::Window;
use crate::host::Host;

/// The `trace` key of a run's JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TraceReport {
    pub(crate) cpu: usize,
    /// The events recorded (those this kernel has).
    pub(crate) events: Vec<String>,
    /// Windows were kept for cycles later than this; None: the worst cycle only.
    pub(crate) break_us: Option<u32>,
    /// Markers read (the cyclic loop marks only late cycles: over break_us, or without it each new worst), and
    /// cycles over break_us.
    pub(crate) marks: u64,
    pub(crate) over_break: u64,
    /// Events the kernel dropped; a window with lost events may miss a cause.
    pub(crate) lost_events: u64,
    /// The kernel has the timerlat tracer (not used: it adds its own SCHED_FIFO thread on the CPU).
    pub(crate) timerlat_available: bool,
    /// Tick timer expiries per second on the CPU, counted in the trace.
    pub(crate) ticks_per_s: Option<f64>,
    /// The raw trace of the kept windows (text, as `trace-cmd report` prints), saved beside the result.
    pub(crate) file: Option<String>,
    /// The kept windows explained, worst first.
    pub(crate) explained: Vec<Explanation>,
    /// NIC mode: requests with no reply, as the trace shows them (the first of each gap between replies, at most
    /// 5, and the first sent after the last reply); `unanswered` counts the frames in the gaps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) lost_frames: Vec<Explanation>,
    #[serde(default)]
    pub(crate) unanswered: u64,
    /// NIC mode: the interface whose replies were traced (every online CPU, the receive path); None: the RT CPU.
    #[serde(default)]
    pub(crate) nic: Option<String>,
    /// NIC mode: the NIC's IRQs as /sys (device/msi_irqs) and /proc/interrupts name them when the run started
    /// (the list `check`'s nic_irqs_pinned and `fix`'s irq_affinity use); a path's `irq_of_nic` is judged by it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) nic_irqs: Vec<u32>,
    /// How the events were read: "raw" (trace_pipe_raw, decoded here) or "text (WHY)" (trace_pipe, when the
    /// raw pages cannot be read: an event we cannot decode, no kernel symbols, or RMP_EVAL_TRACE_READER=text).
    #[serde(default)]
    pub(crate) reader: String,
    /// Who sent the IPIs aimed at the RT CPUs (ipi_send events in an instance of the run's own), or why unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ipi_senders: Option<IpiSenders>,
    /// The text saved into `file`.
    #[serde(skip)]
    pub(crate) raw: String,
}

/// What is traced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scope {
    /// The cyclic loop's CPU only; the loop on it wakes every `period_ns` and marks only its late cycles.
    Cpu { core: usize, period_ns: u64 },
    /// NIC mode: every online CPU (the NIC's IRQ and NET_RX can run anywhere), the replies on `nic` marked by the
    /// receiver thread on `receive_cpu`; `core` is the sender's.
    Receive {
        nic: String,
        core: usize,
        receive_cpu: usize,
    },
}

pub(crate) struct Tracing {
    fs: Tracefs,
    collector: Collector,
    scope: Scope,
    break_us: Option<u32>,
    schema: Option<Arc<Schema>>,
    reader: String,
    nic_irqs: NicIrqs,
    /// The RT CPUs whose IPIs' senders are recorded, or why they are not.
    ipi_cpus: Vec<usize>,
    ipi: Result<String, String>,
}

/// The NIC's IRQs as /sys and /proc/interrupts name them, with their devices ("virtio1-input.0").
#[derive(Default)]
struct NicIrqs {
    ids: Vec<u32>,
    names: BTreeMap<u32, String>,
}

/// The raw reader of `cpus`, or why not.
fn raw(fs: &Tracefs, cpus: &[usize]) -> Result<RawPipes, NoRaw> {
    if std::env::var("RMP_EVAL_TRACE_READER").is_ok_and(|v| v == "text") {
        return Err(NoRaw::Asked);
    }
    let schema = Arc::new(fs.raw_schema()?);
    Ok(RawPipes::new(schema, fs.raw_pipes(cpus)?))
}

impl Tracing {
    /// Sets tracefs up for the scope and starts the reader; the Marker goes to the RT loop (NIC mode: the
    /// receiver).
    pub(crate) fn start(
        host: &Host,
        scope: Scope,
        break_us: Option<u32>,
    ) -> Result<(Tracing, Marker), TraceError> {
        let mut fs = Tracefs::open(host)?;
        let (cpus, rt, pipe_cpu) = match &scope {
            Scope::Cpu { core, .. } => (vec![*core], vec![*core], Some(*core)),
            Scope::Receive {
                core, receive_cpu, ..
            } => (
                crate::machine::online_cpus(host)?,
                vec![*core, *receive_cpu],
                None,
            ),
        };
        fs.configure(&cpus, pipe_cpu.is_none())?;
        let ipi = fs.record_ipi_senders(&rt);
        let ipi_cpus = rt.clone();
        let over_ns = break_us.map(|b| u64::from(b) * 1000);
        let keep = over_ns.map_or(Keep::Worst, Keep::Over);
        let marker = match &scope {
            Scope::Cpu { .. } => Marker::gated(fs.marker()?, Gate::new(over_ns)),
            Scope::Receive { .. } => Marker::new(fs.marker()?),
        };
        let (schema, source, reader) = match raw(&fs, &cpus) {
            Ok(r) => (Some(r.schema()), Source::Raw(r), "raw".to_string()),
            Err(why) => (
                None,
                Source::Text(fs.pipe(pipe_cpu)?),
                format!("text ({why})"),
            ),
        };
        let nic_irqs = match &scope {
            Scope::Receive { nic, .. } => crate::machine::irq::read_interrupts(host)
                .map(|ints| {
                    let irqs = crate::machine::irq::nic_irqs(host, nic, &ints);
                    let names = ints
                        .rows
                        .iter()
                        .filter_map(|r| Some((r.irq()?, r.actions().join(","))))
                        .filter(|(n, a)| irqs.contains(n) && !a.is_empty())
                        .collect();
                    NicIrqs { ids: irqs, names }
                })
                .unwrap_or_default(),
            Scope::Cpu { .. } => Default::default(),
        };
        let window = match &scope {
            Scope::Cpu { period_ns, .. } => Window::new(keep).cut_at_previous_deadline(*period_ns),
            Scope::Receive { .. } => Window::new(keep).tracking_lost(),
        };
        let collector = Collector::spawn(source, window, rt)
            .map_err(|e| TraceError::Io("starting the trace reader".into(), e))?;
        Ok((
            Tracing {
                fs,
                collector,
                scope,
                break_us,
                schema,
                reader,
                nic_irqs,
                ipi_cpus,
                ipi,
            },
            marker,
        ))
    }

    /// Stops tracing, reads the rest, restores tracefs (drop), explains the kept windows.
    pub(crate) fn finish(self) -> TraceReport {
        self.fs.stop();
        let c = self.collector.finish();
        let comms = match &self.schema {
            Some(_) => saved_cmdlines(&self.fs.saved_cmdlines()),
            None => Default::default(),
        };
        let schema = self.schema.as_deref();
        let windows: Vec<Vec<TraceEntry>> = c
            .windows
            .iter()
            .map(|w| decode(w, schema, &comms))
            .collect();
        let lost: Vec<Vec<TraceEntry>> = c
            .lost_windows
            .iter()
            .map(|w| decode(w, schema, &comms))
            .collect();
        let mut report = report(
            &c,
            &windows,
            &lost,
            &self.scope,
            self.break_us,
            &self.fs,
            &self.nic_irqs,
        );
        report.reader = self.reader;
        report.ipi_senders = Some(ipi_senders(&self.fs, &self.ipi_cpus, &self.ipi));
        drop(self.fs);
        report
    }
}

/// The senders the instance recorded, or why they are unknown.
fn ipi_senders(fs: &Tracefs, cpus: &[usize], ipi: &Result<String, String>) -> IpiSenders {
    match (ipi, fs.ipi_senders_text()) {
        (Err(why), _) => IpiSenders::unknown(why.clone(), cpus),
        (Ok(source), Some(Ok(text))) => IpiSenders {
            source: source.clone(),
            ..senders::count(&text, cpus, std::process::id())
        },
        (Ok(_), Some(Err(e))) => IpiSenders::unknown(format!("{UNKNOWN}: {e}"), cpus),
        (Ok(_), None) => IpiSenders::unknown(format!("{UNKNOWN}: no instance"), cpus),
    }
}

/// A kept window in the event model: raw events decoded through `schema`, a task named as the window's own events
/// named it up to then, else as the kernel's cache (`comms`) does.
pub(crate) fn decode(
    w: &Kept,
    schema: Option<&Schema>,
    comms: &HashMap<i64, String>,
) -> Vec<TraceEntry> {
    let mut seen = HashMap::new();
    w.entries(|e| {
        let s = schema?;
        s.comms(std::iter::once(e), &mut seen);
        s.event(e, |p| {
            seen.get(&p).or_else(|| comms.get(&p)).map(String::as_str)
        })
    })
}

fn report(
    c: &Collected,
    windows: &[Vec<TraceEntry>],
    lost: &[Vec<TraceEntry>],
    scope: &Scope,
    break_us: Option<u32>,
    fs: &Tracefs,
    nic_irqs: &NicIrqs,
) -> TraceReport {
    let (events, timerlat) = (&fs.events, fs.timerlat);
    let span = c.last_ns.saturating_sub(c.first_ns) as f64 / 1e9;
    let (cpu, what) = match scope {
        Scope::Cpu { core, .. } => (*core, format!("CPU {core}")),
        Scope::Receive {
            nic, receive_cpu, ..
        } => (
            *receive_cpu,
            format!("every CPU, replies on {nic} (markers: c=FRAME dl=SENT_NS lat=RTT_NS)"),
        ),
    };
    let mut raw = format!(
        "# rmp-eval run --trace: {what}, trace_clock mono, events {}\n# the windows before late cycles (from \
         the previous cycle's deadline, or NIC mode the previous reply's marker, to the late one's), worst first; markers are \"rmp-eval c=CYCLE dl=DEADLINE_NS \
         lat=LATENCY_NS\"\n",
        events.join(",")
    );
    for (w, entries) in c.windows.iter().zip(windows) {
        raw.push_str(&format!(
            "# cycle {} late {:.1} us\n",
            w.cycle,
            w.lat_ns as f64 / 1000.0
        ));
        raw.push_str(&render(entries));
    }
    let mut lost_frames = Vec::new();
    if let Scope::Receive { nic, .. } = scope {
        for (w, entries) in c.lost_windows.iter().zip(lost) {
            if let Some(e) = receive::lost::explain(entries, nic, w.cycle, w.tail) {
                raw.push_str(&format!("# frame {} got no reply\n", e.cycle));
                raw.push_str(&render(entries));
                lost_frames.push(e);
            }
        }
    }
    TraceReport {
        cpu,
        events: events.to_vec(),
        break_us,
        marks: c.marks,
        over_break: c.over,
        lost_events: c.lost,
        timerlat_available: timerlat,
        ticks_per_s: (span > 0.5).then(|| (c.ticks as f64 / span * 10.0).round() / 10.0),
        file: None,
        explained: windows
            .iter()
            .filter_map(|entries| match scope {
                Scope::Cpu { core, .. } => explain(entries, *core),
                Scope::Receive {
                    nic,
                    core,
                    receive_cpu,
                } => receive::explain(entries, nic, &[*core, *receive_cpu], &nic_irqs.ids)
                    .map(|e| name_irq(e, &nic_irqs.names)),
            })
            .collect(),
        reader: String::new(),
        lost_frames,
        unanswered: c.unanswered,
        nic: match scope {
            Scope::Receive { nic, .. } => Some(nic.clone()),
            Scope::Cpu { .. } => None,
        },
        nic_irqs: nic_irqs.ids.clone(),
        ipi_senders: None,
        raw,
    }
}

/// A reply's IRQ found only through its thread (`irq/28-virtio1-`: the hard IRQ's own event fell outside the
/// window) is named as /proc/interrupts names it, as the handler's event would have named it.
fn name_irq(mut e: Explanation, names: &BTreeMap<u32, String>) -> Explanation {
    if let Some(irq) = e.path.as_mut().and_then(|p| p.irq.as_mut())
        && irq.name.starts_with("irq/")
        && let Some(name) = irq
            .id
            .and_then(|id| u32::try_from(id).ok())
            .and_then(|id| names.get(&id))
    {
        irq.name = name.clone();
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::text;

    #[test]
    fn an_irq_found_only_through_its_thread_is_named_as_proc_interrupts_names_it() {
        // The PREEMPT_RT guest's window (see receive's tests) without IRQ 28's hard entry and exit, as a window
        // that began after them reads: only the thread irq/28-virtio1- (its comm cut at 15) ties the reply to it.
        const RT: &str =
            include_str!("../../tests/fixtures/samples/trace-qemu-rt-guest-virtio-receive.txt");
        let cut: String = RT
            .lines()
            .filter(|l| {
                !l.contains("irq_handler_entry: irq=28") && !l.contains("irq_handler_exit: irq=28")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let e = receive::explain(&text::parse(&cut), "ens4", &[1, 1], &[28]).unwrap();
        let name = |e: &Explanation| e.path.as_ref()?.irq.as_ref().map(|i| i.name.clone());
        assert_eq!(name(&e).as_deref(), Some("irq/28-virtio1-"));
        let names = BTreeMap::from([(28, "virtio1-input.0".to_string())]);
        assert_eq!(
            name(&name_irq(e.clone(), &names)).as_deref(),
            Some("virtio1-input.0")
        );
        // A name the handler's event gave is kept.
        let whole = receive::explain(&text::parse(RT), "ens4", &[1, 1], &[28]).unwrap();
        let other = BTreeMap::from([(28, "something else".to_string())]);
        assert_eq!(
            name(&name_irq(whole, &other)).as_deref(),
            Some("virtio1-input.0")
        );
    }
}
