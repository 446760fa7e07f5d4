//! Configuration checks. Each check is one small unit (id, section, title, doc, evaluate, remedy) registered in
//! one ordered list, `REGISTRY`, from which `check`'s output, `--help` text and the docs are generated.

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

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub status: Status,
    pub detail: String,
}

impl Verdict {
    pub fn pass(d: impl Into<String>) -> Self {
        Verdict {
            status: Status::Pass,
            detail: d.into(),
        }
    }
    pub fn fail(d: impl Into<String>) -> Self {
        Verdict {
            status: Status::Fail,
            detail: d.into(),
        }
    }
    pub fn unknown(d: impl Into<String>) -> Self {
        Verdict {
            status: Status::Unknown,
            detail: d.into(),
        }
    }
    pub fn info(d: impl Into<String>) -> Self {
        Verdict {
            status: Status::Info,
            detail: d.into(),
        }
    }
}

/// A registered check.
pub struct Check {
    pub id: &'static str,
    pub section: Section,
    pub title: &'static str,
    /// Why it matters and what passes (shown by `--help`-style docs and the man page).
    pub doc: &'static str,
    /// The `fix` step (crate::remedy) that repairs a failure, if one exists.
    pub remedy: Option<&'static str>,
    pub evaluate: fn(&Host, &Ctx) -> Verdict,
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

/// All checks, in report order.
pub static REGISTRY: &[Check] = &[];

/// Runs every check that applies (NIC checks only when a NIC is given).
pub fn run_all(host: &Host, ctx: &Ctx) -> Vec<Finding> {
    REGISTRY
        .iter()
        .filter(|c| c.section != Section::Nic || ctx.nic.is_some())
        .map(|c| {
            let v = (c.evaluate)(host, ctx);
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
                detail: v.detail,
            }
        })
        .collect()
}
