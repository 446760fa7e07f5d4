//! Measurement: what to measure (spec), what surrounds every run (session), and a folder per domain: the cyclic
//! loop and its runner (cyclic), NIC mode with its frames, sockets, timestamps, queues and round trips (nic; the
//! EtherCAT codec is crate::ethercat), what else ran on the RT core (interference), the hardware latency detector
//! (hwlat) and what a run gives (result). It knows no command line and no terminal: commands build a `RunSpec`
//! and pass a `session::Watch` for the live view.

pub mod cyclic;
pub(crate) mod hwlat;
pub(crate) mod interference;
pub(crate) mod load;
pub mod nic;
pub mod result;
pub(crate) mod session;
pub mod spec;

// The paths these modules had before measure/ was cut by domain, kept while branches written against them are
// merged; they go in the next commit that follows those merges.
#[allow(unused_imports)]
pub(crate) use cyclic::{collect, sampler, stats, threads};
#[allow(unused_imports)]
pub(crate) use interference::{cause, report as interference_report, smi, thin};
pub(crate) use nic::netif;
#[allow(unused_imports)]
pub(crate) use nic::{frame, ipv4, queue, rawsock, rtt, rtt::collect as rtt_collect};
pub(crate) use result::confidence;
#[allow(unused_imports)]
pub(crate) use result::hlog;
#[allow(unused_imports)]
pub(crate) use session::rt;

use crate::error::Result;
use crate::host::Host;
use session::Watch;
use spec::{Placement, RunSpec};

/// The kernel a measurement ran on: always this machine's. Under `--root DIR` the checks read DIR, but the RT
/// thread runs here, so the result must not carry DIR's kernel. In a chroot without /proc the
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
        spec::Workload::Threads(set) => cyclic::threads::run(host, spec, set, at, label, watch),
        spec::Workload::Cyclic => cyclic::run(host, spec, at, label, watch),
    };
    let info = load.map(load::Load::stop);
    r.map(|mut r| {
        r.load = info;
        r.conclusive()
    })
}
