//! Frequency and idle-state checks: the core must not change speed or sleep deeply between cycles.

use super::{Assessment, Check, Ctx, Eval, Section, Unknown, id, read, unknown};
use crate::host::Host;
use crate::machine::{self, BOOST, CPU_DIR, NO_TURBO};
use crate::parse::{cmdline, cpuinfo};
use crate::remedy;

const INTEL_MAX_CSTATE: &str = "/sys/module/intel_idle/parameters/max_cstate";
const PROCESSOR_MAX_CSTATE: &str = "/sys/module/processor/parameters/max_cstate";
const IDLE_DRIVER: &str = "/sys/devices/system/cpu/cpuidle/current_driver";

pub(crate) const GOVERNOR: Check = Check {
    id: id::GOVERNOR,
    section: Section::Core,
    title: "CPU governor = performance",
    doc: "Other governors lower the clock when the core looks idle – and an RT core waiting for its next cycle \
          looks idle – so each cycle starts slow. Passes when the core's scaling_governor is performance; \
          unknown when the machine has no cpufreq (VMs, some boards).",
    remedy: Some(remedy::GOVERNOR),
    by_hand: None,
    evaluate: governor,
};

fn governor(host: &Host, ctx: &Ctx) -> Eval {
    let cpu = ctx.core;
    match host.read_trimmed(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")) {
        Ok(g) if g == "performance" => Ok(Assessment::pass(format!("governor={g}"))),
        Ok(g) if !super::is_word(&g) => Err(unknown(format!("governor: unexpected value '{g}'"))),
        Ok(g) => Ok(Assessment::fail(format!("governor={g}"))),
        Err(e) if e.is_not_found() => Err(unknown(format!("no cpufreq governor for cpu{cpu}"))),
        Err(e) => Err(unknown(format!("scaling_governor: {}", e.reason()))),
    }
}

const LOCK_BY_HAND: &str = "the governor is already performance; lock the range: write scaling_max_freq's value \
     into scaling_min_freq (cpupower frequency-set -d <max>), or fix the clock in the firmware setup";

pub(crate) const CPU_FREQUENCY: Check = Check {
    id: id::CPU_FREQUENCY,
    section: Section::Core,
    title: "CPU current frequency",
    doc: "A core whose frequency range is open (min < max) changes speed under the RT thread. Passes when \
          scaling_min_freq equals scaling_max_freq and the current frequency is within 5 % of it (locked).",
    remedy: Some(remedy::GOVERNOR),
    by_hand: None,
    evaluate: cpu_frequency,
};

fn cpu_frequency(host: &Host, ctx: &Ctx) -> Eval {
    let cpu = ctx.core;
    let base = format!("{CPU_DIR}/cpu{cpu}/cpufreq");
    // kHz. Zero, or beyond 100 GHz, is not a frequency (garbage must not pass as "locked", nor overflow).
    let num = |f: &str| -> Result<Option<u64>, Unknown> {
        match host.read_trimmed(&format!("{base}/{f}")) {
            Ok(v) => match v.parse::<u64>() {
                Ok(k) if (1..=100_000_000).contains(&k) => Ok(Some(k)),
                _ => Err(unknown(format!(
                    "{f}: '{}' is not a frequency in kHz",
                    crate::parse::text::sanitize(&v, 24)
                ))),
            },
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(unknown(format!("{f}: {}", e.reason()))),
        }
    };
    let (cur, min, max) = (
        num("scaling_cur_freq")?,
        num("scaling_min_freq")?,
        num("scaling_max_freq")?,
    );
    match (cur, min, max) {
        (Some(c), Some(lo), Some(hi)) if lo == hi && c.abs_diff(hi) <= hi * 5 / 100 => {
            Ok(Assessment::pass(format!("{hi} kHz (locked)")))
        }
        (Some(c), Some(lo), Some(hi)) => {
            let d = if lo == hi {
                format!("cur={c} kHz, locked={hi} kHz")
            } else {
                format!("cur={c} kHz, min={lo} kHz, max={hi} kHz")
            };
            // The governor step sets the performance governor and nothing else: once it is set, the range
            // is the firmware's or the driver's to lock.
            let governor = host.read_trimmed(&format!("{base}/scaling_governor")).ok();
            Ok(if governor.as_deref() == Some("performance") {
                Assessment::fail(d).instead(LOCK_BY_HAND)
            } else {
                Assessment::fail(d)
            })
        }
        (None, None, None) => {
            let mhz = host
                .read(machine::PROC_CPUINFO)
                .ok()
                .and_then(|t| cpuinfo::mhz(&t, cpu));
            Err(match mhz {
                Some(m) => unknown(format!("{m:.0} MHz (/proc/cpuinfo), no cpufreq")),
                None => unknown("unavailable (no cpufreq)"),
            })
        }
        _ => {
            let s = |v: Option<u64>| v.map_or("?".to_string(), |v| format!("{v} kHz"));
            Err(unknown(format!(
                "cur={}, min={}, max={}",
                s(cur),
                s(min),
                s(max)
            )))
        }
    }
}

pub(crate) const CSTATES: Check = Check {
    id: id::CSTATES,
    section: Section::Core,
    title: "Deep C-states capped",
    doc: "Waking from a deep C-state takes tens to hundreds of microseconds, added to every cycle that finds the \
          core asleep. Passes for cpuidle.off=1, a max_cstate=1 on the command line, intel_idle or processor \
          max_cstate 0 or 1, or no cpuidle driver at all (improvement: the original failed a machine whose idle \
          driver is \"none\", which only halts).",
    remedy: Some(remedy::CMDLINE),
    by_hand: None,
    evaluate: cstates,
};

fn cstates(host: &Host, _: &Ctx) -> Eval {
    if let Ok(p) = machine::cmdline(host) {
        if cmdline::get(&p, "cpuidle.off") == Some("1") {
            return Ok(Assessment::pass("cpuidle.off=1"));
        }
        if cmdline::get(&p, "intel_idle.max_cstate") == Some("1")
            || cmdline::get(&p, "processor.max_cstate") == Some("1")
        {
            return Ok(Assessment::pass("cmdline caps to C1"));
        }
    }
    let driver = host.read_trimmed(IDLE_DRIVER).ok();
    match driver.as_deref() {
        Some("none") => return Ok(Assessment::pass("no cpuidle driver (halt only)")),
        // A guest's haltpoll polls a while, then halts: it has no deep C-state to cap.
        Some("haltpoll") => {
            return Ok(Assessment::pass(
                "cpuidle driver haltpoll (poll, then halt)",
            ));
        }
        _ => {}
    }
    // intel_idle's and processor's max_cstate cap those two drivers (a cap on intel_idle hands over to acpi_idle);
    // under any other driver in use they cap nothing.
    let x86 = driver
        .as_deref()
        .is_none_or(|d| d == "intel_idle" || d == "acpi_idle");
    for (path, name) in [
        (INTEL_MAX_CSTATE, "intel_idle.max_cstate"),
        (PROCESSOR_MAX_CSTATE, "processor.max_cstate"),
    ] {
        if !x86 {
            break;
        }
        if let Ok(v) = host.read_trimmed(path) {
            return Ok(if v == "0" || v == "1" {
                Assessment::pass(format!("{name}={v}"))
            } else {
                Assessment::fail(format!("{name}={v}"))
            });
        }
    }
    Err(unknown(match driver {
        Some(d) => format!("cpuidle driver {d}, no max_cstate to read"),
        None => "no indicators".into(),
    }))
}

pub(crate) const TURBO: Check = Check {
    id: id::TURBO,
    section: Section::Core,
    title: "Turbo/boost disabled",
    doc: "Turbo raises the clock while thermal and power budgets allow and drops it when they run out, so cycle \
          times drift with the load on other cores. Passes when cpufreq/boost is 0 or intel_pstate/no_turbo is 1.",
    remedy: Some(remedy::TURBO),
    by_hand: None,
    evaluate: turbo,
};

fn turbo(host: &Host, _: &Ctx) -> Eval {
    match host.read_trimmed(BOOST).as_deref() {
        Ok("0") => return Ok(Assessment::pass("cpufreq/boost=0")),
        Ok("1") => return Ok(Assessment::fail("cpufreq/boost=1")),
        _ => {}
    }
    match host.read_trimmed(NO_TURBO).as_deref() {
        Ok("1") => Ok(Assessment::pass("intel_pstate/no_turbo=1")),
        Ok("0") => Ok(Assessment::fail("intel_pstate/no_turbo=0")),
        _ => Err(unknown("no boost knobs")),
    }
}

/// Idle states whose exit latency is above this (µs) can add a visible delay at 1 kHz.
pub(crate) const IDLE_LATENCY_MAX_US: u64 = 20;

pub(crate) const IDLE_STATES: Check = Check {
    id: id::IDLE_STATES,
    section: Section::Core,
    title: "No deep idle states on RT core",
    doc: "What the core can actually enter: the enabled cpuidle states of the core and their exit latency. A \
          cap such as intel_idle.max_cstate=0 only swaps intel_idle for acpi_idle, which may still offer deep \
          ACPI C-states. Passes when no enabled state has an exit latency above 20 µs (or there is no cpuidle \
          driver). rmp-eval run holds /dev/cpu_dma_latency at 0, which hides this during a measurement but not \
          in production.",
    remedy: Some(remedy::CMDLINE),
    by_hand: None,
    evaluate: idle_states,
};

fn idle_states(host: &Host, ctx: &Ctx) -> Eval {
    let dir = format!("{CPU_DIR}/cpu{}/cpuidle", ctx.core);
    let states = match host.list(&dir) {
        Ok(s) => s,
        Err(e) if e.is_not_found() => {
            return match host.read_trimmed(IDLE_DRIVER) {
                Ok(d) => Ok(Assessment::pass(format!("no idle states (driver {d})"))),
                Err(_) => Err(unknown("no cpuidle information")),
            };
        }
        Err(e) => return Err(unknown(format!("{dir}: {}", e.reason()))),
    };
    let mut deep = Vec::new();
    let mut seen = 0;
    for s in states.iter().filter(|s| s.starts_with("state")) {
        let name = host
            .read_trimmed(&format!("{dir}/{s}/name"))
            .unwrap_or_else(|_| s.clone());
        let lat: u64 = read(host, &format!("{dir}/{s}/latency"))?
            .parse()
            .map_err(|_| unknown(format!("{dir}/{s}/latency: not a number")))?;
        let disabled = host
            .read_trimmed(&format!("{dir}/{s}/disable"))
            .ok()
            .as_deref()
            == Some("1");
        seen += 1;
        if !disabled && lat > IDLE_LATENCY_MAX_US {
            deep.push(format!("{name} {lat} µs"));
        }
    }
    Ok(if deep.is_empty() {
        Assessment::pass(format!(
            "{seen} states, none above {IDLE_LATENCY_MAX_US} µs"
        ))
    } else {
        Assessment::fail(format!("enabled: {}", deep.join(", ")))
    })
}
