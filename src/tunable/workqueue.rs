//! Unbound workqueues: the check that the RT core is out of their cpumask, and the step that takes it out.

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, read, unknown};
use crate::fix::runtime::{Target, step, value};
use crate::fix::{Step, StepId, ValueKind};
use crate::host::Host;
use crate::parse::mask;

use super::{Persistence, Tunable};

pub(crate) const WQ_CPUMASK: &str = "/sys/devices/virtual/workqueue/cpumask";

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Workqueue,
    persistence: Persistence::Boot,
    plan: |host, t, failed| Ok(plan(host, t, failed)),
    risks,
};

pub(crate) const CHECK: Check = Check {
    id: CheckId::Workqueue,
    section: Section::Core,
    title: "Unbound workqueues avoid RT core",
    doc: "Unbound kernel work (writeback, crypto, filesystem work) runs on the CPUs of the workqueue cpumask. \
          Passes when /sys/devices/virtual/workqueue/cpumask leaves the RT core out.",
    remedy: Some(StepId::Workqueue),
    by_hand: None,
    evaluate: workqueue,
};

fn workqueue(host: &Host, ctx: &Ctx) -> Eval {
    let raw = read(host, WQ_CPUMASK)?;
    let cpus = mask::parse(&raw).map_err(|_| unknown(format!("cpumask {raw} is not a mask")))?;
    Ok(if cpus.contains(&ctx.core) {
        Assessment::fail(format!("cpumask {raw} includes CPU{}", ctx.core))
    } else {
        Assessment::pass(format!("cpumask {raw}"))
    })
}

fn plan(host: &Host, t: &Target, _: &[CheckId]) -> Step {
    let mut s = step(
        StepId::Workqueue,
        "Unbound workqueues off the RT core",
        "kernel work items run wherever the workqueue cpumask allows",
    );
    if host.exists(WQ_CPUMASK) {
        value(
            &mut s,
            host,
            WQ_CPUMASK,
            &mask::format(&t.housekeeping(), t.nbits()),
            ValueKind::HexMask,
            false,
        );
    }
    s
}

fn risks(_: &Step, t: &Target) -> Vec<String> {
    crate::fix::risk::alone(t, "all unbound kernel work")
        .into_iter()
        .collect()
}
