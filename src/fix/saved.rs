//! Persistence of runtime tunings: fix saves its intent (core, NIC, runtime steps) in
//! /var/lib/rmp-eval/runtime.json; `rmp-eval apply-saved` (the systemd unit at boot, the udev rule when the NIC
//! appears) plans those steps afresh and writes the values. Intent rather than values: IRQ numbers change.

use serde::{Deserialize, Serialize};

use super::kind::file::FileChange;
use super::runtime::Target;
use super::{Change, RUNTIME_JSON, Step, StepId};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::tunable::Persistence;

/// What keeps a step across reboots, as its tunable says (`Tunable::persistence`).
fn persistence(s: StepId) -> Persistence {
    crate::registry::tunable(s).map_or(Persistence::Files, |t| t.persistence)
}

/// Steps whose effect is lost at reboot and that apply-saved re-applies, in apply order.
pub(crate) fn runtime_steps() -> impl Iterator<Item = StepId> {
    StepId::ALL.into_iter().filter(|s| is_runtime(*s))
}

fn is_runtime(s: StepId) -> bool {
    persistence(s).at_boot()
}

/// Steps that concern the NIC (what the udev rule re-applies when the interface appears).
fn is_nic_step(s: StepId) -> bool {
    matches!(persistence(s), Persistence::Nic { .. })
}

const UNIT_PATHS: &[&str] = &[
    "/lib/systemd/system/rmp-eval.service",
    "/usr/lib/systemd/system/rmp-eval.service",
    "/etc/systemd/system/rmp-eval.service",
];
const NIC_UNIT_PATHS: &[&str] = &[
    "/lib/systemd/system/rmp-eval-nic@.service",
    "/usr/lib/systemd/system/rmp-eval-nic@.service",
    "/etc/systemd/system/rmp-eval-nic@.service",
];

/// The runtime.json format this rmp-eval writes and the newest it reads (see journal::FORMAT).
pub(crate) const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Saved {
    pub(crate) version: u32,
    pub(crate) core: usize,
    pub(crate) nic: Option<String>,
    pub(crate) steps: Vec<String>,
}

pub(crate) fn load(host: &Host) -> Result<Option<Saved>> {
    match host.read(RUNTIME_JSON) {
        Ok(t) => parse(&t).map(Some),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn parse(text: &str) -> Result<Saved> {
    let s: Saved =
        serde_json::from_str(text).map_err(|e| Error::failed(format!("{RUNTIME_JSON}: {e}")))?;
    if s.version > FORMAT {
        return Err(Error::failed(format!(
            "{RUNTIME_JSON}: format {}, written by a newer rmp-eval (this {} reads formats up to {FORMAT}); \
             nothing was applied",
            s.version,
            env!("CARGO_PKG_VERSION")
        )));
    }
    Ok(s)
}

/// The persist step: runtime.json holding the runtime steps of this run merged with those saved before.
pub(crate) fn persist_step(
    host: &Host,
    core: usize,
    nic: Option<&str>,
    steps: &[StepId],
) -> Option<Step> {
    let mine: Vec<StepId> = steps.iter().copied().filter(|s| is_runtime(*s)).collect();
    if mine.is_empty() {
        return None;
    }
    let old = load(host).ok().flatten();
    let mut all: Vec<String> = old.as_ref().map(|o| o.steps.clone()).unwrap_or_default();
    all.extend(mine.iter().map(|s| s.to_string()));
    let all: Vec<String> = runtime_steps()
        .filter(|s| all.iter().any(|a| a == s.as_str()))
        .map(|s| s.to_string())
        .collect();
    let nic = nic.map(str::to_string).or_else(|| old.and_then(|o| o.nic));
    let saved = Saved {
        version: FORMAT,
        core,
        nic,
        steps: all,
    };
    let text = format!("{}\n", serde_json::to_string_pretty(&saved).ok()?);
    let before = host.read_bytes(RUNTIME_JSON).ok();
    let mut s = Step {
        id: StepId::Persist,
        title: "Re-apply the runtime settings at every boot".into(),
        why: "kernel values written now are lost at reboot; rmp-eval.service and the udev rule re-apply them".into(),
        changes: vec![],
        notes: vec![],
    };
    if before.as_deref() != Some(text.as_bytes()) {
        s.changes.push(Change::File(FileChange::new(
            RUNTIME_JSON,
            before,
            text.into_bytes(),
            false,
        )));
    }
    if !UNIT_PATHS.iter().any(|p| host.exists(p)) {
        s.note("rmp-eval.service is not installed (install the package): these settings last until reboot");
    }
    if let Some(nic) = &saved.nic
        && saved
            .steps
            .iter()
            .any(|st| StepId::parse(st).is_some_and(is_nic_step))
    {
        follow_nic(host, &mut s, nic);
    }
    Some(s)
}

/// Starts the NIC's watcher now rather than at the next boot: a driver that requests its queue IRQs only when the
/// interface is brought up (igb, e1000e) gets them pinned the first time the MainDevice brings it up.
fn follow_nic(host: &Host, s: &mut Step, nic: &str) {
    // Without the package, the note above already says that nothing is re-applied.
    if !UNIT_PATHS.iter().any(|p| host.exists(p)) {
        return;
    }
    // A unit instance name holds these as they are; udev's rule starts no unit for other names either.
    let plain = nic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if !plain
        || !NIC_UNIT_PATHS.iter().any(|p| host.exists(p))
        || !host.exists(crate::tunable::cpuset::SYSTEMD_RUNNING)
    {
        s.note(format!(
            "IRQs that {nic}'s driver requests when it is next brought up are pinned only after a reboot \
             (no rmp-eval-nic@ unit for it, or systemd is not running): run `rmp-eval apply-saved \
             --nic={nic}` after bringing it up"
        ));
        return;
    }
    s.changes
        .push(Change::Command(super::kind::command::CommandChange {
            argv: [
                "systemctl",
                "start",
                "--no-block",
                &format!("rmp-eval-nic@{nic}.service"),
            ]
            .map(String::from)
            .to_vec(),
            again_on_rollback: false,
            reboot: false,
        }));
}

/// Which of the saved settings a planning covers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ApplyScope<'a> {
    /// Every runtime step (the boot unit, the drift check).
    All,
    /// One interface's: all of the saved NIC's steps; for any other interface only its IRQs, kept off the RT core.
    Nic(&'a str),
}

/// The runtime steps of `saved` in `scope`, planned on the machine as it is now.
pub(crate) fn plan(
    host: &Host,
    saved: &Saved,
    online: Vec<usize>,
    scope: ApplyScope,
) -> Result<Vec<Step>> {
    let t = Target::new(host, saved.core, saved.nic.clone(), online);
    let mut steps = Vec::new();
    for id in saved.steps.iter().filter_map(|s| StepId::parse(s)) {
        let step = match (persistence(id), scope) {
            (Persistence::Files, _) => continue,
            (_, ApplyScope::All) => plan_step(host, &t, id)?,
            // The saved NIC gets all of its steps, each interface its own part of those that have one.
            (
                Persistence::Nic {
                    each_nic: Some(part),
                },
                ApplyScope::Nic(n),
            ) => part(host, &t, n),
            (Persistence::Nic { .. }, ApplyScope::Nic(n)) if saved.nic.as_deref() == Some(n) => {
                plan_step(host, &t, id)?
            }
            (_, ApplyScope::Nic(_)) => continue,
        };
        steps.push(step);
    }
    Ok(steps)
}

/// One step planned as --only would, against the machine as it is.
fn plan_step(host: &Host, t: &Target, id: StepId) -> Result<Step> {
    match crate::registry::tunable(id) {
        Some(tunable) => (tunable.plan)(host, t, &[]),
        None => Err(Error::failed(format!("{id}: not a step of its own"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_json_of_a_newer_format_is_named_not_applied() {
        // As rmp-eval 0.1.0 writes it.
        let v1 =
            r#"{"version": 1, "core": 1, "nic": "enp0s2", "steps": ["workqueue", "irq_affinity"]}"#;
        assert_eq!(parse(v1).unwrap().steps, ["workqueue", "irq_affinity"]);
        let e = parse(&v1.replace("\"version\": 1", "\"version\": 2"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "{RUNTIME_JSON}: format 2, written by a newer rmp-eval"
            )),
            "{e}"
        );
    }
}
