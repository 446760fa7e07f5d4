//! `rmp-eval run`'s options, and the measurement they ask for (`RunArgs::spec`, the one `RunSpec` the engine takes).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::values::{
    parse_count, parse_cpu, parse_load, parse_pktlen, parse_priority, parse_profile, parse_rate,
    parse_seconds, parse_shift_us, parse_thread, parse_us,
};
use crate::measure::spec::{Mode, NicPath, NicSpec, RoundTrip, RunSpec, ThreadSet, Workload};

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

impl ValueEnum for NicPath {
    fn value_variants<'a>() -> &'a [Self] {
        &NicPath::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            NicPath::AfPacket => {
                "An AF_PACKET socket: the kernel's network stack below it (default)"
            }
            NicPath::AfXdp => {
                "An AF_XDP socket on one queue, fed by an XDP program that takes only the probe's frames"
            }
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
    /// NIC mode: send on transmit queue N (the sender's CPU is mapped to it by XPS, the qdisc bypassed); the
    /// queue's own counter says afterwards whether the frames left there
    #[arg(long, value_name = "N", requires = "nic", value_parser = clap::value_parser!(u16).range(0..4096),
          allow_negative_numbers = true)]
    pub(crate) txq: Option<u16>,
    /// NIC mode: receive on queue N (an ethtool flow rule for the probe's frames, removed at the end; refused
    /// where the driver has none)
    #[arg(long, value_name = "N", requires = "nic", value_parser = clap::value_parser!(u16).range(0..4096),
          allow_negative_numbers = true)]
    pub(crate) rxq: Option<u16>,
    /// NIC mode: the way the frames take through this host; af_xdp binds to --rxq's queue (default 0) and
    /// transmits there too (--txq, if given, must be the same)
    #[arg(long, value_enum, value_name = "PATH", default_value_t = NicPath::AfPacket)]
    pub(crate) path: NicPath,
    /// NIC mode, EtherCAT: leave out the two datagrams that read when each frame reached the first SubDevice
    /// (its distributed clock's receive time; 28 bytes a frame)
    #[arg(long, requires = "nic")]
    pub(crate) no_arrival: bool,
    /// NIC mode, EtherCAT with arrival: the SYNC0 shift the controller will use (µs from the cycle's start): the
    /// result says the smallest margin, the frames that reached the first SubDevice after SYNC0 and their rate
    /// (the smallest shift the run supports is said without it)
    #[arg(long, value_name = "US", requires = "nic", conflicts_with = "no_arrival", value_parser = parse_shift_us)]
    pub(crate) sync0_shift: Option<u32>,
    /// Cycle period in microseconds
    #[arg(long, short = 's', visible_alias = "send-sleep", value_name = "US", default_value_t = RunSpec::PERIOD_US,
          value_parser = parse_us, allow_negative_numbers = true)]
    pub(crate) period_us: u32,
    /// Run this long: seconds, or 90s, 30m, 24h (default: until Ctrl+C)
    #[arg(long, value_name = "TIME", value_parser = parse_seconds, conflicts_with = "iterations",
          allow_negative_numbers = true)]
    pub(crate) duration: Option<f64>,
    /// Run N cycles: N periods spanned, the ones measured and the ones missed (woken too late for) together, as
    /// the original's iterations; each --thread its own periods (default: until Ctrl+C)
    #[arg(long, short = 'i', value_name = "N", value_parser = parse_count,
          allow_negative_numbers = true)]
    pub(crate) iterations: Option<u64>,
    /// Run until the run proves, at 95 % confidence, fewer than RATE cycles outside the Great band (1/h, 1/day,
    /// 1/10min: with none seen, −ln 0.05 ≈ 3 periods of RATE), or until the first such cycle breaks the claim
    #[arg(long, value_name = "RATE", value_parser = parse_rate, conflicts_with_all = ["duration", "iterations"])]
    pub(crate) until_confident: Option<f64>,
    /// A cyclic thread NAME with its own PERIOD (25us, 1ms), SCHED_FIFO PRIORITY (default --send-priority) and
    /// CPU (default --core); repeat for several: they start together and preempt each other as their priorities
    /// say, each measured as its own series with bands scaled to its period
    #[arg(long = "thread", value_name = "NAME:PERIOD[:PRIORITY][@CPU]", value_parser = parse_thread,
          conflicts_with_all = ["nic", "trace"])]
    pub(crate) threads: Vec<crate::measure::spec::ThreadSpec>,
    /// A seed's thread set on --core: linuxcnc (LinuxCNC's latency-test: servo 1 ms at FIFO 97, base 25us at 98),
    /// linuxcnc-servo (the servo thread only: hardware step generation), rmp (RMP's 8 threads: sender and receiver
    /// at --period-us with --send-priority/--receive-priority, six periodic threads below them); a --thread of a
    /// profile thread's name replaces it, others are added
    #[arg(long, value_name = "NAME", value_parser = parse_profile, conflicts_with_all = ["nic", "trace"])]
    pub(crate) profile: Option<crate::measure::cyclic::profile::Profile>,
    /// Frame kind in NIC mode
    #[arg(long, value_enum, default_value_t = Mode::Ecat)]
    pub(crate) mode: Mode,
    /// Frame length on the wire in every mode (Ethernet header included, FCS not): 60 (the default) to the
    /// interface MTU + 14; the EtherCAT probe's NOP datagram grows, raw/udp are zero-padded
    #[arg(long, value_name = "BYTES", value_parser = parse_pktlen,
          allow_negative_numbers = true)]
    pub(crate) pktlen: Option<u16>,
    /// EtherCAT: the working counter every reply must carry (default: the one most of the 1 s preflight's
    /// replies carried, the first of them on a tie)
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
    /// Instead of the cyclic loop: the kernel's hardware latency detector (hwlat tracer) on --core and one
    /// housekeeping CPU, one at a time, for --duration; every gap the firmware (SMIs) or hardware makes, each
    /// with the SMIs counted around it, judged in the bands of --period-us. Needs CONFIG_HWLAT_TRACER
    #[arg(long, conflicts_with_all = ["nic", "threads", "profile", "trace", "iterations", "until_confident"])]
    pub(crate) hwlat: bool,
}

impl RunArgs {
    /// What to measure, as asked for; an option of the NIC test without --nic is refused here, since a cyclic
    /// run has no place for it.
    pub fn spec(&self) -> Result<RunSpec, crate::error::Error> {
        Ok(RunSpec {
            core: self.core,
            receive_cpu: self.receive_cpu,
            workload: self.workload()?,
            period_us: self.period_us,
            duration: self.duration,
            iterations: self.iterations,
            send_priority: self.send_priority,
            receive_priority: self.receive_priority,
            bucket_width_us: self.bucket_width_us,
            hlog: self.hlog.clone(),
            hlog_interval_s: self.hlog_interval,
            load: self.load.clone(),
            trace: self.trace && !self.no_trace,
            counters: !self.no_counters,
            break_us: self.break_us,
            until_confident: self.until_confident,
        })
    }

    /// Without --nic: the hardware latency detector, a thread set, or the one cyclic thread (clap keeps them apart).
    fn cpu_workload(&self) -> Workload {
        if self.hwlat {
            return Workload::Hwlat;
        }
        let threads = match self.profile {
            Some(p) => crate::measure::cyclic::profile::merge(
                p.threads(self.period_us, self.send_priority, self.receive_priority),
                &self.threads,
            ),
            None => self.threads.clone(),
        };
        if threads.is_empty() {
            Workload::Cyclic
        } else {
            Workload::Threads(ThreadSet {
                threads,
                profile: self.profile,
            })
        }
    }

    /// NIC mode with its options when --nic names an interface; the cyclic test otherwise, refusing the options
    /// only NIC mode has (in the order the run checked them before).
    fn workload(&self) -> Result<Workload, crate::error::Error> {
        use crate::error::Error;
        let Some(name) = &self.nic else {
            if self.path == NicPath::AfXdp {
                return Err(Error::usage(
                    "--path af_xdp applies to the NIC test only (give --nic IF)",
                ));
            }
            if self.txq.is_some() || self.rxq.is_some() {
                return Err(Error::usage(
                    "--txq and --rxq apply to the NIC test only (give --nic IF)",
                ));
            }
            if self.pktlen.is_some() {
                return Err(Error::usage(
                    "--pktlen applies to the NIC test only (give --nic IF)",
                ));
            }
            return Ok(self.cpu_workload());
        };
        Ok(Workload::Nic(NicSpec {
            name: name.clone(),
            mode: self.mode,
            pktlen: self.pktlen,
            round_trip: RoundTrip {
                expect_wkc: self.expect_wkc,
                budget_us: self.budget_us,
                local_ip: self.local_ip,
                peer_ip: self.peer_ip,
            },
            txq: self.txq,
            rxq: self.rxq,
            path: self.path,
            arrival: !self.no_arrival && self.mode == Mode::Ecat,
            sync0_shift_us: self.sync0_shift,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use crate::measure::spec::{Mode, Workload};
    use clap::Parser;

    fn spec(args: &[&str]) -> crate::error::Result<crate::measure::spec::RunSpec> {
        let cli = Cli::try_parse_from(["rmp-eval", "run"].iter().chain(args)).unwrap();
        let Some(Command::Run(a)) = cli.command else {
            panic!("not run")
        };
        a.spec()
    }

    #[test]
    fn expect_wkc_help_says_the_preflight_majority_is_the_default() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            help.contains("default: the one most of the 1 s preflight's replies carried"),
            "{help}"
        );
        assert!(!help.contains("the first reply had"), "{help}");
    }

    #[test]
    fn each_kind_of_run_is_its_own_workload() {
        assert_eq!(spec(&["--hwlat"]).unwrap().workload, Workload::Hwlat);
        let Workload::Threads(set) = spec(&["--profile", "linuxcnc"]).unwrap().workload else {
            panic!("not a thread set")
        };
        let names: Vec<&str> = set.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!((names.len(), set.profile.is_some()), (2, true), "{names:?}");
        let Workload::Threads(set) = spec(&["--thread", "a:1ms", "--thread", "b:250us"])
            .unwrap()
            .workload
        else {
            panic!("not a thread set")
        };
        assert_eq!((set.threads.len(), set.profile), (2, None));
    }

    #[test]
    fn nic_options_live_in_the_nic_workload_and_are_refused_without_nic() {
        let s = spec(&["--nic", "eth0", "--mode", "raw", "--pktlen", "100"]).unwrap();
        let Workload::Nic(n) = &s.workload else {
            panic!("{s:?}")
        };
        assert_eq!(
            (n.name.as_str(), n.mode, n.pktlen),
            ("eth0", Mode::Raw, Some(100))
        );
        assert_eq!(spec(&[]).unwrap().workload, Workload::Cyclic);
        // The messages the run gave at run time before, word for word.
        assert_eq!(
            spec(&["--pktlen", "100"]).unwrap_err().to_string(),
            "--pktlen applies to the NIC test only (give --nic IF)"
        );
        assert_eq!(
            spec(&["--path", "af_xdp"]).unwrap_err().to_string(),
            "--path af_xdp applies to the NIC test only (give --nic IF)"
        );
    }
}
