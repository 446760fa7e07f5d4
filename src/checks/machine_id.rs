//! Which machine this is, as `check`'s report heads it and its JSON "host" says: hostname and OS, the CPU
//! (model, logical and physical cores, P/E cores of hybrid parts), the kernel, the NIC and its driver. Read here,
//! through `Host` (so `--root` and a snapshot give the tree's), made printable and bounded; report only renders it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::Ctx;
use super::firmware_id::{self, Firmware};
use crate::host::Host;
use crate::machine::{self, CPU_DIR};
use crate::parse::cpuinfo;
use crate::parse::text::sanitize;

/// Hybrid Intel parts list their P- and E-cores as PMU devices.
const P_CORES: &str = "/sys/devices/cpu_core/cpus";
const E_CORES: &str = "/sys/devices/cpu_atom/cpus";
/// Each field is a file's text: bounded as a finding's detail is.
const MAX: usize = 200;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MachineId {
    pub(crate) hostname: Option<String>,
    pub(crate) os: Option<String>,
    /// "<model> (N logical, M physical[; P=…, E=…])".
    pub(crate) cpu: String,
    /// "Linux <release> <version> <machine>".
    pub(crate) kernel: String,
    /// With --nic: the interface and its driver.
    pub(crate) nic: Option<(String, String)>,
    /// The board and its firmware (SMBIOS, or the device-tree model).
    pub(crate) firmware: Firmware,
}

pub(crate) fn describe(host: &Host, ctx: &Ctx) -> MachineId {
    MachineId {
        hostname: machine::hostname(host).map(|h| sanitize(&h, MAX)),
        os: machine::os_name(host).map(|o| sanitize(&o, MAX)),
        cpu: sanitize(&cpu(host), MAX),
        kernel: sanitize(&kernel(host), MAX),
        nic: ctx.nic.as_ref().map(|nic| {
            let drv = super::nic_hw::driver(host, nic).unwrap_or_else(|| "driver unknown".into());
            (sanitize(nic, MAX), sanitize(&drv, MAX))
        }),
        firmware: firmware_id::read(host),
    }
}

fn cpu(host: &Host) -> String {
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
    let mut s = format!("{model} ({} logical", online.len());
    if !cores.is_empty() {
        let _ = write!(s, ", {} physical", cores.len());
    }
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

fn kernel(host: &Host) -> String {
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
    text.join(" ")
}

/// What the metrics' rmp_eval_info says of the kernel: its release, preempt model and architecture.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KernelInfo {
    pub(crate) release: String,
    /// rt, dynamic, full, none or unknown.
    pub(crate) preempt: &'static str,
    pub(crate) arch: String,
    /// The machine and its BIOS, as `Firmware::machine_key` and `bios_key` say them (empty when unknown).
    pub(crate) machine: String,
    pub(crate) bios: String,
}

pub(crate) fn kernel_info(host: &Host) -> KernelInfo {
    let fw = firmware_id::read(host);
    KernelInfo {
        release: machine::kernel_release(host).unwrap_or_default(),
        preempt: preempt_model(host),
        arch: machine::machine(host).unwrap_or_default(),
        machine: fw.machine_key(),
        bios: fw.bios_key(),
    }
}

/// The preempt model as `uname -v` or /sys/kernel/realtime tell it.
fn preempt_model(host: &Host) -> &'static str {
    if host.read_trimmed(super::system::REALTIME).ok().as_deref() == Some("1") {
        return "rt";
    }
    match machine::kernel_version(host) {
        Ok(v) if v.contains("PREEMPT_RT") || v.contains("PREEMPT RT") => "rt",
        Ok(v) if v.contains("PREEMPT_DYNAMIC") => "dynamic",
        Ok(v) if v.split_whitespace().any(|w| w == "PREEMPT") => "full",
        Ok(_) => "none",
        Err(_) => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A captured tree under tests/fixtures (its README names where each came from).
    fn fixture(name: &str) -> Host {
        Host::with_root(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(name),
        )
    }

    fn ctx(nic: Option<&str>) -> Ctx {
        Ctx {
            core: 1,
            nic: nic.map(str::to_string),
            pid: None,
            smi_seconds: None,
        }
    }

    #[test]
    fn a_tree_is_described_from_its_own_files() {
        let id = describe(&fixture("desktop-i7-smt-untuned"), &ctx(None));
        assert!(
            id.kernel.contains("PREEMPT_DYNAMIC Debian 6.1.76-1"),
            "{}",
            id.kernel
        );
        assert!(
            id.cpu.contains(" logical, ") && id.cpu.contains(" physical"),
            "{}",
            id.cpu
        );
        assert_eq!(id.nic, None);
        let k = kernel_info(&fixture("desktop-i7-smt-untuned"));
        assert_eq!(k.preempt, "dynamic");
        // PREEMPT_RT by /sys/kernel/realtime and by the version string.
        assert_eq!(
            kernel_info(&fixture("debian12-rt-qemu-isolated")).preempt,
            "rt"
        );
        assert_eq!(kernel_info(&fixture("rpi4-arm64")).preempt, "rt");
    }

    /// The metrics' machine and BIOS labels from a real board's dmi/id (tests/fixtures/samples/dmi).
    #[test]
    fn kernel_info_names_the_board_and_bios() {
        let k = kernel_info(&fixture("samples/dmi/advantech-uno-127"));
        assert_eq!(k.machine, "Advantech UNO-127 / Advantech UNO-127");
        assert_eq!(
            k.bios,
            "American Megatrends International, LLC. V1.13 (08/01/2023)"
        );
    }

    #[test]
    fn an_empty_tree_says_unknown_never_this_machines() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        let id = describe(&h, &ctx(Some("eth0")));
        assert_eq!((id.hostname, id.os), (None, None));
        assert_eq!(id.cpu, "Unknown CPU (0 logical)");
        assert_eq!(id.kernel, "Linux");
        assert_eq!(id.nic, Some(("eth0".into(), "driver unknown".into())));
        assert_eq!(id.firmware.machine_key(), "");
        assert_eq!(id.firmware.bios_key(), "");
        assert!(id.firmware.unknown.is_some(), "{:?}", id.firmware);
        assert_eq!(kernel_info(&h).preempt, "unknown");
    }
}
