//! fix: Step → Plan (pure data, diffable) → Journal (previous state first, fsynced) → apply → verify.
//! rollback reads the journal. See docs/design.md and docs/guide.md, "fix and rollback".

pub mod apply;
pub mod boot;
pub mod cmdline;
pub mod ethtool;
pub mod grub;
pub mod irq;
pub mod journal;
pub mod plan;
pub mod render;
pub mod runtime;
pub mod saved;
pub mod undo;

use serde::{Deserialize, Serialize};

pub const STATE_DIR: &str = "/var/lib/rmp-eval";
pub const JOURNAL_DIR: &str = "/var/lib/rmp-eval/journal";
pub const RUNTIME_JSON: &str = "/var/lib/rmp-eval/runtime.json";
pub const CMDLINE_STATE: &str = "/var/lib/rmp-eval/cmdline";
/// Test-only: after each applied change, create this file and wait (so a test can SIGKILL between changes).
pub const PAUSE_ENV: &str = "RMP_EVAL_TEST_PAUSE_FILE";

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
    pub fn normal(self, raw: &str) -> String {
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

    pub fn same(self, a: &str, b: &str) -> bool {
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

/// One change of a step. Pure data: what is there now and what will be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create, replace (`after` Some) or remove (`after` None) a file. `before` None: it does not exist.
    File {
        path: String,
        before: Option<Vec<u8>>,
        after: Option<Vec<u8>>,
        mode: u32,
        reboot: bool,
    },
    /// Write a kernel value (sysfs/procfs). `refusable`: EINVAL/EIO is reported, not fatal (managed IRQs).
    Value {
        path: String,
        before: String,
        after: String,
        kind: ValueKind,
        refusable: bool,
    },
    /// One field of a NIC's ethtool settings (SIOCETHTOOL: structure read, field changed, written back).
    /// Under --root nothing is written: the plan shows what would be done on the machine.
    Ethtool {
        nic: String,
        field: ethtool::Field,
        before: u32,
        after: u32,
    },
    /// Run a program (never through a shell). `again_on_rollback`: run it again after restoring the files.
    Command {
        argv: Vec<String>,
        again_on_rollback: bool,
        reboot: bool,
    },
}

impl Change {
    pub fn target(&self) -> String {
        match self {
            Change::File { path, .. } | Change::Value { path, .. } => path.clone(),
            Change::Ethtool { nic, field, .. } => ethtool::target(nic, *field),
            Change::Command { argv, .. } => argv.join(" "),
        }
    }
    pub fn reboot_required(&self) -> bool {
        match self {
            Change::File { reboot, .. } | Change::Command { reboot, .. } => *reboot,
            Change::Value { .. } | Change::Ethtool { .. } => false,
        }
    }
}

/// A remedy: id (crate::remedy), title, why, and its changes. No changes: already as wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub id: &'static str,
    pub title: String,
    pub why: String,
    pub changes: Vec<Change>,
    /// What the step could not do or leaves to the user.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        self.steps.iter().flat_map(|s| s.changes.iter())
    }
    pub fn is_empty(&self) -> bool {
        self.changes().next().is_none()
    }
    pub fn needs_reboot(&self) -> bool {
        self.changes().any(Change::reboot_required)
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
}
