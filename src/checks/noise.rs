//! Further sources of noise on the RT core: tick skew, clocksource watchdog, NMI and soft-lockup watchdogs,
//! transparent huge pages, vmstat updates, NUMA balancing, unbound workqueues.

use super::{Assessment, Check, Ctx, Eval, Section, Unknown, id, knob, read, unknown};
use crate::host::Host;
use crate::machine::{self, PROC_CMDLINE};
use crate::parse::cmdline;
use crate::remedy;

const WATCHDOG: &str = "/proc/sys/kernel/watchdog";
const SOFT_WATCHDOG_PATH: &str = "/proc/sys/kernel/soft_watchdog";
const CURRENT_CLOCKSOURCE: &str =
    "/sys/devices/system/clocksource/clocksource0/current_clocksource";

fn params(host: &Host) -> Result<Vec<cmdline::Param>, Unknown> {
    machine::cmdline(host).map_err(|e| unknown(format!("{PROC_CMDLINE}: {}", e.reason())))
}

pub(crate) const SKEW_TICK: Check = Check {
    id: id::SKEW_TICK,
    section: Section::System,
    title: "Scheduler ticks skewed",
    doc: "By default every CPU's tick fires at the same instant and they contend for the same locks \
          (jiffies, RCU); skew_tick=1 offsets them. Passes when skew_tick=1 is on the kernel command line.",
    remedy: Some(remedy::CMDLINE),
    by_hand: None,
    evaluate: skew_tick,
};

fn skew_tick(host: &Host, _: &Ctx) -> Eval {
    Ok(match cmdline::get(&params(host)?, "skew_tick") {
        Some("1") => Assessment::pass("skew_tick=1"),
        Some(v) => Assessment::fail(format!("skew_tick={v}")),
        None => Assessment::fail("no skew_tick=1 on the kernel command line"),
    })
}

pub(crate) const TSC_RELIABLE: Check = Check {
    id: id::TSC_RELIABLE,
    section: Section::System,
    title: "TSC watchdog off",
    doc: "On x86 the clocksource watchdog compares the TSC with another clock every 0.5 s from a timer that \
          visits each CPU, and may demote the TSC to a slow clocksource mid-run. tsc=reliable (or \
          tsc=nowatchdog) turns it off. Passes with either parameter; informational when the clocksource is not \
          the TSC (arm64 and others).",
    remedy: Some(remedy::CMDLINE),
    by_hand: None,
    evaluate: tsc_reliable,
};

fn tsc_reliable(host: &Host, _: &Ctx) -> Eval {
    let cs = read(host, CURRENT_CLOCKSOURCE)?;
    if !super::is_word(&cs) {
        return Err(unknown("current_clocksource: unexpected value"));
    }
    if cs != "tsc" {
        return Ok(Assessment::info(format!(
            "clocksource {cs}, no TSC watchdog"
        )));
    }
    Ok(match cmdline::get(&params(host)?, "tsc") {
        Some(v @ ("reliable" | "nowatchdog")) => Assessment::pass(format!("tsc={v}")),
        _ => Assessment::fail("no tsc=reliable on the kernel command line"),
    })
}

pub(crate) const NMI_WATCHDOG: Check = Check {
    id: id::NMI_WATCHDOG,
    section: Section::System,
    title: "NMI watchdog off",
    doc: "The hard-lockup detector fires a performance-counter NMI on every CPU every few seconds; an NMI cannot \
          be deferred. Passes when kernel.nmi_watchdog is 0 or the kernel has none (arm64 without pseudo-NMI).",
    remedy: Some(remedy::SYSCTL),
    by_hand: None,
    evaluate: nmi_watchdog,
};

fn nmi_watchdog(host: &Host, ctx: &Ctx) -> Eval {
    knob::NMI_WATCHDOG.evaluate(host, ctx)
}

pub(crate) const STAT_INTERVAL: Check = Check {
    id: id::STAT_INTERVAL,
    section: Section::System,
    title: "vmstat updates infrequent",
    doc: "Every vm.stat_interval seconds a per-CPU work item folds memory statistics on each CPU. Passes when \
          vm.stat_interval is 10 or more (the value tuned's realtime profile sets).",
    remedy: Some(remedy::SYSCTL),
    by_hand: None,
    evaluate: stat_interval,
};

fn stat_interval(host: &Host, ctx: &Ctx) -> Eval {
    knob::STAT_INTERVAL.evaluate(host, ctx)
}

pub(crate) const NUMA_BALANCING: Check = Check {
    id: id::NUMA_BALANCING,
    section: Section::System,
    title: "NUMA balancing off",
    doc: "Automatic NUMA balancing unmaps pages periodically to see who touches them, causing page faults in \
          the RT thread. Passes when kernel.numa_balancing is 0 or absent (no NUMA support).",
    remedy: Some(remedy::SYSCTL),
    by_hand: None,
    evaluate: numa_balancing,
};

fn numa_balancing(host: &Host, ctx: &Ctx) -> Eval {
    knob::NUMA_BALANCING.evaluate(host, ctx)
}

pub(crate) const SOFT_WATCHDOG: Check = Check {
    id: id::SOFT_WATCHDOG,
    section: Section::Core,
    title: "Soft-lockup watchdog off RT core",
    doc: "The soft-lockup detector runs a high-priority timer and thread on each CPU in watchdog_cpumask every \
          few seconds. Passes when the watchdog is off (kernel.watchdog or kernel.soft_watchdog 0, or \
          nosoftlockup) or watchdog_cpumask leaves the RT core out (nohz_full does that by default).",
    remedy: Some(remedy::SYSCTL),
    by_hand: None,
    evaluate: soft_watchdog,
};

fn soft_watchdog(host: &Host, ctx: &Ctx) -> Eval {
    if let Ok(p) = machine::cmdline(host)
        && cmdline::get(&p, "nosoftlockup").is_some()
    {
        return Ok(Assessment::pass("nosoftlockup"));
    }
    for (path, name) in [
        (WATCHDOG, "watchdog"),
        (SOFT_WATCHDOG_PATH, "soft_watchdog"),
    ] {
        if host.read_trimmed(path).ok().as_deref() == Some("0") {
            return Ok(Assessment::pass(format!("{name}=0")));
        }
    }
    knob::WATCHDOG_CPUMASK.evaluate(host, ctx)
}
