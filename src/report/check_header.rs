//! The head of `check`'s report, which machine this is: hostname and OS, the CPU (model, logical and physical
//! cores, P/E cores of hybrid parts), the kernel, the NIC and its driver; the same lines go into the JSON "host".

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::checks::Ctx;
use crate::checks::machine::{self, CPU_DIR};
use crate::host::Host;
use crate::parse::cpuinfo;

/// Hybrid Intel parts list their P- and E-cores as PMU devices.
const P_CORES: &str = "/sys/devices/cpu_core/cpus";
const E_CORES: &str = "/sys/devices/cpu_atom/cpus";

/// "CPU: <model> (N logical, M physical[; P=…, E=…])".
pub(crate) fn cpu_line(host: &Host) -> String {
    let info = host.read(machine::PROC_CPUINFO).unwrap_or_default();
    let model = cpuinfo::model(&info)
        .or_else(|| machine::machine(host))
        .unwrap_or_else(|| "Unknown CPU".into());
    let online = machine::online_cpus(host).unwrap_or_default();
    let mut cores = BTreeSet::new();
    for c in &online {
        let t = |f: &str| {
            host.read_trimmed(&format!("{CPU_DIR}/cpu{c}/topology/{f}"))
                .ok()
        };
        if let (Some(p), Some(k)) = (t("physical_package_id"), t("core_id")) {
            cores.insert((p, k));
        }
    }
    let mut s = format!("CPU: {model} ({} logical", online.len());
    if !cores.is_empty() {
        let _ = write!(s, ", {} physical", cores.len());
    }
    // Hybrid Intel parts expose their P- and E-core lists as PMU devices.
    let count = |p: &str| {
        host.read_trimmed(p)
            .ok()
            .and_then(|l| crate::parse::cpulist::parse(&l).ok())
            .map(|v| v.len())
    };
    if let (Some(p), Some(e)) = (count(P_CORES), count(E_CORES)) {
        let _ = write!(s, "; P={p}, E={e}");
    }
    s.push(')');
    s
}

/// "Kernel: Linux <release> <version> <machine>".
pub(crate) fn kernel_line(host: &Host) -> String {
    let ostype = host
        .read_trimmed(machine::OSTYPE)
        .unwrap_or_else(|_| "Linux".into());
    let parts = [
        Some(ostype),
        machine::kernel_release(host).ok(),
        machine::kernel_version(host).ok(),
        machine::machine(host),
    ];
    let text: Vec<String> = parts
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect();
    format!("Kernel: {}", text.join(" "))
}

pub(super) fn header(host: &Host, ctx: &Ctx) -> String {
    let s = header_raw(host, ctx);
    s.lines()
        .map(|l| crate::checks::sanitize(l, 200) + "\n")
        .collect()
}

fn header_raw(host: &Host, ctx: &Ctx) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Hostname: {} | OS: {}",
        machine::hostname(host).unwrap_or_else(|| "unknown".into()),
        machine::os_name(host).unwrap_or_else(|| "unknown".into())
    );
    let _ = writeln!(s, "{}", cpu_line(host));
    let _ = writeln!(s, "{}", kernel_line(host));
    if let Some(nic) = &ctx.nic {
        let drv =
            crate::checks::nic_hw::driver(host, nic).unwrap_or_else(|| "driver unknown".into());
        let _ = writeln!(s, "NIC: {nic} ({drv})");
    }
    s
}
