//! Two more command-line parameters against noise on the RT core: skew_tick (the CPUs' ticks apart, not contending
//! for the same locks at the same instant) and tsc=reliable (no clocksource watchdog timer). The other sources
//! have their own tunables (thp.rs, workqueue.rs, sysctl/).

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, read, unknown};
use crate::host::Host;
use crate::machine::{self, CURRENT_CLOCKSOURCE, PROC_CMDLINE};
use crate::parse::cmdline;
use crate::remedy::StepId;

fn params(host: &Host) -> Result<Vec<cmdline::Param>, Unknown> {
    machine::cmdline(host).map_err(|e| unknown(format!("{PROC_CMDLINE}: {}", e.reason())))
}

pub(crate) const SKEW_TICK: Check = Check {
    id: CheckId::SkewTick,
    section: Section::System,
    title: "Scheduler ticks skewed",
    doc: "By default every CPU's tick fires at the same instant and they contend for the same locks \
          (jiffies, RCU); skew_tick=1 offsets them. Passes when skew_tick=1 is on the kernel command line.",
    remedy: Some(StepId::Cmdline),
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
    id: CheckId::TscReliable,
    section: Section::System,
    title: "TSC watchdog off",
    doc: "On x86 the clocksource watchdog compares the TSC with another clock every 0.5 s from a timer that \
          visits each CPU, and may demote the TSC to a slow clocksource mid-run. tsc=reliable (or \
          tsc=nowatchdog) turns it off. Passes with either parameter; informational when the clocksource is not \
          the TSC (arm64 and others).",
    remedy: Some(StepId::Cmdline),
    by_hand: None,
    evaluate: tsc_reliable,
};

fn tsc_reliable(host: &Host, _: &Ctx) -> Eval {
    let cs = read(host, CURRENT_CLOCKSOURCE)?;
    if !crate::checks::is_word(&cs) {
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
