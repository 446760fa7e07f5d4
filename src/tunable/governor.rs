//! The cpufreq governor: its checks (governor, cpu_frequency) and the step that sets performance on the RT core.

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, unknown};
use crate::fix::runtime::{Target, step, value};
use crate::fix::{Step, StepId, ValueKind};
use crate::host::Host;
use crate::machine::{self, CPU_DIR};
use crate::parse::cpuinfo;
use crate::parse::kint::{self, Range};

use super::{Persistence, Tunable};

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Governor,
    persistence: Persistence::Boot,
    plan: |host, t, failed| Ok(plan(host, t, failed)),
    risks,
};

pub(crate) const GOVERNOR: Check = Check {
    id: CheckId::Governor,
    section: Section::Core,
    title: "CPU governor = performance",
    doc: "Other governors lower the clock when the core looks idle – and an RT core waiting for its next cycle \
          looks idle – so each cycle starts slow. Passes when the core's scaling_governor is performance; \
          unknown when the machine has no cpufreq (VMs, some boards).",
    remedy: Some(StepId::Governor),
    by_hand: None,
    evaluate: governor,
};

fn governor(host: &Host, ctx: &Ctx) -> Eval {
    let cpu = ctx.core;
    match host.read_trimmed(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")) {
        Ok(g) if g == "performance" => Ok(Assessment::pass(format!("governor={g}"))),
        Ok(g) if !crate::checks::is_word(&g) => {
            Err(unknown(format!("governor: unexpected value '{g}'")))
        }
        Ok(g) => Ok(Assessment::fail(format!("governor={g}"))),
        Err(e) if e.is_not_found() => Err(unknown(format!("no cpufreq governor for cpu{cpu}"))),
        Err(e) => Err(unknown(format!("scaling_governor: {}", e.reason()))),
    }
}

const LOCK_BY_HAND: &str = "the governor is already performance; lock the range: write scaling_max_freq's value \
     into scaling_min_freq (cpupower frequency-set -d <max>), or fix the clock in the firmware setup";

pub(crate) const CPU_FREQUENCY: Check = Check {
    id: CheckId::CpuFrequency,
    section: Section::Core,
    title: "CPU current frequency",
    doc: "A core whose frequency range is open (min < max) changes speed under the RT thread. Passes when \
          scaling_min_freq equals scaling_max_freq and the current frequency is within 5 % of it (locked).",
    remedy: Some(StepId::Governor),
    by_hand: None,
    evaluate: cpu_frequency,
};

fn cpu_frequency(host: &Host, ctx: &Ctx) -> Eval {
    let cpu = ctx.core;
    let base = format!("{CPU_DIR}/cpu{cpu}/cpufreq");
    // kHz. Zero, or beyond 100 GHz, is not a frequency (garbage must not pass as "locked", nor overflow).
    let num = |f: &str| -> Result<Option<u64>, Unknown> {
        match host.read_trimmed(&format!("{base}/{f}")) {
            // "%u" kHz.
            Ok(v) => match kint::uint(&v, &Range::U32) {
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
    // scaling_cur_freq is cpufreq's idea of the clock; cpuinfo_cur_freq the hardware's, where the driver reads it.
    // (cpuinfo_cur_freq is root's to read: one it may not read is simply not there.)
    let hw = format!("{base}/cpuinfo_cur_freq");
    let cur = match num("scaling_cur_freq")? {
        Some(c) => Some(c),
        None if host.read_trimmed(&hw).is_ok() => num("cpuinfo_cur_freq")?,
        None => None,
    };
    let (min, max) = (num("scaling_min_freq")?, num("scaling_max_freq")?);
    let governor = host.read_trimmed(&format!("{base}/scaling_governor")).ok();
    match (cur, min, max) {
        (Some(c), Some(lo), Some(hi)) if lo == hi && c.abs_diff(hi) <= hi * 5 / 100 => {
            Ok(Assessment::pass(format!("{hi} kHz (locked)")))
        }
        // An open range decides it whatever the clock reads now.
        (c, Some(lo), Some(hi)) if lo != hi || c.is_some() => {
            let d = match c {
                Some(c) if lo == hi => format!("cur={c} kHz, locked={hi} kHz"),
                Some(c) => format!("cur={c} kHz, min={lo} kHz, max={hi} kHz"),
                None => format!("min={lo} kHz, max={hi} kHz (current frequency not readable)"),
            };
            // The governor step sets the performance governor and nothing else: once it is set, the range
            // is the firmware's or the driver's to lock.
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

fn plan(host: &Host, t: &Target, _: &[CheckId]) -> Step {
    let mut s = step(
        StepId::Governor,
        "CPU frequency governor: performance",
        "a slower governor lets the RT core's clock drop between cycles, so each wakeup runs slower and later",
    );
    let dir = format!("{CPU_DIR}/cpu{}/cpufreq", t.core);
    match host.read(&format!("{dir}/scaling_available_governors")) {
        Ok(av) if !av.split_whitespace().any(|g| g == "performance") => s.note(format!(
            "CPU {} offers no performance governor ({})",
            t.core,
            av.trim()
        )),
        Ok(_) => value(
            &mut s,
            host,
            &format!("{dir}/scaling_governor"),
            "performance",
            ValueKind::Exact,
            false,
        ),
        Err(_) => s.note(format!(
            "CPU {} has no cpufreq control (nothing to set)",
            t.core
        )),
    }
    s
}

fn risks(_: &Step, _: &Target) -> Vec<String> {
    vec!["the CPU stays at its highest clock: more power and heat (a fanless PC may throttle when hot)".into()]
}
