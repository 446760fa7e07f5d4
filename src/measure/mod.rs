//! Measurement: what to measure (spec), the per-cycle recorder (series), results and their storage, the RT
//! environment (rt, session), the cyclic loop (sampler) and the cyclic test (cyclic). It knows no command line and
//! no terminal: commands build a `RunSpec` and pass a `session::Watch` for the live view.
//! NIC mode: probe frames (frame, ipv4; the EtherCAT codec is crate::ethercat), raw socket and timestamps (rawsock, tstamp, netif), the
//! link, sender and receiver of the run (nic/) and reply matching (rtt, rtt_collect).

pub(crate) mod cause;
pub(crate) mod collect;
pub mod confidence;
pub(crate) mod cyclic;
pub mod dist;
pub(crate) mod frame;
pub(crate) mod hlog;
pub(crate) mod hwlat;
pub(crate) mod interference;
pub(crate) mod interference_report;
pub(crate) mod ipv4;
pub(crate) mod load;
pub mod netif;
pub(crate) mod nic;
pub mod profile;
pub(crate) mod queue;
pub(crate) mod rawsock;
pub mod result;
pub(crate) mod rt;
pub(crate) mod rtt;
pub(crate) mod rtt_collect;
pub(crate) mod sampler;
pub mod series;
pub(crate) mod session;
pub(crate) mod smi;
pub mod spec;
pub(crate) mod stats;
pub mod store;
pub(crate) mod thin;
pub(crate) mod threads;
pub mod tstamp;

use crate::error::Result;
use crate::host::Host;
use session::Watch;
use spec::{Placement, RunSpec};

/// The kernel a measurement ran on: always this machine's. Under `--root DIR` the checks read DIR, but the RT
/// thread runs here, so the result must not carry DIR's kernel (issue 16 item 12). In a chroot without /proc the
/// kernel is asked through uname(2).
pub(crate) fn measured_kernel() -> String {
    crate::machine::kernel_release(&crate::host::Host::live()).unwrap_or_default()
}

/// Measures `spec`'s workload (the cyclic loop, a thread set, the hardware latency detector or round trips
/// through a NIC); under stress-ng on the housekeeping CPUs when it asks for a load (stopped before this returns,
/// whatever happens).
pub(crate) fn run(
    host: &Host,
    spec: &RunSpec,
    at: Placement,
    label: &str,
    watch: &mut dyn Watch,
) -> Result<result::RunResult> {
    // A run killed with kill -9 left the hwlat tracer running: it would stop this run's CPUs.
    for note in crate::trace::tracefs::restore_leftovers(host) {
        watch.note(&note);
    }
    let load = if spec.load.is_empty() {
        None
    } else {
        // The housekeeping CPUs of --load: the online ones minus the RT ones.
        let online = crate::machine::online_cpus(host)?;
        let hk = load::housekeeping(&online, &[at.core, at.receive_cpu])?;
        Some(load::Load::start(&spec.load, &hk, spec.duration)?)
    };
    let r = match &spec.workload {
        spec::Workload::Hwlat => hwlat::run(host, spec, at, label, watch),
        spec::Workload::Nic(n) => nic::run(host, spec, n, at, label, watch),
        spec::Workload::Threads(set) => threads::run(host, spec, set, at, label, watch),
        spec::Workload::Cyclic => cyclic::run(host, spec, at, label, watch),
    };
    let info = load.map(load::Load::stop);
    r.map(|mut r| {
        r.load = info;
        r.conclusive()
    })
}
