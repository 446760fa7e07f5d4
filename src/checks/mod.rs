//! Configuration checks. Each check is one small unit (id, section, title, doc, evaluate, remedy) registered in
//! one ordered list, `REGISTRY`, from which `check`'s output, `--help` text and the docs are generated.

pub mod ethtool;
pub mod id;
pub mod irq;
pub mod isolation;
pub mod knob;
pub mod machine;
pub mod nic;
pub mod nic_hw;
pub mod nic_irq;
pub mod noise;
pub mod power;
pub mod system;
pub mod threads;

use serde::Serialize;

use crate::host::Host;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Unknown,
    Info,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    System,
    Core,
    Nic,
}

/// What the checks are asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ctx {
    /// The RT core (default: the last CPU).
    pub core: usize,
    /// The EtherCAT NIC, when given; NIC checks run only then.
    pub nic: Option<String>,
}

/// What one check concluded about the machine (the reported form, with id and title, is a `Finding`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    pub status: Status,
    pub detail: String,
}

impl Assessment {
    pub fn pass(d: impl Into<String>) -> Self {
        Self::new(Status::Pass, d)
    }
    pub fn fail(d: impl Into<String>) -> Self {
        Self::new(Status::Fail, d)
    }
    pub fn info(d: impl Into<String>) -> Self {
        Self::new(Status::Info, d)
    }
    fn new(status: Status, d: impl Into<String>) -> Self {
        Assessment {
            status,
            detail: d.into(),
        }
    }
}

/// Why a check could not reach a verdict (a file missing or unreadable, a value it cannot parse): reported as
/// `unknown` with this text. Evaluate functions return it with `?`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unknown(pub String);

/// `Unknown` with this reason.
pub(crate) fn unknown(why: impl Into<String>) -> Unknown {
    Unknown(why.into())
}

/// What an evaluate function returns: an assessment, or why there is none.
pub type Eval = Result<Assessment, Unknown>;

/// A registered check.
pub struct Check {
    pub id: &'static str,
    pub section: Section,
    pub title: &'static str,
    /// Why it matters and what passes (shown by `--help`-style docs and the man page).
    pub doc: &'static str,
    /// The `fix` step (crate::remedy) that repairs a failure, if one exists.
    pub remedy: Option<&'static str>,
    pub evaluate: fn(&Host, &Ctx) -> Eval,
}

/// A check's result as reported (text and JSON). `remedy` is set only when the check failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub section: Section,
    pub title: &'static str,
    pub status: Status,
    pub detail: String,
    pub remedy: Option<&'static str>,
}

/// All checks, in report order (sections appear in this order too).
pub static REGISTRY: &[Check] = &[
    system::PREEMPT_RT,
    system::SWAP,
    system::TIMER_MIGRATION,
    system::RT_THROTTLING,
    system::CLOCKSOURCE,
    system::AF_XDP,
    system::FUTEX_HASH,
    noise::SKEW_TICK,
    noise::TSC_RELIABLE,
    noise::NMI_WATCHDOG,
    noise::THP,
    noise::STAT_INTERVAL,
    noise::NUMA_BALANCING,
    isolation::CORE_ISOLATED,
    isolation::NOHZ_FULL,
    isolation::RCU_NOCBS,
    power::GOVERNOR,
    power::CPU_FREQUENCY,
    isolation::IRQAFFINITY,
    irq::UNRELATED_IRQS,
    isolation::SMT_SIBLING,
    power::CSTATES,
    power::TURBO,
    power::IDLE_STATES,
    irq::DEFAULT_AFFINITY,
    irq::IRQBALANCE,
    noise::WORKQUEUE,
    noise::SOFT_WATCHDOG,
    threads::RT_CORE_THREADS,
    nic::NIC_PRESENT,
    nic::NIC_LINK,
    nic::NIC_QUIET,
    nic_irq::NIC_IRQS_PINNED,
    nic_irq::RPS,
    nic_hw::NIC_DRIVER,
    nic_hw::NIC_SPEED,
    nic_irq::NIC_IRQ_DEFER,
    ethtool::NIC_COALESCE,
    ethtool::NIC_EEE,
];

/// The check with this id.
pub fn find(id: &str) -> Option<&'static Check> {
    REGISTRY.iter().find(|c| c.id == id)
}

/// Reads a value for a check; failure is `Unknown`, naming the path and the reason ("permission denied",
/// "not found").
pub(crate) fn read(host: &Host, path: &str) -> Result<String, Unknown> {
    host.read_trimmed(path)
        .map_err(|e| unknown(format!("{path}: {}", e.reason())))
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
pub const DETAIL_MAX: usize = 160;

pub use crate::parse::text::sanitize;

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

/// Runs every check that applies (NIC checks only when a NIC is given).
pub fn run_all(host: &Host, ctx: &Ctx) -> Vec<Finding> {
    REGISTRY
        .iter()
        .filter(|c| c.section != Section::Nic || ctx.nic.is_some())
        .map(|c| {
            let v = (c.evaluate)(host, ctx).unwrap_or_else(|Unknown(why)| Assessment {
                status: Status::Unknown,
                detail: why,
            });
            Finding {
                id: c.id,
                section: c.section,
                title: c.title,
                remedy: if v.status == Status::Fail {
                    c.remedy
                } else {
                    None
                },
                status: v.status,
                detail: sanitize(&v.detail, DETAIL_MAX),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_knobs_name_registered_sysctl_checks() {
        let mut ids: Vec<&str> = REGISTRY.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), REGISTRY.len(), "duplicate check id");
        for k in knob::SYSCTLS {
            let c = find(k.check).unwrap_or_else(|| panic!("{} not registered", k.check));
            assert_eq!(c.remedy, Some(crate::remedy::SYSCTL), "{}", c.id);
        }
    }
}
