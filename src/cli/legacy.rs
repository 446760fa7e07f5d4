//! The original rmp-eval's options, accepted without a command (their multi-letter short forms are mapped by
//! `normalize_args`): they become a `run` or a `check` with the same meaning.

use clap::Args;

use super::values::{parse_count, parse_cpu, parse_priority, parse_us};
use super::{CheckArgs, RunArgs};
use crate::measure::spec::{Mode, RoundTrip, RunSpec};

/// The original tool's options, accepted without a command.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Options of the original rmp-eval (without a command)")]
pub(crate) struct LegacyArgs {
    /// Network interface card name (NIC test instead of the cyclic test)
    #[arg(long, short = 'n', value_name = "IF")]
    pub(crate) nic: Option<String>,
    /// Number of iterations: cycles (periods spanned, measured and missed together; default: infinite)
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
            txq: None,
            rxq: None,
            path: crate::measure::spec::NicPath::AfPacket,
            no_arrival: false,
            sync0_shift: None,
            until_confident: None,
            threads: Vec::new(),
            profile: None,
            hwlat: false,
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
            smi_seconds: 1,
        }
    }
}
