//! The options of every verb but `run` (run.rs): each verb's `…Args`, read by its file in commands/.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::values::{
    parse_comm, parse_count, parse_cpu, parse_drift_ppm, parse_kernel_param, parse_period,
    parse_seconds,
};

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The RT core to check (default: the last CPU)
    #[arg(long, value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) core: Option<usize>,
    /// The EtherCAT NIC to check
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// Print JSON instead of the table
    #[arg(long)]
    pub(crate) json: bool,
    /// Also audit a running controller: its cyclic thread's policy, priority and CPUs, memory lock, the DMA
    /// latency request, and the IRQ threads' priorities against it
    #[arg(long, value_name = "PID", conflicts_with = "process", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) pid: Option<u32>,
    /// The running controller to audit, by process name (as /proc/PID/comm shows it)
    #[arg(long, value_name = "NAME", value_parser = parse_comm)]
    pub(crate) process: Option<String>,
    /// Also write Prometheus metrics for node_exporter's textfile collector, into DIR or (no =DIR) the directory
    /// /etc/default/prometheus-node-exporter names, else /var/lib/prometheus/node-exporter
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub(crate) prometheus: Option<OsString>,
    /// How long the smi_rate check counts System Management Interrupts at idle (0: not measured). It waits only
    /// where the SMI counter can be read (Intel, root, the msr driver loaded)
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u64).range(0..=600))]
    pub(crate) smi_seconds: u64,
}

#[derive(Debug, Clone, Args)]
pub struct FixArgs {
    /// The RT core to tune (default: the last CPU, as check and run; the plan names the core it tunes). CPU 0 is
    /// refused: it carries the housekeeping
    #[arg(long, value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) core: Option<usize>,
    /// The EtherCAT NIC to tune
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// Print the plan (diffs, values, commands) and change nothing
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Apply every proposed step without asking
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Apply only these steps (comma-separated): cmdline, cpuset, governor, turbo, sysctl, thp, ksm, workqueue,
    /// irqbalance, irq_affinity, rps, nic_coalesce, nic_eee (`rmp-eval check` names the step of each failure)
    #[arg(long, value_name = "STEP,...", value_delimiter = ',')]
    pub(crate) only: Option<Vec<String>>,
    /// Length of the before and after measurements
    #[arg(long, value_name = "S", default_value = "10", value_parser = parse_seconds, conflicts_with = "no_measure")]
    pub(crate) measure_seconds: f64,
    /// Do not measure before and after
    #[arg(long)]
    pub(crate) no_measure: bool,
    /// Print JSON
    #[arg(long)]
    pub(crate) json: bool,
    /// Boot a kernel command-line change once before keeping it: a one-time boot entry (GRUB next_entry,
    /// systemd-boot oneshot, Raspberry Pi tryboot), the default untouched; at that boot
    /// rmp-eval-after-boot.service checks it and makes it permanent, or undoes it and says why
    #[arg(long)]
    pub(crate) trial_boot: bool,
    /// Where fix's trial boot is, or how the last one ended
    #[arg(long, conflicts_with_all = ["dry_run", "yes", "only", "trial_boot"])]
    pub(crate) status: bool,
}

#[derive(Debug, Clone, Args)]
pub struct QualifyArgs {
    /// The RT core to qualify (needed to start; CPU 0 is refused)
    #[arg(long, value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) core: Option<usize>,
    /// The EtherCAT NIC: its steps tune it, and every measurement is round trips through it to the SubDevice (as
    /// run --nic), which must answer before anything is changed
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// The target cycle time
    #[arg(long, value_name = "P", default_value = "1000", value_parser = parse_period)]
    pub(crate) period_us: u32,
    /// The cycle times of the sweep, in µs (default: the target and 2×, 4×, 8× its rate)
    #[arg(long, value_name = "P,...", value_delimiter = ',', value_parser = parse_period)]
    pub(crate) periods: Option<Vec<u32>>,
    /// Length of each measurement
    #[arg(long, value_name = "S", default_value = "60", value_parser = parse_seconds)]
    pub(crate) seconds: f64,
    /// A baseline, then each step alone in turn (cumulatively), measured and compared after each
    #[arg(long)]
    pub(crate) one_at_a_time: bool,
    /// The claim each period of the sweep is measured for: fewer than RATE cycles outside the Great band (1/h,
    /// 1/day, 1/10min) with 95 % confidence — each period runs until that is proved (with none seen: −ln 0.05 ≈ 3
    /// periods of RATE) or until the first cycle outside Great breaks it (default: --seconds each)
    #[arg(long, value_name = "RATE", value_parser = crate::cli::values::parse_rate)]
    pub(crate) confidence: Option<f64>,
    /// The most time the plan's measurements may take in all (30m, 8h, 2d): a plan that needs more is refused
    /// before anything is changed
    #[arg(long, value_name = "TIME", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub(crate) budget: Option<f64>,
    /// Measure every step and period under load: stress-ng on the housekeeping CPUs, any of cpu, io, vm, net, irq
    #[arg(long, value_name = "KIND,...", value_delimiter = ',', value_parser = crate::cli::values::parse_load)]
    pub(crate) load: Vec<crate::measure::load::LoadKind>,
    /// Your own kernel parameters (root=, a driver's option, …), put on the command line with the tuning's: booted
    /// in the trial first and kept with it only if that boot comes up healthy
    #[arg(long, value_name = "PARAM,...", value_delimiter = ',', value_parser = parse_kernel_param)]
    pub(crate) cmdline_extra: Vec<String>,
    /// Start without asking
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Where a qualify under way is, and what it has learned
    #[arg(long, conflicts_with_all = ["abort", "resume"])]
    pub(crate) status: bool,
    /// Undo what the qualify under way applied, and stop it
    #[arg(long, conflicts_with = "resume")]
    pub(crate) abort: bool,
    /// Go on with the qualify under way (run by rmp-eval-qualify.service at each boot)
    #[arg(long, hide = true)]
    pub(crate) resume: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RollbackArgs {
    /// Show what would be undone and change nothing
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Also put back files and values changed since fix (their later changes are lost)
    #[arg(long)]
    pub(crate) force: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Print JSON
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The earlier result: a JSON file, or "last", "before", "after" (none: the newest pair fix made, its own
    /// before and after, or its before and the after measured by itself after the reboot; said which)
    #[arg(requires = "after")]
    pub(crate) before: Option<String>,
    /// The later result: a JSON file, or "last", "before", "after"
    pub(crate) after: Option<String>,
    /// Print JSON
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Results: JSON files, or "last", "before", "after" (up to 6, overlaid)
    #[arg(required = true, value_name = "RESULT")]
    pub(crate) results: Vec<String>,
    /// The HTML file to write
    #[arg(long, short = 'o', value_name = "FILE", default_value = "report.html")]
    pub(crate) output: PathBuf,
    /// Also write each plot as an SVG file into DIR
    #[arg(long, value_name = "DIR")]
    pub(crate) svg: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ReflectArgs {
    /// The interface to answer on
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: String,
    /// Stop after answering N frames (default: until Ctrl+C)
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub(crate) count: Option<u64>,
    /// Also answer frames sent to other MAC addresses (promiscuous mode while reflect runs; undone on exit)
    #[arg(long)]
    pub(crate) promisc: bool,
    /// Stand in for a chain of N SubDevices (working counters and positions as N ESCs give them)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub(crate) subdevices: u16,
    /// Station address of the first SubDevice (the next ones count up), for FPRD/FPWR before a MainDevice sets it
    #[arg(long, value_name = "ADDR", default_value_t = 0)]
    pub(crate) station: u16,
    /// IPv4 address whose UDP port 7 is echoed and whose ARP requests are answered
    #[arg(long, value_name = "IPV4", default_value = "169.254.88.2")]
    pub(crate) ip: std::net::Ipv4Addr,
    /// SubDevices without distributed clocks: 0x0900-0x09FF answer nothing (working counter unchanged)
    #[arg(long, conflicts_with = "dc_drift_ppm")]
    pub(crate) no_dc: bool,
    /// Run the SubDevices' distributed clocks this much fast (or slow, negative) against the receive stamps
    #[arg(long, value_name = "PPM", default_value_t = 0.0, allow_negative_numbers = true,
          value_parser = parse_drift_ppm)]
    pub(crate) dc_drift_ppm: f64,
}

#[derive(Debug, Clone, Args)]
pub struct SnapshotArgs {
    /// Output directory, or a file name ending in .tar.gz
    pub(crate) out: PathBuf,
}

/// Settings come from /etc/default/rmp-eval (RMP_EVAL_MONITOR_RUN_SECONDS, _REAPPLY, _PROMETHEUS).
#[derive(Debug, Clone, Args)]
pub struct MonitorArgs {}

#[derive(Debug, Clone, Args)]
pub struct ApplySavedArgs {
    /// Only the settings of this NIC (IRQs, RPS, coalescing): what the udev rule asks for
    #[arg(long, value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// Stay, and apply the NIC's settings again each time it is brought up (rmp-eval-nic@IF.service)
    #[arg(long, requires = "nic")]
    pub(crate) follow: bool,
}

#[derive(Debug, Clone, Args)]
pub struct GenerateArgs {
    /// Directory to write rmp-eval.8 and the bash, zsh and fish completions into
    pub(crate) dir: PathBuf,
}
