//! The machine's facts, below the checks and the fix steps that both need them: online CPUs, the RT core, the
//! kernel command line, kernel identity (here); interrupts (irq), network interfaces (net); and the path of each
//! kernel file that a check reads and a step writes, once. With `--root`, everything comes from files (never from
//! syscalls), so a snapshot examined elsewhere gives the same answers.

pub mod facts;
pub(crate) mod irq;
pub(crate) mod msr;
pub(crate) mod net;

use std::io;

use crate::error::Error;
use crate::host::{Host, HostError, HostResult};
use crate::parse::{cmdline, cpulist};

pub(crate) const CPU_DIR: &str = "/sys/devices/system/cpu";
pub(crate) const CPU_ONLINE: &str = "/sys/devices/system/cpu/online";
pub(crate) const CPU_PRESENT: &str = "/sys/devices/system/cpu/present";
pub(crate) const CPU_POSSIBLE: &str = "/sys/devices/system/cpu/possible";
pub(crate) const CPU_ISOLATED: &str = "/sys/devices/system/cpu/isolated";
pub(crate) const CPU_NOHZ_FULL: &str = "/sys/devices/system/cpu/nohz_full";
pub(crate) const PROC_CMDLINE: &str = "/proc/cmdline";
pub(crate) const PROC_CPUINFO: &str = "/proc/cpuinfo";
/// The cpuidle driver in use ("intel_idle", "acpi_idle", "haltpoll", "none"): the C-states check, the idle-states
/// check and the firmware family's idle-driver check read it.
pub(crate) const CPUIDLE_DRIVER: &str = "/sys/devices/system/cpu/cpuidle/current_driver";
/// The clocksource the kernel keeps time with ("tsc", "hpet", "arch_sys_counter").
pub(crate) const CURRENT_CLOCKSOURCE: &str =
    "/sys/devices/system/clocksource/clocksource0/current_clocksource";
pub(crate) use crate::host::OSRELEASE;
pub(crate) const KVERSION: &str = "/proc/sys/kernel/version";
pub(crate) const OSTYPE: &str = "/proc/sys/kernel/ostype";
pub(crate) const ARCH: &str = "/proc/sys/kernel/arch";
pub(crate) const HOSTNAME: &str = "/proc/sys/kernel/hostname";
pub(crate) const ETC_HOSTNAME: &str = "/etc/hostname";
pub(crate) const OS_RELEASE: &str = "/etc/os-release";
pub(crate) const DT_MODEL: &str = "/proc/device-tree/model";
/// One directory per process (comm, status, task/ …).
pub(crate) const PROC: &str = "/proc";
/// When the running kernel booted: the `btime` line (seconds since the epoch).
pub(crate) const PROC_STAT: &str = "/proc/stat";
/// Seconds since boot (CLOCK_BOOTTIME).
pub(crate) const PROC_UPTIME: &str = "/proc/uptime";
/// rmp-eval's own settings (the monitor's, the after-boot settle time), shell-style KEY=VALUE lines.
pub(crate) const RMP_EVAL_DEFAULTS: &str = "/etc/default/rmp-eval";

fn invalid(path: &str, why: impl ToString) -> HostError {
    HostError::Io {
        path: path.to_string(),
        source: io::Error::new(io::ErrorKind::InvalidData, why.to_string()),
    }
}

/// A sysfs CPU list file, parsed.
pub(crate) fn read_cpulist(host: &Host, path: &str) -> HostResult<Vec<usize>> {
    let text = host.read(path)?;
    cpulist::parse(&text).map_err(|e| invalid(path, e))
}

pub(crate) const CPU_OFFLINE: &str = "/sys/devices/system/cpu/offline";

/// The online CPUs, and how they were found when the kernel's `online` list could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Online {
    pub(crate) cpus: Vec<usize>,
    /// Set when `online` was not read: where the list comes from instead (a damaged or partial snapshot).
    pub(crate) derived: Option<String>,
}

/// Whether cpuN/online (present for CPUs that can be taken offline) reads 0.
fn cpu_says_offline(host: &Host, n: usize) -> bool {
    host.read_trimmed(&format!("{CPU_DIR}/cpu{n}/online"))
        .is_ok_and(|v| v == "0")
}

/// The cpuN directories (each CPU the kernel knows of has one), minus those whose cpuN/online reads 0.
fn cpu_dirs(host: &Host) -> Vec<usize> {
    let Ok(names) = host.list(CPU_DIR) else {
        return Vec::new();
    };
    let mut v: Vec<usize> = names
        .iter()
        .filter_map(|n| n.strip_prefix("cpu"))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|n| n.parse().ok())
        .filter(|&n| n <= cpulist::MAX_CPU)
        .filter(|&n| !cpu_says_offline(host, n))
        .collect();
    v.sort_unstable();
    v
}

/// The online CPUs, ascending: the kernel's `online` list; without it, `present` (else the cpuN directories)
/// minus the `offline` list and minus each CPU whose cpuN/online is 0 — and `derived` says so.
pub(crate) fn online(host: &Host) -> Result<Online, HostError> {
    let first = match read_cpulist(host, CPU_ONLINE) {
        Ok(v) if !v.is_empty() => {
            return Ok(Online {
                cpus: v,
                derived: None,
            });
        }
        Ok(_) => invalid(CPU_ONLINE, "empty CPU list"),
        Err(e) => e,
    };
    let offline = read_cpulist(host, CPU_OFFLINE).ok();
    let (mut cpus, from) = match read_cpulist(host, CPU_PRESENT) {
        Ok(v) if !v.is_empty() => (v, "present"),
        _ => (cpu_dirs(host), "the cpuN directories"),
    };
    // A CPU whose own online file says 0 is offline whatever `present` says.
    cpus.retain(|c| offline.as_ref().is_none_or(|o| !o.contains(c)) && !cpu_says_offline(host, *c));
    if cpus.is_empty() {
        return Err(first);
    }
    let minus = match &offline {
        Some(o) if !o.is_empty() => format!(" minus offline {}", cpulist::format(o)),
        Some(_) => " (offline lists none)".to_string(),
        None => " (offline not readable either: a CPU may be offline unseen)".to_string(),
    };
    Ok(Online {
        derived: Some(format!(
            "{CPU_ONLINE}: {}; online CPUs taken as {from}{minus}: {}",
            first.reason(),
            cpulist::format(&cpus)
        )),
        cpus,
    })
}

/// The online CPUs, ascending (see `online`).
pub fn online_cpus(host: &Host) -> Result<Vec<usize>, HostError> {
    online(host).map(|o| o.cpus)
}

/// The SMT siblings of `core` (not the core itself), from its topology; none where it cannot be read.
pub(crate) fn smt_siblings(host: &Host, core: usize) -> Vec<usize> {
    let path = format!("{CPU_DIR}/cpu{core}/topology/thread_siblings_list");
    read_cpulist(host, &path)
        .unwrap_or_default()
        .into_iter()
        .filter(|&c| c != core)
        .collect()
}

/// The kernel's nr_cpu_ids (the width of its CPU lists: "N" and "all" on the command line mean up to it):
/// the last possible CPU + 1, else the last present or online one.
pub(crate) fn nr_cpu_ids(host: &Host) -> Option<usize> {
    [CPU_POSSIBLE, CPU_PRESENT, CPU_ONLINE]
        .iter()
        .find_map(|p| read_cpulist(host, p).ok()?.last().map(|l| l + 1))
}

/// The RT core: `n` if it is an online CPU, else the last online CPU. An offline or absent CPU is a usage error.
pub(crate) fn validate_core(host: &Host, n: Option<usize>) -> Result<usize, Error> {
    validate_cpu(host, n, "--core")
}

/// `n` if it is an online CPU, else the last online CPU; an offline or absent CPU is a usage error that names the
/// `option` it was given with.
pub(crate) fn validate_cpu(host: &Host, n: Option<usize>, option: &str) -> Result<usize, Error> {
    let cpus = online_cpus(host).map_err(|e| {
        Error::failed(format!(
            "cannot tell which CPUs are online ({e}); is --root a machine's root?"
        ))
    })?;
    let last = cpus
        .last()
        .copied()
        .ok_or_else(|| Error::failed("no online CPUs found"))?;
    match n {
        None => Ok(last),
        Some(c) if cpus.contains(&c) => Ok(c),
        Some(c)
            if read_cpulist(host, CPU_OFFLINE).is_ok_and(|o| o.contains(&c))
                || cpu_says_offline(host, c) =>
        {
            Err(Error::usage(format!(
                "{option} {c}: CPU{c} is offline (online: {})",
                cpulist::format(&cpus)
            )))
        }
        Some(c) => Err(Error::usage(format!(
            "{option} {c}: no such online CPU (online: {})",
            cpulist::format(&cpus)
        ))),
    }
}

/// For `check`: a tree that has cpuN directories but not the core's (a damaged or crafted snapshot) cannot
/// describe the core; checks would read "absent" as "nothing there" and pass.
pub(crate) fn require_cpu_dir(host: &Host, core: usize) -> Result<(), Error> {
    let has_cpu_dirs = || {
        host.list(CPU_DIR).is_ok_and(|names| {
            names.iter().any(|n| {
                n.strip_prefix("cpu")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
        })
    };
    if !host.is_dir(&format!("{CPU_DIR}/cpu{core}")) && has_cpu_dirs() {
        return Err(Error::usage(format!(
            "CPU{core} is listed as online but {CPU_DIR}/cpu{core} is missing: the tree is incomplete"
        )));
    }
    Ok(())
}

/// The kernel command line, split; one longer than the kernel keeps is none it printed (not parsed).
pub(crate) fn cmdline(host: &Host) -> HostResult<Vec<cmdline::Param>> {
    let text = host.read(PROC_CMDLINE)?;
    cmdline::check_size(&text, machine(host).as_deref()).map_err(|e| invalid(PROC_CMDLINE, e))?;
    Ok(cmdline::parse(&text))
}

/// When the running kernel booted (seconds since the epoch), from /proc/stat's btime.
pub(crate) fn boot_time(host: &Host) -> Option<u64> {
    crate::parse::procstat::btime(&host.read(PROC_STAT).ok()?)
}

/// Seconds since the running kernel booted, from /proc/uptime.
pub(crate) fn uptime(host: &Host) -> Option<f64> {
    crate::parse::uptime::seconds(&host.read(PROC_UPTIME).ok()?)
}

/// `uname -r`: from /proc/sys/kernel/osrelease, so that it also works on a snapshot (uname(2) on the running
/// machine when /proc cannot be read: `Host::kernel_release`).
pub(crate) fn kernel_release(host: &Host) -> HostResult<String> {
    let r = host.kernel_release()?;
    // utsname's release field holds 64 characters.
    if r.is_empty()
        || r.len() > 64
        || r.contains(|c: char| c.is_whitespace() || c.is_control())
        || r.contains('/')
    {
        return Err(invalid(OSRELEASE, "not a kernel release"));
    }
    Ok(r)
}

/// `uname -v` (64 characters at most, as in utsname).
pub(crate) fn kernel_version(host: &Host) -> HostResult<String> {
    let v = host.read_trimmed(KVERSION)?;
    if v.len() > 64 || v.contains(|c: char| c.is_control()) {
        return Err(invalid(KVERSION, "not a kernel version"));
    }
    Ok(v)
}

/// `uname -m`: /proc/sys/kernel/arch (Linux ≥ 6.1), else guessed from /proc/cpuinfo.
pub(crate) fn machine(host: &Host) -> Option<String> {
    if let Ok(a) = host.read_trimmed(ARCH)
        && !a.is_empty()
        && a.len() < 32
    {
        return Some(a);
    }
    let info = host.read(PROC_CPUINFO).ok()?;
    crate::parse::cpuinfo::guess_arch(&info).map(str::to_string)
}

/// Why cpuinfo gives no flags.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CpuFlagsError {
    #[error("{PROC_CPUINFO}: {}", .0.reason())]
    Read(HostError),
    #[error("{PROC_CPUINFO} has no flags line (not x86)")]
    NoFlags,
}

/// The first processor's cpuinfo flags (x86); the error says why there are none (no file, no flags line: arm64).
pub(crate) fn cpu_flags(host: &Host) -> Result<Vec<String>, CpuFlagsError> {
    let info = host.read(PROC_CPUINFO).map_err(CpuFlagsError::Read)?;
    crate::parse::cpuinfo::flags(&info)
        .map(|f| f.into_iter().map(str::to_string).collect())
        .ok_or(CpuFlagsError::NoFlags)
}

/// The first processor's (family, model), where cpuinfo has them (x86).
pub(crate) fn cpu_family_model(host: &Host) -> Option<(u32, u32)> {
    let info = host.read(PROC_CPUINFO).ok()?;
    crate::parse::cpuinfo::family_model(&info)
}

/// The first processor's vendor_id ("GenuineIntel", "AuthenticAMD"), where cpuinfo has one.
pub(crate) fn cpu_vendor(host: &Host) -> Option<String> {
    let info = host.read(PROC_CPUINFO).ok()?;
    crate::parse::cpuinfo::vendor(&info).map(str::to_string)
}

/// The host name: /proc/sys/kernel/hostname, else /etc/hostname.
pub(crate) fn hostname(host: &Host) -> Option<String> {
    let ok = |h: &String| !h.is_empty() && h.len() <= 253;
    [HOSTNAME, ETC_HOSTNAME]
        .iter()
        .filter_map(|p| host.read_trimmed(p).ok())
        .find(ok)
        // The live machine without /proc to ask (a chroot): the kernel's own answer; a tree keeps its unknown.
        .or_else(|| {
            host.is_live()
                .then(crate::sys::uname::uname)
                .and_then(Result::ok)
                .map(|u| u.nodename)
                .filter(ok)
        })
}

/// PRETTY_NAME from /etc/os-release.
pub(crate) fn os_name(host: &Host) -> Option<String> {
    let text = host.read(OS_RELEASE).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Host) {
        let d = tempfile::Builder::new().prefix("ck-sys").tempdir().unwrap();
        let h = Host::with_root(d.path());
        for (p, c) in files {
            h.write_atomic(p, c.as_bytes(), None).unwrap();
        }
        (d, h)
    }

    #[test]
    fn core_defaults_to_last_and_range_is_checked() {
        let (_d, h) = root_with(&[(CPU_ONLINE, "0-3\n")]);
        assert_eq!(validate_core(&h, None).unwrap(), 3);
        assert_eq!(validate_core(&h, Some(0)).unwrap(), 0);
        let e = validate_core(&h, Some(4)).unwrap_err();
        assert!(matches!(e, Error::Usage(_)));
        assert_eq!(e.to_string(), "--core 4: no such online CPU (online: 0-3)");
        let e = validate_cpu(&h, Some(7), "--receive-cpu").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--receive-cpu 7: no such online CPU (online: 0-3)"
        );
    }

    #[test]
    fn garbage_online_falls_back_to_cpu_dirs() {
        let (_d, h) = root_with(&[
            (CPU_ONLINE, "\u{1}\u{2}zz"),
            ("/sys/devices/system/cpu/cpu0/x", ""),
            ("/sys/devices/system/cpu/cpu1/x", ""),
            ("/sys/devices/system/cpu/cpufreq/x", ""),
        ]);
        assert_eq!(online_cpus(&h).unwrap(), vec![0, 1]);
        let (_d2, empty) = root_with(&[]);
        assert!(matches!(validate_core(&empty, None), Err(Error::Failed(_))));
    }

    #[test]
    fn identity_from_files() {
        let (_d, h) = root_with(&[
            (OSRELEASE, "6.1.0-50-rt-amd64\n"),
            (ETC_HOSTNAME, "rtguest\n"),
            (
                OS_RELEASE,
                "NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
            ),
        ]);
        assert_eq!(kernel_release(&h).unwrap(), "6.1.0-50-rt-amd64");
        assert_eq!(hostname(&h).as_deref(), Some("rtguest"));
        assert_eq!(
            os_name(&h).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
    }
}
