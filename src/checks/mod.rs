//! Configuration checks. Each check is one small unit (id, section, title, doc, evaluate, remedy) registered in
//! one ordered list, `registry::CHECKS`, from which `check`'s output, `--help` text and the docs are
//! generated.

pub(crate) mod after_boot;
pub(crate) mod firmware;
pub(crate) mod firmware_id;
pub(crate) mod id;
pub(crate) mod machine_id;
pub(crate) mod nic;
pub(crate) mod nic_hw;
pub(crate) mod nic_irq;
pub(crate) mod pi;
pub(crate) mod process;
pub(crate) mod process_threads;
pub(crate) mod system;
pub(crate) mod threads;

use serde::Serialize;

use crate::host::Host;
use crate::remedy::StepId;
pub use id::CheckId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// Falls short, and can be repaired here: by a `fix` step (`remedy`) or by hand (`by_hand`).
    Fail,
    /// Falls short, but only a newer kernel or other hardware changes it: reported, not counted as a failure.
    Warn,
    /// `fix` has made the change; it takes effect at the next reboot.
    Pending,
    Unknown,
    Info,
}

impl Status {
    /// The status as check's JSON spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Pending => "pending",
            Status::Unknown => "unknown",
            Status::Info => "info",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    System,
    Core,
    /// What Linux can read of the firmware's (BIOS) settings: SMIs, C-state limit, turbo, APIC, TSC.
    Firmware,
    Nic,
    /// A running controller's threads (`check --pid/--process`).
    Process,
}

/// What the checks are asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ctx {
    /// The RT core (default: the last CPU).
    pub core: usize,
    /// The EtherCAT NIC, when given; NIC checks run only then.
    pub nic: Option<String>,
    /// The running controller to audit (`--pid`, `--process`); process checks run only then.
    pub pid: Option<u32>,
    /// How long the SMI check watches the counter (`check --smi-seconds`); None where the verb does not measure
    /// it (run counts SMIs during its own measurement; fix, monitor and snapshot must not wait).
    pub smi_seconds: Option<u64>,
}

/// What one check concluded about the machine (the reported form, with id and title, is a `Finding`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assessment {
    pub(crate) status: Status,
    pub(crate) detail: String,
    /// Set when the check's `fix` step cannot change this outcome: what to do instead.
    pub(crate) instead: Option<String>,
}

impl Assessment {
    pub(crate) fn pass(d: impl Into<String>) -> Self {
        Self::new(Status::Pass, d)
    }
    pub(crate) fn fail(d: impl Into<String>) -> Self {
        Self::new(Status::Fail, d)
    }
    pub(crate) fn info(d: impl Into<String>) -> Self {
        Self::new(Status::Info, d)
    }
    /// Falls short where only a newer kernel or other hardware helps (say which in `instead` or `by_hand`).
    pub(crate) fn warn(d: impl Into<String>) -> Self {
        Self::new(Status::Warn, d)
    }
    /// The check's fix step would not change this: `what` is to be done instead.
    pub(crate) fn instead(mut self, what: impl Into<String>) -> Self {
        self.instead = Some(what.into());
        self
    }
    fn new(status: Status, d: impl Into<String>) -> Self {
        Assessment {
            status,
            detail: d.into(),
            instead: None,
        }
    }
}

/// Why a check could not reach a verdict (a file missing or unreadable, a value it cannot parse): reported as
/// `unknown` with this text. Evaluate functions return it with `?`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unknown(pub String);

/// `Unknown` with this reason: a message, or any typed error shown as its one line.
pub(crate) fn unknown(why: impl std::fmt::Display) -> Unknown {
    Unknown(why.to_string())
}

/// What an evaluate function returns: an assessment, or why there is none.
pub(crate) type Eval = Result<Assessment, Unknown>;

/// A registered check.
pub struct Check {
    pub id: CheckId,
    pub section: Section,
    pub(crate) title: &'static str,
    /// Why it matters and what passes (shown by `--help`-style docs and the man page).
    pub doc: &'static str,
    /// The `fix` step (crate::remedy) that repairs a failure, if one exists.
    pub remedy: Option<StepId>,
    /// What to do by hand when no fix step repairs it (shown with the failure, and in the docs).
    pub(crate) by_hand: Option<&'static str>,
    pub(crate) evaluate: fn(&Host, &Ctx) -> Eval,
}

/// A check's result as reported (text and JSON). `remedy` is set only on a failure that step repairs;
/// `by_hand` on a failure or warning that no step repairs, saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub id: CheckId,
    pub section: Section,
    pub title: &'static str,
    pub status: Status,
    pub detail: String,
    pub remedy: Option<StepId>,
    pub by_hand: Option<String>,
}

impl Finding {
    /// The fix step cannot change this finding (it has nothing to change, or refuses): `what` instead.
    pub(crate) fn no_remedy(&mut self, what: impl Into<String>) {
        self.remedy = None;
        self.by_hand = Some(what.into());
    }
}

/// Reads a value for a check; failure is `Unknown`, naming the path and the reason ("permission denied",
/// "not found").
pub(crate) fn read(host: &Host, path: &str) -> Result<String, Unknown> {
    host.read_trimmed(path)
        .map_err(|e| unknown(format!("{path}: {}", e.reason())))
}

/// A file a check needs is absent: on the running machine (or where its snapshot recorded the absence) the
/// kernel has no such file; in any other tree it was not captured, which says nothing about the kernel.
pub(crate) fn not_captured(host: &Host, path: &str) -> bool {
    !host.lacks(path)
}

/// `Unknown` for an absent file, saying which of the two it is (see `not_captured`).
pub(crate) fn absent(host: &Host, path: &str) -> Unknown {
    if not_captured(host, path) {
        unknown(format!(
            "{path}: not captured (absent from the tree, and the snapshot does not record that the machine \
             lacked it)"
        ))
    } else {
        unknown(format!("{path}: not found"))
    }
}

/// /proc/interrupts for a check: what it cannot give is the check's unknown.
pub(crate) fn read_interrupts(
    host: &Host,
) -> Result<crate::parse::interrupts::Interrupts, Unknown> {
    crate::machine::irq::read_interrupts(host).map_err(|e| unknown(e.to_string()))
}

/// The first `show` items joined with ", ", then "+N more" for the rest: details stay one short line.
pub(crate) fn first_few(items: &[String], show: usize) -> String {
    let mut d = items
        .iter()
        .take(show)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > show {
        d.push_str(&format!(", +{} more", items.len() - show));
    }
    d
}

/// Details longer than this are cut: a garbage file must not flood the terminal.
pub(crate) const DETAIL_MAX: usize = 160;

pub(crate) use crate::parse::text::sanitize;

/// A kernel keyword value (governor, operstate): lowercase letters, digits, '_' and '-'.
pub(crate) fn is_word(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// "(none)" for an empty list, as details show it.
pub(crate) fn shown(list: &str) -> &str {
    if list.trim().is_empty() || list.trim() == "(null)" {
        "(none)"
    } else {
        list.trim()
    }
}

impl Finding {
    /// A by-hand remedy names the interface the user gave, where its text says IFACE, so it can be pasted.
    pub(crate) fn for_nic(mut self, nic: Option<&str>) -> Finding {
        if let (Some(n), Some(b)) = (nic, self.by_hand.as_mut()) {
            *b = b.replace("IFACE", n);
        }
        self
    }
}

/// The reported form of one check's evaluation.
pub(crate) fn finding(c: &Check, e: Eval) -> Finding {
    let a = e.unwrap_or_else(|Unknown(why)| Assessment::new(Status::Unknown, why));
    let falls_short = matches!(a.status, Status::Fail | Status::Warn);
    let remedy = match (&a.instead, a.status) {
        (None, Status::Fail) => c.remedy,
        _ => None,
    };
    let by_hand = match (remedy, a.instead) {
        (None, Some(i)) if falls_short => Some(i),
        (None, None) if falls_short => c.by_hand.map(str::to_string),
        _ => None,
    };
    Finding {
        id: c.id,
        section: c.section,
        title: c.title,
        status: a.status,
        detail: sanitize(&a.detail, DETAIL_MAX),
        remedy,
        by_hand,
    }
}

#[cfg(test)]
mod status_tests {
    use super::Status;

    #[test]
    fn a_status_is_named_as_json_spells_it() {
        for s in [
            Status::Pass,
            Status::Fail,
            Status::Warn,
            Status::Pending,
            Status::Unknown,
            Status::Info,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
    }
}
