//! Idle-state checks: the core must not sleep deeply between cycles (C-states capped on the command line, no deep
//! idle state enabled on the RT core). Its speed is governor.rs's and turbo.rs's.

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, read, unknown};
use crate::host::Host;
use crate::machine::{self, CPU_DIR, CPUIDLE_DRIVER as IDLE_DRIVER};
use crate::parse::cmdline;
use crate::parse::kint::{self, Range};
use crate::remedy::StepId;

const INTEL_MAX_CSTATE: &str = "/sys/module/intel_idle/parameters/max_cstate";
const PROCESSOR_MAX_CSTATE: &str = "/sys/module/processor/parameters/max_cstate";

pub(crate) const CSTATES: Check = Check {
    id: CheckId::Cstates,
    section: Section::Core,
    title: "Deep C-states capped",
    doc: "Waking from a deep C-state takes tens to hundreds of microseconds, added to every cycle that finds the \
          core asleep. Passes for cpuidle.off=1, a max_cstate=1 on the command line, intel_idle or processor \
          max_cstate 0 or 1, or no cpuidle driver at all (improvement: the original failed a machine whose idle \
          driver is \"none\", which only halts).",
    remedy: Some(StepId::Cmdline),
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
            // Both are "uint" module parameters ("%u").
            let n = kint::uint(&v, &Range::U32).map_err(|e| {
                unknown(format!("{name}: '{}' {e}", crate::checks::sanitize(&v, 24)))
            })?;
            return Ok(if n <= 1 {
                Assessment::pass(format!("{name}={n}"))
            } else {
                Assessment::fail(format!("{name}={n}"))
            });
        }
    }
    Err(unknown(match driver {
        Some(d) => format!("cpuidle driver {d}, no max_cstate to read"),
        None => "no indicators".into(),
    }))
}

/// Idle states whose exit latency is above this (µs) can add a visible delay at 1 kHz.
pub(crate) const IDLE_LATENCY_MAX_US: u64 = 20;

pub(crate) const IDLE_STATES: Check = Check {
    id: CheckId::IdleStates,
    section: Section::Core,
    title: "No deep idle states on RT core",
    doc: "What the core can actually enter: the enabled cpuidle states of the core and their exit latency. A \
          cap such as intel_idle.max_cstate=0 only swaps intel_idle for acpi_idle, which may still offer deep \
          ACPI C-states. Passes when no enabled state has an exit latency above 20 µs (or there is no cpuidle \
          driver). rmp-eval run holds /dev/cpu_dma_latency at 0, which hides this during a measurement but not \
          in production.",
    remedy: Some(StepId::Cmdline),
    by_hand: None,
    evaluate: idle_states,
};

/// The cpuidle driver in use, when the kernel names one ("none", "intel_idle", "psci_idle").
fn idle_driver(host: &Host) -> Result<String, Unknown> {
    match host.read_trimmed(IDLE_DRIVER) {
        Ok(d) if crate::checks::is_word(&d) => Ok(d),
        Ok(d) => Err(unknown(format!(
            "{IDLE_DRIVER}: unexpected value '{}'",
            crate::checks::sanitize(&d, 24)
        ))),
        Err(e) if e.is_not_found() => Err(crate::checks::absent(host, IDLE_DRIVER)),
        Err(e) => Err(unknown(format!("{IDLE_DRIVER}: {}", e.reason()))),
    }
}

/// No idle state listed for the core: true only without a cpuidle driver. A registered driver gives every
/// online CPU a cpuidle directory with at least one state, so its absence (or an empty one) is not the kernel's.
fn no_states(host: &Host, dir: &str, core: usize) -> Eval {
    let driver = idle_driver(host)?;
    if driver == "none" {
        return Ok(Assessment::pass("no idle states (driver none)"));
    }
    if host.exists(dir) || !crate::checks::not_captured(host, dir) {
        return Err(unknown(format!(
            "cpuidle driver {driver} lists no idle states for CPU{core} (the kernel gives each CPU at least one)"
        )));
    }
    Err(crate::checks::absent(host, dir))
}

fn idle_states(host: &Host, ctx: &Ctx) -> Eval {
    let dir = format!("{CPU_DIR}/cpu{}/cpuidle", ctx.core);
    let states = match host.list(&dir) {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return no_states(host, &dir, ctx.core),
        Err(e) => return Err(unknown(format!("{dir}: {}", e.reason()))),
    };
    if !states.iter().any(|s| s.starts_with("state")) {
        return no_states(host, &dir, ctx.core);
    }
    let mut deep = Vec::new();
    let mut seen = 0;
    for s in states.iter().filter(|s| s.starts_with("state")) {
        let name = host
            .read_trimmed(&format!("{dir}/{s}/name"))
            .unwrap_or_else(|_| s.clone());
        let num = |f: &str, r: &Range| -> Result<u64, Unknown> {
            let path = format!("{dir}/{s}/{f}");
            let v = read(host, &path)?;
            kint::uint(&v, r)
                .map_err(|e| unknown(format!("{path}: '{}' {e}", crate::checks::sanitize(&v, 24))))
        };
        // Exit latency in µs ("%llu"); disable is 0 or 1 (a state the user turned off).
        let lat = num("latency", &Range::U64)?;
        let disabled = match host.read_trimmed(&format!("{dir}/{s}/disable")) {
            Err(e) if e.is_not_found() => false,
            _ => num("disable", &Range::BOOL)? == 1,
        };
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
