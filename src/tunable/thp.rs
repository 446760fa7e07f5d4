//! Transparent huge pages: the check and the step that sets them to never.

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, unknown};
use crate::fix::runtime::{Target, step, value};
use crate::fix::{Step, StepId, ValueKind};
use crate::host::Host;

use super::{Persistence, Tunable};

pub(crate) const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Thp,
    persistence: Persistence::Boot,
    plan: |host, t, failed| Ok(plan(host, t, failed)),
    risks,
};

pub(crate) const CHECK: Check = Check {
    id: CheckId::Thp,
    section: Section::System,
    title: "Transparent huge pages not always",
    doc: "With THP \"always\", page faults may stall in compaction and khugepaged collapses pages in the \
          background. Passes for never or madvise (only programs that ask get huge pages); fails for always.",
    remedy: Some(StepId::Thp),
    by_hand: None,
    evaluate: thp,
};

fn thp(host: &Host, _: &Ctx) -> Eval {
    let v = match host.read_trimmed(THP_ENABLED) {
        Ok(v) => v,
        Err(e) if e.is_not_found() && host.lacks(THP_ENABLED) => {
            return Ok(Assessment::info("no transparent huge pages in this kernel"));
        }
        Err(e) if e.is_not_found() => return Err(crate::checks::absent(host, THP_ENABLED)),
        Err(e) => return Err(unknown(format!("{THP_ENABLED}: {}", e.reason()))),
    };
    let sel = v
        .split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string());
    match sel.as_deref() {
        Some("always") => Ok(Assessment::fail("enabled=always")),
        Some(s @ ("madvise" | "never")) => Ok(Assessment::pass(format!("enabled={s}"))),
        _ => Err(unknown(format!("unexpected value: {v}"))),
    }
}

fn plan(host: &Host, _: &Target, _: &[CheckId]) -> Step {
    let mut s = step(
        StepId::Thp,
        "Transparent huge pages: never",
        "khugepaged compaction stalls memory access at random",
    );
    if host.exists(THP_ENABLED) {
        value(
            &mut s,
            host,
            THP_ENABLED,
            "never",
            ValueKind::Selected,
            false,
        );
    }
    s
}

fn risks(_: &Step, _: &Target) -> Vec<String> {
    vec![
        "transparent huge pages off: programs that rely on them (databases, JVMs) may lose some throughput".into(),
    ]
}
