//! System-wide checks of the original tool: kernel, swap, scheduler knobs, clocksource, AF_XDP, futex hash.

use super::{Assessment, Check, CheckId, Ctx, Eval, Section, read, unknown};
use crate::host::{Host, HostError};
use crate::machine::facts::{FACT_FUTEX_PRCTL, snapshot_fact};
use crate::machine::{self, kernel_release};
use crate::parse::{kernel, swaps};

pub(crate) const REALTIME: &str = "/sys/kernel/realtime";
const SWAPS: &str = "/proc/swaps";
const BOOT_CONFIG: &str = "/boot/config-";
const CLOCKSOURCE_DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// Why the kernel's build configuration cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KernelConfigError {
    #[error("kernel release unknown ({})", .0.reason())]
    Release(HostError),
    #[error("{path}: {}", .error.reason())]
    Read { path: String, error: HostError },
}

/// The running kernel's build configuration: /boot/config-<release>.
pub(crate) fn kernel_config(host: &Host) -> Result<String, KernelConfigError> {
    let rel = kernel_release(host).map_err(KernelConfigError::Release)?;
    let path = format!("{BOOT_CONFIG}{rel}");
    host.read(&path)
        .map_err(|error| KernelConfigError::Read { path, error })
}

pub(crate) const PREEMPT_RT: Check = Check {
    id: CheckId::PreemptRt,
    section: Section::System,
    title: "PREEMPT_RT active",
    doc: "RMP needs a fully preemptible (PREEMPT_RT) kernel: without it, a kernel path can hold off the RT thread \
          for milliseconds. Passes when /sys/kernel/realtime is 1, or `uname -v` says PREEMPT_RT, or the kernel's \
          config has CONFIG_PREEMPT_RT=y. Improvement: the version string is read from \
          /proc/sys/kernel/version, so a snapshot gives the same verdict elsewhere.",
    remedy: None,
    by_hand: Some(
        "install a PREEMPT_RT kernel and boot it: `apt install linux-image-rt-amd64` (Debian, amd64) or `linux-image-rt-arm64` (Debian, arm64); on a Raspberry Pi, a kernel built with CONFIG_PREEMPT_RT=y (Raspberry Pi's RT build of its kernel); then reboot and choose it",
    ),
    evaluate: preempt_rt,
};

fn preempt_rt(host: &Host, _: &Ctx) -> Eval {
    match host.read_trimmed(REALTIME).as_deref() {
        Ok("1") => return Ok(Assessment::pass(format!("{REALTIME}=1"))),
        Ok("0") => return Ok(Assessment::fail(format!("{REALTIME}=0"))),
        _ => {}
    }
    if let Ok(v) = machine::kernel_version(host)
        && (v.contains("PREEMPT_RT") || v.contains("PREEMPT RT"))
    {
        return Ok(Assessment::pass(format!("uname -v: {v}")));
    }
    match kernel_config(host) {
        Ok(cfg) => Ok(
            match (
                kernel::config(&cfg, "CONFIG_PREEMPT_RT"),
                kernel::config(&cfg, "CONFIG_PREEMPT"),
            ) {
                (Some("y"), _) => Assessment::pass("kernel config has CONFIG_PREEMPT_RT=y"),
                (_, Some("y")) => Assessment::fail("only low-latency PREEMPT, not RT"),
                _ => Assessment::fail("no evidence of RT kernel"),
            },
        ),
        Err(_) if machine::kernel_version(host).is_ok() => {
            Ok(Assessment::fail("no evidence of RT kernel"))
        }
        Err(why) => Err(unknown(why)),
    }
}

pub(crate) const SWAP: Check = Check {
    id: CheckId::Swap,
    section: Section::System,
    title: "Swap disabled",
    doc: "A page of the controller swapped out costs a disk read at the next access. Passes when /proc/swaps \
          lists no active area.",
    remedy: None,
    by_hand: Some(
        "turn swap off: `swapoff -a`, and comment out the swap line(s) in /etc/fstab (and `systemctl mask` any swap unit or zram/dphys-swapfile service) so that it stays off after a reboot",
    ),
    evaluate: swap,
};

fn swap(host: &Host, _: &Ctx) -> Eval {
    let text = host
        .read(SWAPS)
        .map_err(|e| unknown(format!("{SWAPS}: {}", e.reason())))?;
    let areas = swaps::parse(&text).map_err(|_| unknown("unexpected /proc/swaps format"))?;
    if areas.is_empty() {
        return Ok(Assessment::pass(format!("{SWAPS} empty")));
    }
    let list: Vec<String> = areas
        .iter()
        .map(|a| match (a.size_kb, a.used_kb) {
            (Some(s), Some(u)) => format!("{} size={s} used={u}", a.filename),
            _ => a.filename.clone(),
        })
        .collect();
    Ok(Assessment::fail(format!("active: {}", list.join(", "))))
}

pub(crate) const CLOCKSOURCE: Check = Check {
    id: CheckId::Clocksource,
    section: Section::System,
    title: "Clocksource stable",
    doc: "The RT loop sleeps on CLOCK_MONOTONIC; a coarse or unstable clocksource makes every wakeup late. \
          Passes for tsc, hpet, and arch_sys_counter (the arm64 standard); fails for jiffies; anything else is \
          unknown, with the available clocksources.",
    remedy: None,
    by_hand: Some(
        "pick a stable clocksource: see /sys/devices/system/clocksource/clocksource0/available_clocksource and boot with clocksource=tsc (x86) if it is listed; a machine that only offers jiffies is unsuitable",
    ),
    evaluate: clocksource,
};

fn clocksource(host: &Host, _: &Ctx) -> Eval {
    let cur = read(host, &format!("{CLOCKSOURCE_DIR}/current_clocksource"))?;
    if !super::is_word(&cur) {
        return Err(unknown(format!(
            "current_clocksource: unexpected value '{cur}'"
        )));
    }
    let avail = host
        .read_trimmed(&format!("{CLOCKSOURCE_DIR}/available_clocksource"))
        .ok();
    match cur.as_str() {
        "tsc" | "hpet" => Ok(Assessment::pass(cur)),
        "arch_sys_counter" => Ok(match avail.as_deref() {
            Some(a) if !a.contains(' ') => Assessment::pass("arch_sys_counter (ARM standard)"),
            _ => Assessment::pass("arch_sys_counter"),
        }),
        _ => {
            let detail = match avail {
                Some(a) => format!("{cur}; available={a}"),
                None => cur.clone(),
            };
            if cur == "jiffies" {
                Ok(Assessment::fail(detail))
            } else {
                Err(unknown(detail))
            }
        }
    }
}

pub(crate) const AF_XDP: Check = Check {
    id: CheckId::AfXdp,
    section: Section::System,
    title: "AF_XDP kernel support",
    doc: "AF_XDP sockets let an EtherCAT master bypass most of the network stack. Passes when the kernel config \
          has CONFIG_XDP_SOCKETS=y or =m; otherwise informational (the raw-socket path still works). Reads \
          /boot/config-<release> only: no zcat subprocess as the original runs.",
    remedy: None,
    by_hand: Some(
        "nothing needed: the raw-socket path works; for AF_XDP use a kernel built with CONFIG_XDP_SOCKETS",
    ),
    evaluate: af_xdp,
};

fn af_xdp(host: &Host, _: &Ctx) -> Eval {
    Ok(match kernel_config(host) {
        Ok(cfg) => match kernel::config(&cfg, "CONFIG_XDP_SOCKETS") {
            Some(v @ ("y" | "m")) => Assessment::pass(format!("CONFIG_XDP_SOCKETS={v}")),
            _ => Assessment::info("kernel config lacks AF_XDP support"),
        },
        Err(_) => Assessment::info("kernel config unavailable"),
    })
}

pub(crate) const FUTEX_HASH: Check = Check {
    id: CheckId::FutexHash,
    section: Section::System,
    title: "Private futex hash table",
    doc: "Before Linux 6.17 all processes share one futex hash; on PREEMPT_RT its bucket locks sleep, so an \
          unrelated process can delay the controller's mutexes. Passes on ≥ 6.17 when the running kernel accepts \
          prctl(PR_FUTEX_HASH) (live) or its config has CONFIG_FUTEX_PRIVATE_HASH=y (snapshot); fails on older \
          kernels. Improvement: the version comes from /proc/sys/kernel/osrelease, so --root works.",
    remedy: None,
    by_hand: Some(
        "needs Linux 6.17 or newer (private futex hash); nothing to set on this kernel — keep unrelated processes that share locks with the controller off the machine",
    ),
    evaluate: futex_hash,
};

fn futex_hash(host: &Host, _: &Ctx) -> Eval {
    let rel =
        kernel_release(host).map_err(|e| unknown(format!("kernel release: {}", e.reason())))?;
    let ver = kernel::version(&rel)
        .ok_or_else(|| unknown(format!("cannot parse kernel version from {rel}")))?;
    if ver < (6, 17, 0) {
        return Ok(Assessment::warn(format!(
            "kernel {rel} < 6.17; private futex hash requires >= 6.17"
        )));
    }
    if let Some(answer) = crate::machine::facts::futex_prctl(host) {
        return Ok(match answer {
            Ok(_) => Assessment::pass("prctl(PR_FUTEX_HASH) succeeded"),
            Err(e) => Assessment::fail(format!(
                "kernel {rel} >= 6.17 but prctl(PR_FUTEX_HASH) failed ({e})"
            )),
        });
    }
    match kernel_config(host) {
        Ok(cfg) => Ok(match kernel::config(&cfg, "CONFIG_FUTEX_PRIVATE_HASH") {
            Some("y") => Assessment::pass("CONFIG_FUTEX_PRIVATE_HASH=y"),
            _ => Assessment::fail("kernel config lacks CONFIG_FUTEX_PRIVATE_HASH"),
        }),
        Err(why) => match snapshot_fact(host, FACT_FUTEX_PRCTL) {
            Some(r) if r == "ok" => Ok(Assessment::pass(
                "prctl(PR_FUTEX_HASH) succeeded (when the snapshot was taken)",
            )),
            Some(r) => Ok(Assessment::fail(format!(
                "kernel {rel} >= 6.17 but prctl(PR_FUTEX_HASH) failed ({r}) when the snapshot was taken"
            ))),
            None => Err(unknown(why)),
        },
    }
}
