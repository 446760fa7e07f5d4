//! The command-line contract (docs/design.md). The original tool's options are accepted with their meanings; its
//! multi-letter short options (`-sp`, `-rc`, …) are not clap short flags and are mapped by `normalize_args`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub(crate) const EXIT_CODES: &str = "\
Exit status:
  0  all good (check: nothing failed; run: every sample within the Great band; fix/rollback: done)
  1  the system falls short (a check failed; latency outside Great; frames lost)
  2  could not do the job (bad input, no permission, NIC missing, no reply from the SubDevice)
  3  run: inconclusive, too short to judge (too few cycles or seconds); nothing failed in what was measured
  4  check: nothing failed, only warnings (what only a newer kernel or other hardware would change)
  5  check: nothing failed, but a change fix made takes effect at the next reboot";

/// What bare `rmp-eval` prints: the four verbs, one example each (80 columns).
pub const SHORT_USAGE: &str = "\
rmp-eval: can this PC run an EtherCAT motion controller in real time?

Usage: rmp-eval <COMMAND> [OPTIONS]

  check     rmp-eval check --core 3 --nic enp2s0   what falls short, and why
  run       rmp-eval run --duration 10m            measure the latency
  fix       rmp-eval fix --core 3 --nic enp2s0     repair: diffs, journal
  rollback  rmp-eval rollback                      undo what fix did

Also: compare, reflect, snapshot. Options: rmp-eval COMMAND --help.
The workflow: rmp-eval --help, man rmp-eval. The original tool's options
(-i, -n, -s, ...) still work when given.
";

const LONG_ABOUT: &str = "\
Tells whether this PC can run an EtherCAT motion controller in real time, shows why not, and makes it so.

The workflow (as root):
  rmp-eval check --core 3 --nic enp2s0     what falls short, and which fix step repairs it
  rmp-eval run --duration 10m              measure; --nic enp2s0 measures EtherCAT round trips
  rmp-eval fix --core 3 --nic enp2s0       diffs, confirm, journal, before/after measurement
  reboot                                   when fix changed the kernel command line
  rmp-eval run --duration 10m && rmp-eval compare before last
  rmp-eval rollback                        undo everything fix applied, byte for byte

Without a command but with the original rmp-eval's options (-i, -n, -s, -sp, ...), behaves as the original: \
configuration checks, then the cyclic test (no --nic) or the sender/receiver test.";

#[derive(Debug, Parser)]
#[command(
    name = "rmp-eval",
    version,
    about = "Evaluate, measure and tune a Linux PC for real-time EtherCAT motion control",
    long_about = LONG_ABOUT,
    after_help = EXIT_CODES,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Take every /sys, /proc, /etc, /boot, /dev, /var and /run path under DIR (a fixture tree or a snapshot)
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Never colour the output (NO_COLOR in the environment does the same)
    #[arg(long, global = true)]
    pub no_color: bool,

    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub(crate) legacy: LegacyArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the configuration: kernel, RT core, NIC
    Check(CheckArgs),
    /// Measure cyclic wakeup latency, or EtherCAT round trips with --nic
    Run(RunArgs),
    /// Propose and apply the remedies for failing checks (diffs, journal, before/after measurement)
    Fix(FixArgs),
    /// Undo everything fix applied, newest first
    Rollback(RollbackArgs),
    /// Compare two saved results (file paths, or "last", "before", "after")
    Compare(CompareArgs),
    /// Plots of one or more saved results in one self-contained HTML page (overlaid when several)
    Report(ReportArgs),
    /// Act as a software EtherCAT SubDevice on IF (echoes frames, increments the working counter)
    Reflect(ReflectArgs),
    /// Copy exactly the files the checks read into OUT (a directory, or OUT.tar.gz) for `check --root`
    Snapshot(SnapshotArgs),
    /// The "after" measurement fix armed for the next boot (run by rmp-eval-after-boot.service)
    #[command(hide = true)]
    AfterBoot,
    /// One pass of the fleet monitor (rmp-eval-monitor.timer): check, drift of what fix saved, a short run, metrics
    Monitor(MonitorArgs),
    /// Re-apply the runtime tunings saved by fix (run at boot by the systemd unit, and by the udev rule)
    #[command(hide = true)]
    ApplySaved(ApplySavedArgs),
    /// Write the man page and shell completions into DIR (used by the package build)
    #[command(hide = true)]
    Generate(GenerateArgs),
}

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
    #[arg(long, value_name = "NAME")]
    pub(crate) process: Option<String>,
    /// Also write Prometheus metrics for node_exporter's textfile collector, into DIR or (no =DIR) the directory
    /// /etc/default/prometheus-node-exporter names, else /var/lib/prometheus/node-exporter
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub(crate) prometheus: Option<OsString>,
}

pub(crate) use crate::measure::spec::Mode;
use crate::measure::spec::{RoundTrip, RunSpec};

// The frame kinds as clap values: their names and help come from the one `Mode`.
impl ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        &Mode::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            Mode::Ecat => "EtherCAT frames, answered by a SubDevice (default)",
            Mode::Raw => "Raw Ethernet frames with rmp-eval's own EtherType, echoed back",
            Mode::Udp => "UDP packets built in the frame (no IP stack), to a UDP echo",
        };
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// CPU for the RT (sender) thread (default: the last CPU)
    #[arg(long, visible_alias = "send-cpu", value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) core: Option<usize>,
    /// CPU for the receiver thread (default: the same as --core)
    #[arg(long, value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) receive_cpu: Option<usize>,
    /// The EtherCAT NIC: measure round trips through a SubDevice instead of cyclic wakeups only
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// Cycle period in microseconds
    #[arg(long, short = 's', visible_alias = "send-sleep", value_name = "US", default_value_t = RunSpec::PERIOD_US,
          value_parser = parse_us, allow_negative_numbers = true)]
    pub(crate) period_us: u32,
    /// Run this long: seconds, or 90s, 30m, 24h (default: until Ctrl+C)
    #[arg(long, value_name = "TIME", value_parser = parse_seconds, conflicts_with = "iterations",
          allow_negative_numbers = true)]
    pub(crate) duration: Option<f64>,
    /// Run N cycles (default: until Ctrl+C)
    #[arg(long, short = 'i', value_name = "N", value_parser = parse_count,
          allow_negative_numbers = true)]
    pub(crate) iterations: Option<u64>,
    /// Frame kind in NIC mode
    #[arg(long, value_enum, default_value_t = Mode::Ecat)]
    pub(crate) mode: Mode,
    /// Frame length on the wire in every mode (Ethernet header included, FCS not): 60 (the default) to the
    /// interface MTU + 14; the EtherCAT probe's NOP datagram grows, raw/udp are zero-padded
    #[arg(long, value_name = "BYTES", value_parser = parse_pktlen,
          allow_negative_numbers = true)]
    pub(crate) pktlen: Option<u16>,
    /// EtherCAT: the working counter every reply must carry (default: the one the first reply had)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..), allow_negative_numbers = true)]
    pub(crate) expect_wkc: Option<u16>,
    /// A reply later than this is a missed cycle (default: the period)
    #[arg(long, value_name = "US", value_parser = parse_us,
          allow_negative_numbers = true)]
    pub(crate) budget_us: Option<u32>,
    /// UDP mode: this end's IPv4 address (the echo peer must be able to reach it; ARP for it is answered)
    #[arg(long, value_name = "IPV4", default_value_t = RoundTrip::LOCAL_IP)]
    pub(crate) local_ip: std::net::Ipv4Addr,
    /// UDP mode: the echo service's IPv4 address (UDP port 7; its MAC is found by ARP)
    #[arg(long, value_name = "IPV4", default_value_t = RoundTrip::PEER_IP)]
    pub(crate) peer_ip: std::net::Ipv4Addr,
    /// SCHED_FIFO priority of the RT (sender) thread
    #[arg(long, value_name = "P", default_value_t = RunSpec::SEND_PRIORITY, value_parser = parse_priority,
          allow_negative_numbers = true)]
    pub(crate) send_priority: u8,
    /// SCHED_FIFO priority of the receiver thread
    #[arg(long, value_name = "P", default_value_t = RunSpec::RECEIVE_PRIORITY, value_parser = parse_priority,
          allow_negative_numbers = true)]
    pub(crate) receive_priority: u8,
    /// Band width in µs (default: period/8; bands are < W, 2W, 4W, 8W, ≥ 8W)
    #[arg(long, short = 'b', visible_alias = "bucket-width", value_name = "US",
          value_parser = parse_us, allow_negative_numbers = true)]
    pub(crate) bucket_width_us: Option<u32>,
    /// Also write the result as JSON to FILE
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Print the result as JSON on stdout instead of tables
    #[arg(long)]
    pub(crate) json: bool,
    /// Skip the configuration checks before the run
    #[arg(long)]
    pub(crate) no_config: bool,
    /// Also write Prometheus metrics for node_exporter's textfile collector, into DIR or (no =DIR) the directory
    /// /etc/default/prometheus-node-exporter names, else /var/lib/prometheus/node-exporter
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub(crate) prometheus: Option<OsString>,
    /// Show hardware/software timestamp rows
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,
    /// Also write an HdrHistogram interval log to FILE (one histogram per series and interval)
    #[arg(long, value_name = "FILE")]
    pub(crate) hlog: Option<PathBuf>,
    /// Length of one interval of --hlog and of the max-per-interval plot
    #[arg(long, value_name = "TIME", default_value = "1", value_parser = parse_seconds)]
    pub(crate) hlog_interval: f64,
    /// Measure under load: stress-ng on the housekeeping CPUs (every CPU but the RT ones), any of
    /// cpu, io, vm, net, irq
    #[arg(long, value_name = "KIND,...", value_delimiter = ',', value_parser = parse_load)]
    pub(crate) load: Vec<crate::measure::load::LoadKind>,
    /// Record the RT CPU's kernel events (tracefs) and explain the worst cycle: what ran, for how long, which
    /// fix step removes it; with --nic, every CPU and the worst reply's receive path (the NIC's IRQ, NET_RX, the
    /// receiver's wakeup); the raw trace is saved beside the result
    #[arg(long, conflicts_with = "no_trace")]
    pub(crate) trace: bool,
    /// No kernel trace (the default; the interference counters still run)
    #[arg(long)]
    pub(crate) no_trace: bool,
    /// No interference counters either (to measure what they cost; BENCHMARKS.md)
    #[arg(long, conflicts_with = "trace")]
    pub(crate) no_counters: bool,
    /// With --trace: keep and explain every cycle whose wakeup is later than US, with --nic every reply whose
    /// round trip is longer (default: the worst only)
    #[arg(long, value_name = "US", requires = "trace", value_parser = clap::value_parser!(u32).range(1..=10_000_000),
          allow_negative_numbers = true)]
    pub(crate) break_us: Option<u32>,
}

impl RunArgs {
    /// What to measure, as asked for.
    pub fn spec(&self) -> RunSpec {
        RunSpec {
            core: self.core,
            receive_cpu: self.receive_cpu,
            nic: self.nic.clone(),
            mode: self.mode,
            pktlen: self.pktlen,
            period_us: self.period_us,
            duration: self.duration,
            iterations: self.iterations,
            send_priority: self.send_priority,
            receive_priority: self.receive_priority,
            bucket_width_us: self.bucket_width_us,
            hlog: self.hlog.clone(),
            hlog_interval_s: self.hlog_interval,
            load: self.load.clone(),
            round_trip: RoundTrip {
                expect_wkc: self.expect_wkc,
                budget_us: self.budget_us,
                local_ip: self.local_ip,
                peer_ip: self.peer_ip,
            },
            trace: self.trace && !self.no_trace,
            counters: !self.no_counters,
            break_us: self.break_us,
        }
    }
}

/// The original tool's options, accepted without a command.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Options of the original rmp-eval (without a command)")]
pub(crate) struct LegacyArgs {
    /// Network interface card name (NIC test instead of the cyclic test)
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// Number of iterations (default: infinite)
    #[arg(long, short = 'i', value_name = "N", value_parser = parse_count,
          allow_negative_numbers = true)]
    pub(crate) iterations: Option<u64>,
    /// Send sleep (cycle period) in microseconds
    #[arg(long, short = 's', value_name = "US", default_value_t = RunSpec::PERIOD_US,
          value_parser = parse_us, allow_negative_numbers = true)]
    pub(crate) send_sleep: u32,
    /// Send thread priority (-sp)
    #[arg(long, value_name = "P", default_value_t = RunSpec::SEND_PRIORITY, value_parser = parse_priority,
          allow_negative_numbers = true)]
    pub(crate) send_priority: u8,
    /// Receive thread priority (-rp)
    #[arg(long, value_name = "P", default_value_t = RunSpec::RECEIVE_PRIORITY, value_parser = parse_priority,
          allow_negative_numbers = true)]
    pub(crate) receive_priority: u8,
    /// CPU for the sender thread (-sc; default: the last CPU)
    #[arg(long, value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) send_cpu: Option<usize>,
    /// CPU for the receiver thread (-rc; default: the last CPU)
    #[arg(long, value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) receive_cpu: Option<usize>,
    /// Show hardware/software timestamp rows
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,
    /// Skip the configuration checks (-nc)
    #[arg(long)]
    pub(crate) no_config: bool,
    /// Run the configuration checks only, then exit (-oc)
    #[arg(long)]
    pub(crate) only_config: bool,
    /// Band width in microseconds (default: period/8)
    #[arg(long, short = 'b', value_name = "US", value_parser = parse_us,
          allow_negative_numbers = true)]
    pub(crate) bucket_width: Option<u32>,
}

impl LegacyArgs {
    pub(crate) fn to_run(&self) -> RunArgs {
        RunArgs {
            core: self.send_cpu,
            receive_cpu: self.receive_cpu,
            nic: self.nic.clone(),
            period_us: self.send_sleep,
            duration: None,
            iterations: self.iterations,
            mode: Mode::default(),
            pktlen: None,
            expect_wkc: None,
            budget_us: None,
            local_ip: RoundTrip::LOCAL_IP,
            peer_ip: RoundTrip::PEER_IP,
            send_priority: self.send_priority,
            receive_priority: self.receive_priority,
            bucket_width_us: self.bucket_width,
            output: None,
            json: false,
            no_config: self.no_config,
            verbose: self.verbose,
            prometheus: None,
            hlog: None,
            hlog_interval: RunSpec::INTERVAL_S,
            load: Vec::new(),
            trace: false,
            no_trace: false,
            no_counters: false,
            break_us: None,
        }
    }

    /// True when none of the original's options was given (they apply only without a command).
    pub(crate) fn is_unset(&self) -> bool {
        self.nic.is_none()
            && self.iterations.is_none()
            && self.send_sleep == RunSpec::PERIOD_US
            && self.send_priority == RunSpec::SEND_PRIORITY
            && self.receive_priority == RunSpec::RECEIVE_PRIORITY
            && self.send_cpu.is_none()
            && self.receive_cpu.is_none()
            && !self.verbose
            && !self.no_config
            && !self.only_config
            && self.bucket_width.is_none()
    }

    pub(crate) fn to_check(&self) -> CheckArgs {
        CheckArgs {
            core: self.send_cpu,
            nic: self.nic.clone(),
            json: false,
            prometheus: None,
            pid: None,
            process: None,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct FixArgs {
    /// The RT core to tune (CPU 0 is refused: it carries the housekeeping)
    #[arg(long, value_name = "N", value_parser = parse_cpu, allow_negative_numbers = true)]
    pub(crate) core: usize,
    /// The EtherCAT NIC to tune
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// Print the plan (diffs, values, commands) and change nothing
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Apply every proposed step without asking
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Apply only these steps (comma-separated): cmdline, cpuset, governor, turbo, sysctl, thp, workqueue, irqbalance,
    /// irq_affinity, rps, nic_coalesce, nic_eee (`rmp-eval check` names the step of each failure)
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
    /// The earlier result: a JSON file, or "last", "before", "after" (none: fix's before and the after measured
    /// by itself after the reboot)
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
}

#[derive(Debug, Clone, Args)]
pub struct GenerateArgs {
    /// Directory to write rmp-eval.8 and the bash, zsh and fish completions into
    pub(crate) dir: PathBuf,
}

/// A CPU number: a non-negative integer (range against the machine is checked later, against its CPU count).
pub(crate) fn parse_cpu(s: &str) -> Result<usize, String> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{s}' is not a CPU number (a non-negative integer)"
        ));
    }
    t.parse::<usize>()
        .ok()
        .filter(|&n| n < 8192)
        .ok_or_else(|| format!("CPU {s} is out of range"))
}

/// clap's error message, whole but compact: its first line with the details clap indents under it (what is
/// missing, "a similar subcommand exists: 'check'") on one line, then (`with_usage`: for missing arguments, where
/// it shows what to give) its usage line; without the blank lines and the "For more information" line.
pub fn parse_error(rendered: &str, with_usage: bool) -> String {
    let mut lines = rendered
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"));
    let first = lines.next().unwrap_or("invalid arguments");
    let mut msg = format!(
        "rmp-eval: {}",
        first.strip_prefix("error: ").unwrap_or(first)
    );
    let mut usage = None;
    let mut details = Vec::new();
    for l in lines {
        if l.starts_with("Usage:") {
            usage = Some(l.to_string());
        } else {
            details.push(l.trim().trim_start_matches("tip: ").to_string());
        }
    }
    if !details.is_empty() {
        if !msg.ends_with(':') {
            msg.push(';');
        }
        msg.push(' ');
        msg.push_str(&details.join(", "));
    }
    msg.push('\n');
    if let Some(u) = usage.filter(|_| with_usage) {
        msg.push_str(&u);
        msg.push('\n');
    }
    msg
}

/// A whole number in `lo..=hi`, refused with a message a person reads ("'1.5' is not a whole number").
fn whole(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let range = if hi == u64::MAX {
        format!("{lo} or more")
    } else {
        format!("{lo} to {hi}")
    };
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{s}' is not a whole number ({range})"));
    }
    match t.parse::<u64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("{t} is out of range ({range})")),
    }
}

/// A count of cycles, frames or runs: 1 or more.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    whole(s, 1, u64::MAX)
}

/// Microseconds of a period or band: 1 to 1 000 000.
pub(crate) fn parse_us(s: &str) -> Result<u32, String> {
    whole(s, 1, 1_000_000).map(|v| v as u32)
}

/// A SCHED_FIFO priority: 1 to 99.
pub(crate) fn parse_priority(s: &str) -> Result<u8, String> {
    whole(s, 1, 99).map(|v| v as u8)
}

/// A frame length with the Ethernet header, without FCS: 60 to 1514 bytes.
pub(crate) fn parse_pktlen(s: &str) -> Result<u16, String> {
    whole(s, 60, 1514).map(|v| v as u16)
}

/// A duration: a number of seconds, or a number with a unit — `90s`, `30m`, `24h`, `2d`, `1.5h`; positive, finite,
/// at most a year. Returns seconds.
pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c),
        _ => (t, 's'),
    };
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => 0.0,
    };
    // Only digits and one point: "inf", "1e3", "-5", "0x10" are not durations.
    let plain = !num.is_empty()
        && num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && num.bytes().filter(|&b| b == b'.').count() <= 1;
    match num.parse::<f64>() {
        Ok(v) if plain && scale > 0.0 && v * scale > 0.0 && v * scale <= 31_536_000.0 => {
            Ok(v * scale)
        }
        _ => Err(format!(
            "'{s}' is not a duration (seconds, or with a unit: 90s, 30m, 24h; at most a year)"
        )),
    }
}

/// One kind of --load.
pub(crate) fn parse_load(s: &str) -> Result<crate::measure::load::LoadKind, String> {
    crate::measure::load::LoadKind::from_name(s.trim())
        .ok_or_else(|| format!("'{s}' is not a load (cpu, io, vm, net, irq)"))
}

/// Maps the original tool's multi-letter short options to their long names, before clap sees them.
pub fn normalize_args<I: IntoIterator<Item = OsString>>(args: I) -> Vec<OsString> {
    const MAP: &[(&str, &str)] = &[
        ("-sp", "--send-priority"),
        ("-rp", "--receive-priority"),
        ("-sc", "--send-cpu"),
        ("-rc", "--receive-cpu"),
        ("-nc", "--no-config"),
        ("-oc", "--only-config"),
    ];
    args.into_iter()
        .map(|a| {
            let Some(s) = a.to_str() else { return a };
            for (short, long) in MAP {
                if s == *short {
                    return OsString::from(*long);
                }
                if let Some(v) = s.strip_prefix(short).and_then(|r| r.strip_prefix('=')) {
                    return OsString::from(format!("{long}={v}"));
                }
            }
            a
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(normalize_args(args.iter().map(OsString::from)))
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn original_short_options_map() {
        let c = parse(&["rmp-eval", "-sp", "50", "-rc", "1", "-nc", "-i", "100"]).unwrap();
        assert_eq!(c.legacy.send_priority, 50);
        assert_eq!(c.legacy.receive_cpu, Some(1));
        assert!(c.legacy.no_config);
        assert_eq!(c.legacy.iterations, Some(100));
    }

    #[test]
    fn global_options_go_before_the_command() {
        let c = parse(&[
            "rmp-eval",
            "--root",
            "/tmp/x",
            "--no-color",
            "check",
            "--core",
            "1",
        ])
        .unwrap();
        assert_eq!(c.root.as_deref(), Some(std::path::Path::new("/tmp/x")));
        assert!(c.no_color);
        assert!(matches!(c.command, Some(Command::Check(ref a)) if a.core == Some(1)));
    }

    #[test]
    fn original_options_before_a_command_are_noticed() {
        assert!(parse(&["rmp-eval", "check"]).unwrap().legacy.is_unset());
        assert!(
            parse(&["rmp-eval", "--root", "/x", "check"])
                .unwrap()
                .legacy
                .is_unset()
        );
        assert!(
            !parse(&["rmp-eval", "--nic", "eth0", "check"])
                .unwrap()
                .legacy
                .is_unset()
        );
        assert!(
            !parse(&["rmp-eval", "-sp", "50", "run"])
                .unwrap()
                .legacy
                .is_unset()
        );
    }

    #[test]
    fn durations_take_units() {
        for (text, secs) in [
            ("90", 90.0),
            ("90s", 90.0),
            ("30m", 1800.0),
            ("24h", 86400.0),
            ("1.5h", 5400.0),
            ("0.5", 0.5),
            ("365d", 31_536_000.0),
        ] {
            assert_eq!(parse_seconds(text), Ok(secs), "{text}");
        }
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in [
            &["rmp-eval", "-i", "abc"][..],
            &["rmp-eval", "-i", "1.5"],
            &["rmp-eval", "-i", "-5"],
            &["rmp-eval", "-i", "0"],
            &["rmp-eval", "-s", "0"],
            &["rmp-eval", "-sp", "100"],
            &["rmp-eval", "check", "--core", "-1"],
            &["rmp-eval", "check", "--core", "x"],
            &["rmp-eval", "run", "--duration", "0"],
            &["rmp-eval", "run", "--duration", "nan"],
            &["rmp-eval", "run", "--duration", "inf"],
            &["rmp-eval", "run", "--duration", "1e3"],
            &["rmp-eval", "run", "--duration", "-5s"],
            &["rmp-eval", "run", "--duration", "5x"],
            &["rmp-eval", "run", "--duration", "m"],
            &["rmp-eval", "run", "--duration", "1.2.3s"],
            &["rmp-eval", "run", "--duration", "366d"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
