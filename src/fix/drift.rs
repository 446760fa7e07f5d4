//! Drift: a value fix applied and saved that no longer holds (irqbalance restarted, a driver reloaded, an
//! interface went down and up, someone wrote it by hand). The runtime steps saved in runtime.json are planned
//! afresh — by intent, as apply-saved does at boot, because IRQ numbers change — and the sysctl values fix wrote
//! to its sysctl.d file are compared with the kernel's. What a plan would change is drift. Reads only; the monitor
//! re-applies through `reapply`, with the executor fix uses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::kind::{self, Took};
use super::runtime::value;
use super::{Change, Step, StepId, ValueKind, saved};
use crate::error::Result;
use crate::host::Host;
use crate::tunable::sysctl::SYSCTL_FILE;
use crate::tunable::sysctl::knob::{SYSCTLS, Wanted};

/// Targets the kernel refused when the monitor re-applied them (kernel-managed IRQs): not counted as drift again.
pub(crate) const REFUSED: &str = "/var/lib/rmp-eval/monitor-refused.json";

/// The sysctl values in fix's sysctl.d file that the kernel does not have now, as a step of Value changes.
fn sysctl(host: &Host) -> Option<Step> {
    let text = host.read(SYSCTL_FILE).ok()?;
    let file: BTreeMap<String, String> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut s = Step {
        id: StepId::Sysctl,
        title: "Kernel settings (sysctl)".into(),
        why: String::new(),
        changes: vec![],
        notes: vec![],
    };
    for knob in SYSCTLS {
        let Some(want) = file.get(knob.key) else {
            continue;
        };
        let kind = match knob.want {
            Wanted::NotOnCore => ValueKind::CpuList,
            Wanted::Equals(..) | Wanted::AtLeast(..) => ValueKind::Exact,
        };
        value(&mut s, host, &knob.path(), want, kind, false);
    }
    Some(s)
}

/// The steps whose values have drifted, planned now (only the changes that differ). Empty: nothing drifted.
pub(crate) fn find(
    host: &Host,
    saved: Option<&saved::Saved>,
    online: Vec<usize>,
) -> Result<Vec<Step>> {
    let refused = refused(host);
    let mut steps: Vec<Step> = match saved {
        Some(s) => saved::plan(host, s, online, saved::ApplyScope::All)?,
        None => Vec::new(),
    };
    steps.extend(sysctl(host));
    for s in &mut steps {
        s.changes.retain(|c| !refused.contains(&c.target()));
    }
    steps.retain(|s| !s.changes.is_empty());
    Ok(steps)
}

/// A drifted change as `describe` says it: target, value now, value fix set.
pub(crate) type Described = (String, String, String);

/// What a change of a drift plan says: target, value now, value fix set.
pub(crate) fn describe(c: &Change) -> Described {
    match c {
        Change::Value(v) => (v.path.clone(), v.before.clone(), v.after.clone()),
        Change::Ethtool(e) => (c.target(), e.before.to_string(), e.after.to_string()),
        Change::Partition(p) => (c.target(), p.before.clone(), "isolated".into()),
        other => (other.target(), String::new(), String::new()),
    }
}

/// One pass of the monitor over drift: what drifted, and with `reapply` what was written again.
#[derive(Debug, Default)]
pub(crate) struct Pass {
    /// Each drifted step with its changes, as `describe` says them.
    pub(crate) drifted: Vec<(StepId, Vec<Described>)>,
    /// What re-applying did, when it was asked for and something had drifted.
    pub(crate) reapplied: Option<Reapplied>,
    /// Drifted values left after the pass.
    pub(crate) remaining: usize,
}

/// What the monitor's re-apply did.
#[derive(Debug, Default)]
pub(crate) struct Reapplied {
    pub(crate) written: usize,
    /// Targets the kernel refused (managed IRQs, unsupported): no longer counted.
    pub(crate) refused: Vec<String>,
    pub(crate) problems: Vec<String>,
}

impl Pass {
    /// Drifted values per step, before any re-apply.
    pub(crate) fn per_step(&self, id: StepId) -> usize {
        self.drifted
            .iter()
            .find(|(s, _)| *s == id)
            .map_or(0, |(_, c)| c.len())
    }
    /// The values written again (0 without a re-apply).
    pub(crate) fn written(&self) -> usize {
        self.reapplied.as_ref().map_or(0, |r| r.written)
    }
}

/// Finds the drift of what fix saved on the `online` CPUs; with `reapply`, writes the drifted values again and
/// finds what is left.
pub(crate) fn pass(
    host: &Host,
    saved: Option<&saved::Saved>,
    online: Vec<usize>,
    reapply: bool,
) -> Result<Pass> {
    let found = find(host, saved, online.clone())?;
    let count = |steps: &[Step]| steps.iter().map(|s| s.changes.len()).sum::<usize>();
    let mut pass = Pass {
        drifted: found
            .iter()
            .map(|s| (s.id, s.changes.iter().map(describe).collect()))
            .collect(),
        reapplied: None,
        remaining: count(&found),
    };
    if reapply && pass.remaining > 0 {
        let (written, refused, problems) = self::reapply(host, &found)?;
        pass.reapplied = Some(Reapplied {
            written,
            refused,
            problems,
        });
        pass.remaining = count(&find(host, saved, online)?);
    }
    Ok(pass)
}

/// Re-applies the changes of `steps` (kernel values and NIC settings only, as apply-saved). Returns the number
/// written, the targets the kernel refused (remembered, so they are not counted as drift again) and problems.
pub(crate) fn reapply(host: &Host, steps: &[Step]) -> Result<(usize, Vec<String>, Vec<String>)> {
    let (mut written, mut refused, mut problems) = (0, Vec::new(), Vec::new());
    for c in steps.iter().flat_map(|s| s.changes.iter()) {
        if !c.takes_effect_now() {
            continue;
        }
        match kind::apply(host, c).map(|t| kind::verify(host, c, t)) {
            Ok(Took::Took) => written += 1,
            Ok(Took::Refused(_) | Took::Unsupported(_)) => refused.push(c.target()),
            Ok(Took::WouldRun) => {}
            Ok(t) => problems.push(format!("{}: {t:?}", c.target())),
            Err(e) => problems.push(e.to_string()),
        }
    }
    remember_refused(host, &refused)?;
    Ok((written, refused, problems))
}

/// Adds targets the kernel refused to the ones drift no longer counts (fix calls it for what it could not apply:
/// without it the monitor reported the guest's managed virtio IRQs as drift at every pass).
pub(crate) fn remember_refused(host: &Host, targets: &[String]) -> Result<()> {
    if targets.is_empty() {
        return Ok(());
    }
    let mut all = refused(host);
    all.extend(targets.iter().cloned());
    all.sort();
    all.dedup();
    let text = serde_json::to_string_pretty(&Refused { targets: all }).unwrap_or_default();
    host.write_atomic(REFUSED, format!("{text}\n").as_bytes(), None)?;
    Ok(())
}

#[derive(Serialize, Deserialize, Default)]
struct Refused {
    targets: Vec<String>,
}

fn refused(host: &Host) -> Vec<String> {
    host.read(REFUSED)
        .ok()
        .and_then(|t| serde_json::from_str::<Refused>(&t).ok())
        .map(|r| r.targets)
        .unwrap_or_default()
}
