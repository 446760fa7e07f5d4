//! A measured run end to end, the one path every measurement takes (`run`, fix's before and after, the after-boot
//! run, the monitor's pass): place it on the machine's CPUs, open its slot under results/, hold the core's lock,
//! enter the isolated cgroup, measure with the live view of `screen.rs`, record the machine's identity and save.
//! Below `commands` (which choose what is shown and kept) and above `report` (whose live view it drives).

mod screen;
pub(crate) mod settle;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::host::Host;
use crate::machine::validate_core;
use crate::measure::result::store::{self, RunLabel, Slot};
use crate::measure::result::{CheckCounts, Identity, RunResult};
use crate::measure::spec::{Placement, RunSpec, ThreadSet, Workload};
use crate::output::Output;

use screen::Screen;

/// The CPUs of `spec`, checked against the machine (the last CPU when none is given).
pub(crate) fn place(host: &Host, spec: &RunSpec) -> Result<Placement> {
    if let Some(n) = spec.nic() {
        crate::checks::nic::require(host, &n.name)?;
        crate::measure::queue::validate(host, n)?;
    }
    let core = validate_core(host, spec.core)?;
    let receive_cpu = match spec.receive_cpu {
        Some(c) => crate::machine::validate_cpu(host, Some(c), "--receive-cpu")?,
        None => core,
    };
    if let Workload::Threads(set) = &spec.workload {
        validate_threads(host, set, spec.period_us)?;
    }
    Ok(Placement { core, receive_cpu })
}

/// A thread set's names are unique, its CPUs online, and a LinuxCNC profile keeps its own periods.
fn validate_threads(host: &Host, set: &ThreadSet, period_us: u32) -> Result<()> {
    let mut names = std::collections::HashSet::new();
    for t in &set.threads {
        if !names.insert(t.name.as_str()) {
            return Err(Error::usage(format!(
                "--thread {}: two threads of that name (each labels its own series)",
                t.name
            )));
        }
        if t.cpu.is_some() {
            crate::machine::validate_cpu(host, t.cpu, &format!("--thread {}@", t.name))?;
        }
    }
    if let Some(p) = set.profile.filter(|p| p.is_linuxcnc())
        && period_us != RunSpec::PERIOD_US
    {
        return Err(Error::usage(format!(
            "--period-us: --profile {} sets its threads' periods (servo 1 ms, base 25 us); change one with --thread, \
             e.g. --thread base:50us:98",
            p.name()
        )));
    }
    Ok(())
}

/// How a measurement saved under results/ is shown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Job {
    /// The result's label and the name of its file under results/.
    pub(crate) label: RunLabel,
    /// No live view or progress lines (--json, or a measurement nobody watches).
    pub(crate) quiet: bool,
    /// `r` and SIGUSR1 restart the statistics; off for a measurement compared with another of the same length.
    pub(crate) resets: bool,
    /// Say on stderr that it measures inside the isolated cgroup partition.
    pub(crate) note_cgroup: bool,
    /// What the configuration checks found before it, for the identity.
    pub(crate) checks: Option<CheckCounts>,
}

/// A result measured by `measure`, not yet persisted.
pub(crate) struct Measured {
    pub(crate) result: RunResult,
    slot: Slot,
}

/// Measures `spec` on `at` as `job` says, with checkpoints in its slot under results/ and the core's shared lock
/// held; the result carries the machine's identity and names its trace file. `Measured::persist` saves it.
pub(crate) fn measure(
    host: &Host,
    out: Output,
    w: &mut dyn std::io::Write,
    spec: &RunSpec,
    at: Placement,
    job: Job,
) -> Result<Measured> {
    let label = job.label.to_string();
    let slot = Slot::new(host, &label, store::unix_now())?;
    let mut screen = Screen::new(out, w, job.quiet, Some(&slot));
    if !job.resets {
        screen = screen.fixed_length();
    }
    let lock = crate::corelock::shared(host, at.core);
    let result = in_cgroup(host, spec, at, &label, job.note_cgroup, &mut screen);
    drop(lock);
    drop(screen);
    let mut result = result?;
    result.identity = Some(identity(job.checks));
    // Before printing, so that the printed result names the trace file saved beside it.
    slot.attach_trace(&mut result)?;
    Ok(Measured { result, slot })
}

/// The run itself, inside the isolated cgroup partition when there is one.
fn in_cgroup(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    label: &str,
    note: bool,
    screen: &mut Screen,
) -> Result<RunResult> {
    let _placed = match crate::cgroup::enter(host, at.core)? {
        Some(p) if note => {
            eprintln!(
                "rmp-eval: note: measuring inside the isolated cgroup partition {}",
                p.name
            );
            Some(p)
        }
        placed => placed,
    };
    crate::measure::run(host, spec, at, label, screen)
}

impl Measured {
    /// Writes the result to `output` (when given) and into its slot under results/; the slot's path.
    pub(crate) fn persist(&self, output: Option<&Path>) -> Result<PathBuf> {
        let r = &self.result;
        if let Some(path) = output {
            let text = serde_json::to_string_pretty(r).map_err(|e| Error::failed(e.to_string()))?;
            std::fs::write(path, text + "\n")
                .map_err(|e| Error::sys(format!("writing {}", path.display()), e))?;
        }
        self.slot.write(r)
    }
}

/// A measurement saved under results/ with `label` (fix's before/after, the after-boot run): placed, run, saved.
/// Prints only the live view (none when `quiet`), which takes no reset: the pair is compared, so each covers its
/// whole length.
pub(crate) fn measure_saved(
    host: &Host,
    out: Output,
    w: &mut dyn std::io::Write,
    spec: &RunSpec,
    quiet: bool,
    label: RunLabel,
) -> Result<(RunResult, PathBuf)> {
    let at = place(host, spec)?;
    let job = Job {
        label,
        quiet,
        resets: false,
        note_cgroup: false,
        checks: None,
    };
    let m = measure(host, out, w, spec, at, job)?;
    let path = m.persist(None)?;
    Ok((m.result, path))
}

/// Whether the SubDevice of `spec`'s NIC answers, placed as its run would be: the run's own link and preflight,
/// nothing measured, everything put back. None for a run without a NIC; Ok: the working counter the replies
/// agree on. The link's notes go to `note`.
pub(crate) fn answers(
    host: &Host,
    spec: &RunSpec,
    note: &mut dyn FnMut(&str),
) -> Result<Option<u16>> {
    let Some(nic) = spec.nic() else {
        return Ok(None);
    };
    let at = place(host, spec)?;
    crate::measure::nic::answers(nic, at, note).map(Some)
}

/// A measurement that prints nothing and is not saved under results/ (the monitor's, every few minutes). The
/// caller holds the core's lock.
pub(crate) fn measure_unsaved(
    host: &Host,
    out: Output,
    spec: &RunSpec,
    label: RunLabel,
) -> Result<RunResult> {
    let at = place(host, spec)?;
    in_cgroup(
        host,
        spec,
        at,
        &label.to_string(),
        false,
        &mut Screen::new(out, &mut std::io::sink(), true, None),
    )
}

/// The machine and the invocation, recorded with the result for the report. The machine measured is this one,
/// also under --root (whose tree only the checks read): its name, CPU and command line are this machine's.
fn identity(checks: Option<CheckCounts>) -> Identity {
    use crate::machine;
    let host = &Host::live();
    let cpuinfo = host.read(machine::PROC_CPUINFO).unwrap_or_default();
    Identity {
        hostname: machine::hostname(host).unwrap_or_default(),
        cpu: crate::parse::cpuinfo::model(&cpuinfo).unwrap_or_default(),
        cpus: machine::online_cpus(host).map(|v| v.len()).unwrap_or(0),
        kernel_cmdline: host.read_trimmed(machine::PROC_CMDLINE).unwrap_or_default(),
        firmware: Some(crate::checks::firmware_id::read(host)),
        command: std::env::args()
            .map(|a| crate::parse::text::sanitize(&a, 200))
            .collect::<Vec<_>>()
            .join(" "),
        checks,
    }
}
