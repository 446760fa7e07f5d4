//! Turbo / boost: its check and the step that turns it off (intel_pstate no_turbo, or cpufreq boost).

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, unknown};
use crate::fix::runtime::{Target, step, value};
use crate::fix::{Step, StepId, ValueKind};
use crate::host::Host;

use super::{Persistence, Tunable};

pub(crate) const BOOST: &str = "/sys/devices/system/cpu/cpufreq/boost";
pub(crate) const NO_TURBO: &str = "/sys/devices/system/cpu/intel_pstate/no_turbo";

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Turbo,
    persistence: Persistence::Boot,
    plan: |host, t, failed| Ok(plan(host, t, failed)),
    risks,
};

pub(crate) const CHECK: Check = Check {
    id: CheckId::Turbo,
    section: Section::Core,
    title: "Turbo/boost disabled",
    doc: "Turbo raises the clock while thermal and power budgets allow and drops it when they run out, so cycle \
          times drift with the load on other cores. Passes when cpufreq/boost is 0 or intel_pstate/no_turbo is 1.",
    remedy: Some(StepId::Turbo),
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

fn plan(host: &Host, _: &Target, _: &[CheckId]) -> Step {
    let mut s = step(
        StepId::Turbo,
        "Turbo / boost off",
        "turbo changes the clock with load and temperature: cycle times wander",
    );
    if host.exists(NO_TURBO) {
        value(&mut s, host, NO_TURBO, "1", ValueKind::Exact, false);
    } else if host.exists(BOOST) {
        value(&mut s, host, BOOST, "0", ValueKind::Exact, false);
    } else {
        s.note("no turbo control (neither intel_pstate/no_turbo nor cpufreq/boost)");
    }
    s
}

fn risks(_: &Step, _: &Target) -> Vec<String> {
    vec!["turbo off: every CPU loses its peak clock speed, other work runs slower".into()]
}
