//! What a run measures, independent of how it was asked for: the command line (`run`, the original's options) and
//! `fix`'s before/after all build a `RunSpec`, and its defaults are written here only.

use serde::{Deserialize, Serialize};

use crate::after_boot_state::Armed;

/// The frame kind of NIC mode. The names ("ecat", "raw", "udp") are the CLI's values and the result's `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Ecat,
    Raw,
    Udp,
}

impl Mode {
    pub(crate) const ALL: [Mode; 3] = [Mode::Ecat, Mode::Raw, Mode::Udp];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Ecat => "ecat",
            Mode::Raw => "raw",
            Mode::Udp => "udp",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// The way a NIC run's frames take through this host: an AF_PACKET socket (the kernel's stack below the socket),
/// or an AF_XDP socket fed by an XDP program on one receive queue. The names are the CLI's values and the result's
/// `path` (older results have none: read as af_packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NicPath {
    #[default]
    AfPacket,
    AfXdp,
}

impl NicPath {
    pub(crate) const ALL: [NicPath; 2] = [NicPath::AfPacket, NicPath::AfXdp];

    pub(crate) fn name(self) -> &'static str {
        match self {
            NicPath::AfPacket => "af_packet",
            NicPath::AfXdp => "af_xdp",
        }
    }
}

impl std::fmt::Display for NicPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a run measured: the cyclic test (no NIC) or round trips with one frame kind. Saved as "cyclic" or the
/// mode's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    Cyclic,
    Nic(Mode),
    /// `run --hwlat`: the kernel's hardware latency detector instead of the loop.
    Hwlat,
}

impl RunMode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            RunMode::Cyclic => "cyclic",
            RunMode::Hwlat => "hwlat",
            RunMode::Nic(m) => m.name(),
        }
    }
}

impl Serialize for RunMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for RunMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "cyclic" => return Ok(RunMode::Cyclic),
            "hwlat" => return Ok(RunMode::Hwlat),
            _ => {}
        }
        Mode::from_name(&s).map(RunMode::Nic).ok_or_else(|| {
            serde::de::Error::unknown_variant(&s, &["cyclic", "hwlat", "ecat", "raw", "udp"])
        })
    }
}

/// One run, as asked for. CPUs are checked against the machine (and defaulted) by the command before it measures.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// CPU of the RT (sender) thread; None: the last CPU.
    pub(crate) core: Option<usize>,
    /// CPU of the receiver thread; None: the same as `core`.
    pub(crate) receive_cpu: Option<usize>,
    /// What is measured: the cyclic loop, a thread set, the hardware latency detector, or round trips through a
    /// NIC, each with the options only it has.
    pub(crate) workload: Workload,
    pub(crate) period_us: u32,
    /// Seconds; None with no `iterations`: until stopped.
    pub(crate) duration: Option<f64>,
    pub(crate) iterations: Option<u64>,
    pub(crate) send_priority: u8,
    pub(crate) receive_priority: u8,
    /// Band width; None: period/8.
    pub(crate) bucket_width_us: Option<u32>,
    /// Write an HdrHistogram interval log there.
    pub(crate) hlog: Option<std::path::PathBuf>,
    /// Length of one interval (the log's, and the max-per-interval series').
    pub(crate) hlog_interval_s: f64,
    /// stress-ng loads on the housekeeping CPUs while it measures (none: an idle machine).
    pub(crate) load: Vec<super::load::LoadKind>,
    /// Record the RT CPU's kernel events and explain the late cycles (`run --trace`); with a NIC, every CPU and the
    /// replies' receive path.
    pub(crate) trace: bool,
    /// With `trace`: keep and explain every cycle (NIC: reply) later than this (µs); None: the worst one.
    pub(crate) break_us: Option<u32>,
    /// The interference counters (on unless measuring what they cost).
    pub(crate) counters: bool,
    /// `run --until-confident RATE` (per second): run until no cycle beyond the Great band proves fewer than this
    /// at 95 %, or until the first such cycle.
    pub(crate) until_confident: Option<f64>,
}

/// What a run drives. Each kind's own options live in its variant, so a run cannot carry another kind's.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Workload {
    /// The one cyclic thread at `period_us` on the RT core.
    #[default]
    Cyclic,
    /// `run --thread` / `--profile`: several cyclic threads instead of the one.
    Threads(ThreadSet),
    /// `run --hwlat`: the kernel's hardware latency detector on the RT core and one housekeeping CPU instead of
    /// the cyclic loop.
    Hwlat,
    /// Round trips through a NIC.
    Nic(NicSpec),
}

/// The threads of `run --thread` / `--profile`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadSet {
    pub(crate) threads: Vec<ThreadSpec>,
    /// The seed's thread set `threads` was made from (merged with --thread's).
    pub(crate) profile: Option<super::cyclic::profile::Profile>,
}

/// NIC mode (`run --nic IF`) and the options that only it has.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NicSpec {
    /// The interface the probes go through.
    pub(crate) name: String,
    pub(crate) mode: Mode,
    pub(crate) pktlen: Option<u16>,
    /// What the run expects of its round trips.
    pub(crate) round_trip: RoundTrip,
    /// The transmit and receive queue to use (None: wherever the kernel puts the frames).
    pub(crate) txq: Option<u16>,
    pub(crate) rxq: Option<u16>,
    /// Through AF_PACKET (the default) or an AF_XDP socket (`run --path af_xdp`).
    pub(crate) path: NicPath,
    /// EtherCAT: each frame latches its receive time in the SubDevices' distributed clocks and reads the first
    /// one's previous latch (off: `--no-arrival`).
    pub(crate) arrival: bool,
    /// The SYNC0 shift to judge the arrivals against (µs after the cycle's start; `--sync0-shift`).
    pub(crate) sync0_shift_us: Option<u32>,
}

impl NicSpec {
    /// A NIC run through `name` with every other option at its default.
    pub(crate) fn new(name: String) -> Self {
        NicSpec {
            name,
            mode: Mode::default(),
            pktlen: None,
            round_trip: RoundTrip::default(),
            txq: None,
            rxq: None,
            path: NicPath::AfPacket,
            arrival: true,
            sync0_shift_us: None,
        }
    }
}

/// One cyclic thread of `run --thread NAME:PERIOD[:PRIORITY][@CPU]`: its own period, SCHED_FIFO priority (None:
/// `send_priority`) and CPU (None: `--core`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadSpec {
    pub(crate) name: String,
    pub(crate) period_us: u32,
    pub(crate) priority: Option<u8>,
    pub(crate) cpu: Option<usize>,
}

/// What a NIC run expects of its peer: the working counter, the reply budget, and for UDP the addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoundTrip {
    /// The working counter every EtherCAT reply must carry; None: the one the preflight saw.
    pub(crate) expect_wkc: Option<u16>,
    /// A reply later than this (µs) is a missed cycle; None: the period.
    pub(crate) budget_us: Option<u32>,
    /// UDP mode: our address and the echo service's (ARP resolves its MAC).
    pub(crate) local_ip: std::net::Ipv4Addr,
    pub(crate) peer_ip: std::net::Ipv4Addr,
}

impl Default for RoundTrip {
    fn default() -> Self {
        RoundTrip {
            expect_wkc: None,
            budget_us: None,
            local_ip: RoundTrip::LOCAL_IP,
            peer_ip: RoundTrip::PEER_IP,
        }
    }
}

impl RoundTrip {
    /// Link-local defaults: never routed; `reflect` answers for PEER_IP.
    pub(crate) const LOCAL_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(169, 254, 88, 1);
    pub(crate) const PEER_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(169, 254, 88, 2);
}

impl RunSpec {
    pub(crate) const PERIOD_US: u32 = 1000;
    pub(crate) const SEND_PRIORITY: u8 = 42;
    pub(crate) const RECEIVE_PRIORITY: u8 = 45;
    pub(crate) const INTERVAL_S: f64 = 1.0;
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            core: None,
            receive_cpu: None,
            workload: Workload::Cyclic,
            period_us: Self::PERIOD_US,
            duration: None,
            iterations: None,
            send_priority: Self::SEND_PRIORITY,
            receive_priority: Self::RECEIVE_PRIORITY,
            bucket_width_us: None,
            hlog: None,
            hlog_interval_s: Self::INTERVAL_S,
            load: Vec::new(),
            trace: false,
            break_us: None,
            counters: true,
            until_confident: None,
        }
    }
}

impl RunSpec {
    /// The NIC run's own options; None for a cyclic run.
    pub(crate) fn nic(&self) -> Option<&NicSpec> {
        match &self.workload {
            Workload::Nic(n) => Some(n),
            Workload::Cyclic | Workload::Threads(_) | Workload::Hwlat => None,
        }
    }

    /// fix: the after-boot state to arm for a "before" saved at `before`, measured with this spec on `core`.
    pub(crate) fn armed(&self, before: std::path::PathBuf, core: usize) -> Armed {
        Armed {
            version: 1,
            armed: crate::wallclock::rfc3339_now(),
            before,
            core,
            nic: self.nic().map(|n| n.name.clone()),
            mode: self.nic().map(|n| n.mode).unwrap_or_default().name().into(),
            period_us: self.period_us,
            seconds: self.duration.unwrap_or(10.0),
            after: None,
        }
    }

    /// The measurement an armed after-boot state describes (the same as fix's "before").
    pub(crate) fn after_boot(a: &Armed) -> RunSpec {
        RunSpec {
            core: Some(a.core),
            workload: match &a.nic {
                Some(name) => Workload::Nic(NicSpec {
                    mode: Mode::from_name(&a.mode).unwrap_or_default(),
                    ..NicSpec::new(name.clone())
                }),
                None => Workload::Cyclic,
            },
            period_us: a.period_us,
            duration: Some(a.seconds),
            ..RunSpec::default()
        }
    }
}

/// The CPUs a run uses, checked against the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) core: usize,
    pub(crate) receive_cpu: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_through_their_names() {
        for m in [
            RunMode::Cyclic,
            RunMode::Hwlat,
            RunMode::Nic(Mode::Ecat),
            RunMode::Nic(Mode::Raw),
            RunMode::Nic(Mode::Udp),
        ] {
            let j = serde_json::to_string(&m).unwrap();
            assert_eq!(j, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<RunMode>(&j).unwrap(), m);
        }
        assert!(serde_json::from_str::<RunMode>("\"tcp\"").is_err());
    }
}
