//! fix: Step → Plan (pure data, diffable) → Journal (previous state first, fsynced) → apply → verify; rollback
//! restores from the journal. See docs/tasks/fix.md ("What fix does when…") and docs/json.md (the journal).
//!
//! The change executor. A step is a list of `Change`s of a few kinds; everything about one kind lives in one
//! file of `kind/`: its data, how its previous state is journaled (`record`), how it is made (`apply`), read back
//! (`verify`), put back (`restore`, also the rollback preview) and shown (`text`/`json`). `kind/mod.rs` only
//! dispatches; `apply.rs` orders a whole plan (journal, apply, revert on failure), `undo.rs` a rollback,
//! `commands/apply_saved.rs` re-applies runtime changes through the same `kind::apply`.
//!
//! Adding a step: a tunable (crate::tunable, one module and one line in `registry::TUNABLES`): its plan reads
//! the machine and returns the `Change`s that differ (see runtime.rs). It then gets journal, rollback, dry-run,
//! JSON, drift and apply-saved for free. Adding a change kind: a module in `kind/` with the six functions, a
//! variant in `Change` and in `kind::Entry`; the compiler lists every match to extend.

pub mod apply;
pub(crate) mod boot_flush;
pub(crate) mod drift;
pub(crate) mod earlier;
pub mod ethtool;
pub mod journal;
pub mod kind;
pub mod plan;
pub(crate) mod reconcile;
pub mod render;
pub(crate) mod risk;
pub(crate) mod rollback;
pub mod runtime;
pub(crate) mod saved;
pub(crate) mod trial;
pub mod undo;

use serde::{Deserialize, Serialize};

pub use crate::remedy::StepId;

pub(crate) const STATE_DIR: &str = "/var/lib/rmp-eval";
pub(crate) const JOURNAL_DIR: &str = "/var/lib/rmp-eval/journal";
pub(crate) const RUNTIME_JSON: &str = "/var/lib/rmp-eval/runtime.json";
pub(crate) const CMDLINE_STATE: &str = "/var/lib/rmp-eval/cmdline";

/// The files fix may write, besides those its journal names: where a killed run may have left a temporary file.
pub(crate) fn known_targets() -> Vec<&'static str> {
    let mut v = vec![
        RUNTIME_JSON,
        CMDLINE_STATE,
        crate::tunable::sysctl::SYSCTL_FILE,
        crate::tunable::irqbalance::IRQBALANCE_DEFAULTS,
    ];
    v.extend(crate::tunable::cmdline::boot::files());
    v.extend([
        crate::tunable::cmdline::boot::grub_trial::CUSTOM_CFG,
        crate::tunable::cmdline::boot::grub_trial::GRUBENV,
    ]);
    v
}

/// "CPU 3" or "CPUs 3,7": a CPU list as a plan's sentence names it.
pub(crate) fn cpus_named(cpus: &[usize]) -> String {
    let list = crate::parse::cpulist::format(cpus);
    if cpus.len() == 1 {
        format!("CPU {list}")
    } else {
        format!("CPUs {list}")
    }
}

/// How a kernel value reads back, so that "3" and "00000003" count as the same mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueKind {
    Exact,
    CpuList,
    HexMask,
    /// "always madvise [never]": the bracketed word is the value.
    Selected,
}

impl ValueKind {
    /// The value as it would be written back (the bracketed word of a Selected file).
    pub(crate) fn normal(self, raw: &str) -> String {
        let t = raw.trim();
        match self {
            ValueKind::Selected => t
                .split_whitespace()
                .find(|w| w.starts_with('['))
                .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
                .unwrap_or_else(|| t.to_string()),
            _ => t.to_string(),
        }
    }

    pub(crate) fn same(self, a: &str, b: &str) -> bool {
        match self {
            ValueKind::CpuList => crate::parse::cpulist::parse(a)
                .ok()
                .zip(crate::parse::cpulist::parse(b).ok())
                .is_some_and(|(x, y)| x == y),
            ValueKind::HexMask => crate::parse::mask::parse(a)
                .ok()
                .zip(crate::parse::mask::parse(b).ok())
                .is_some_and(|(x, y)| x == y),
            _ => self.normal(a) == self.normal(b),
        }
    }
}

/// One change of a step. Pure data: what is there now and what will be. Each kind's logic: `kind/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create, replace or remove a file.
    File(kind::file::FileChange),
    /// Write a kernel value (sysfs/procfs).
    Value(kind::value::ValueChange),
    /// One field of a NIC's ethtool settings. Under --root nothing is written: the plan shows what would be done.
    Ethtool(kind::nic::EthtoolChange),
    /// Run a program (never through a shell).
    Command(kind::command::CommandChange),
    /// Make the RT core's slice an isolated cgroup v2 partition (systemd starts the slice).
    Partition(kind::partition::PartitionChange),
}

impl Change {
    /// What the change is to, as reports and the journal name it.
    pub(crate) fn target(&self) -> String {
        kind::target(self)
    }
    pub(crate) fn reboot_required(&self) -> bool {
        kind::reboot_required(self)
    }
    /// Whether the change takes effect as it is written: a kernel value, a NIC setting, a partition. Files and
    /// programs wait for a service restart or a reboot, and are fix's alone (journaled): apply-saved and the
    /// monitor re-apply only the changes that take effect now.
    pub(crate) fn takes_effect_now(&self) -> bool {
        match self {
            Change::Value(_) | Change::Ethtool(_) | Change::Partition(_) => true,
            Change::File(_) | Change::Command(_) => false,
        }
    }
}

/// A remedy: id, title, why, and its changes. No changes: already as wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub id: StepId,
    pub title: String,
    pub why: String,
    pub changes: Vec<Change>,
    /// What the step could not do or leaves to the user.
    pub notes: Vec<Note>,
}

/// What a step says besides its changes. Its text (`Display`) is what the plan and its JSON show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A fact about the step: why nothing changes, what could not be read.
    Info(String),
    /// A risk of the step's changes (fix/risk.rs), stated in the plan.
    Risk(String),
    /// What fix cannot do here and the user must (no boot loader found): fix exits 1.
    ByHand(String),
    /// The step was refused: nothing of it is changed, and fix exits 1.
    Refused(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Info(t) => f.write_str(t),
            Note::Risk(t) => write!(f, "risk: {t}"),
            Note::ByHand(t) => write!(f, "set by hand: {t}"),
            Note::Refused(t) => write!(f, "refused: {t}"),
        }
    }
}

impl Step {
    /// Adds a note of fact (why nothing changes, what could not be read).
    pub(crate) fn note(&mut self, text: impl Into<String>) {
        self.notes.push(Note::Info(text.into()));
    }
    /// The risks of the step's changes.
    pub(crate) fn risks(&self) -> impl Iterator<Item = &str> {
        self.notes.iter().filter_map(|n| match n {
            Note::Risk(r) => Some(r.as_str()),
            _ => None,
        })
    }
    /// What the user must do by hand because fix cannot, if anything.
    pub(crate) fn by_hand(&self) -> Option<&str> {
        self.notes.iter().find_map(|n| match n {
            Note::ByHand(h) => Some(h.as_str()),
            _ => None,
        })
    }
    /// Refuses the step: no changes, and why.
    pub(crate) fn refuse(&mut self, why: impl Into<String>) {
        self.changes.clear();
        self.notes.push(Note::Refused(why.into()));
    }
    /// Why the step was refused, if it was.
    pub fn refusal(&self) -> Option<&str> {
        self.notes.iter().find_map(|n| match n {
            Note::Refused(r) => Some(r.as_str()),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    pub(crate) fn changes(&self) -> impl Iterator<Item = &Change> {
        self.steps.iter().flat_map(|s| s.changes.iter())
    }
    pub fn is_empty(&self) -> bool {
        self.changes().next().is_none()
    }
    /// Whether anything of the plan takes effect now (else it all waits for a restart or a reboot).
    pub(crate) fn takes_effect_now(&self) -> bool {
        self.changes().any(Change::takes_effect_now)
    }
    /// What the plan leaves undone, step by step: what was refused and what the user must set by hand.
    pub(crate) fn not_done(&self) -> NotDone {
        let each = |f: fn(&Step) -> Option<&str>, what: &str| -> Vec<String> {
            self.steps
                .iter()
                .filter_map(|s| f(s).map(|t| format!("[{}] {what}: {t}", s.id)))
                .collect()
        };
        NotDone {
            refused: each(Step::refusal, "refused"),
            by_hand: each(Step::by_hand, "set by hand"),
        }
    }
}

/// What a plan leaves undone (each "[step] refused: why" or "[step] set by hand: what"): the machine still falls
/// short, and fix exits 1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NotDone {
    pub(crate) refused: Vec<String>,
    pub(crate) by_hand: Vec<String>,
}

impl NotDone {
    pub(crate) fn is_empty(&self) -> bool {
        self.refused.is_empty() && self.by_hand.is_empty()
    }
    /// Every line, the refused first.
    pub(crate) fn lines(&self) -> Vec<String> {
        [self.refused.clone(), self.by_hand.clone()].concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_compare_as_the_kernel_prints() {
        assert!(ValueKind::HexMask.same("00000000,00000003", "3"));
        assert!(!ValueKind::HexMask.same("2", "3"));
        assert!(ValueKind::CpuList.same("0-2", "0,1,2"));
        assert!(ValueKind::Selected.same("always madvise [never]", "never"));
        assert_eq!(
            ValueKind::Selected.normal("[always] madvise never"),
            "always"
        );
        assert!(!ValueKind::Exact.same("1", "0"));
    }

    fn step(id: StepId, changes: Vec<Change>, notes: Vec<Note>) -> Step {
        Step {
            id,
            title: String::new(),
            why: String::new(),
            changes,
            notes,
        }
    }

    #[test]
    fn only_kernel_values_nic_settings_and_partitions_take_effect_now() {
        let value = Change::Value(kind::value::ValueChange {
            path: "/proc/sys/kernel/timer_migration".into(),
            before: "1".into(),
            after: "0".into(),
            kind: ValueKind::Exact,
            refusable: false,
            label: None,
            owner: None,
        });
        let program = Change::Command(kind::command::CommandChange {
            argv: vec!["update-grub".into()],
            again_on_rollback: true,
            reboot: true,
        });
        assert!(value.takes_effect_now() && !program.takes_effect_now());
        let waits = Plan {
            steps: vec![step(StepId::Cmdline, vec![program.clone()], vec![])],
        };
        assert!(!waits.takes_effect_now());
        let both = Plan {
            steps: vec![step(StepId::Sysctl, vec![program, value], vec![])],
        };
        assert!(both.takes_effect_now());
    }

    #[test]
    fn what_a_plan_leaves_undone_is_named_by_step() {
        let plan = Plan {
            steps: vec![
                step(
                    StepId::Cmdline,
                    vec![],
                    vec![Note::ByHand("add nohz_full=1".into())],
                ),
                step(StepId::Turbo, vec![], vec![Note::Refused("no knob".into())]),
                step(
                    StepId::Thp,
                    vec![],
                    vec![Note::Info("already never".into())],
                ),
            ],
        };
        let left = plan.not_done();
        assert_eq!(left.refused, ["[turbo] refused: no knob"]);
        assert_eq!(left.by_hand, ["[cmdline] set by hand: add nohz_full=1"]);
        assert_eq!(
            left.lines(),
            [
                "[turbo] refused: no knob",
                "[cmdline] set by hand: add nohz_full=1"
            ]
        );
        assert!(Plan::default().not_done().is_empty());
    }
}
