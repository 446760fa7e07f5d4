//! The checks' documentation, rendered from the registry: checks.md and the rmp-eval-checks(7) man page.
//! `rmp-eval generate DIR` writes both; the package installs them (/usr/share/doc/rmp-eval/checks.md).

use std::fmt::Write as _;

use crate::checks::{Check, Section};
use crate::registry::CHECKS;

const INTRO: &str = "Every check of `rmp-eval check`, in the order they run: its id (stable, used in JSON and by \
`fix`), what it looks at and why, what passes, the `fix` step that repairs a failure, and what to do by hand when no \
step can. The 22 checks of the original rmp-eval keep its ids, titles and meanings; the others cover further \
sources of latency. Where a check improves on the original, its text says so.";

/// What each status means, for the docs and the man page.
const STATUSES: &[(&str, &str)] = &[
    ("pass", "as real-time control needs it"),
    (
        "fail",
        "falls short and can be repaired: by the `fix` step named with it, or by hand as the finding says (exit 1)",
    ),
    (
        "warn",
        "falls short, but only a newer kernel or other hardware changes it; not counted as a failure (exit 4 when \
         nothing failed)",
    ),
    (
        "pending",
        "`fix` made the change and it takes effect at the next reboot (exit 5 when nothing failed)",
    ),
    (
        "unknown",
        "could not be read or understood (the detail says which file and why); not counted as a failure",
    ),
    ("info", "informational, never a failure"),
];

fn section_name(s: Section) -> &'static str {
    match s {
        Section::System => "System",
        Section::Core => "RT core (--core)",
        Section::Firmware => "Firmware (BIOS settings Linux can read)",
        Section::Nic => "EtherCAT NIC (--nic)",
        Section::Process => "Running controller (--pid, --process)",
    }
}

const SECTIONS: [Section; 5] = [
    Section::System,
    Section::Core,
    Section::Firmware,
    Section::Nic,
    Section::Process,
];

fn in_section(s: Section) -> impl Iterator<Item = &'static Check> {
    CHECKS.iter().filter(move |c| c.section == s)
}

/// checks.md, the reference the package installs.
pub fn markdown() -> String {
    let mut m = String::from(
        "<!-- Generated from the check registry's doc texts by `rmp-eval generate DIR`. -->\n# The checks\n\n",
    );
    let _ = writeln!(m, "{INTRO}\n");
    m.push_str("| status | meaning |\n|---|---|\n");
    for (s, what) in STATUSES {
        let _ = writeln!(m, "| `{s}` | {what} |");
    }
    m.push_str("\n| id | section | title | fix step |\n|---|---|---|---|\n");
    for c in CHECKS {
        let _ = writeln!(
            m,
            "| `{}` | {} | {} | {} |",
            c.id,
            section_name(c.section),
            c.title,
            c.remedy.map_or("—".to_string(), |r| format!("`{r}`"))
        );
    }
    for s in SECTIONS {
        let _ = write!(m, "\n## {}\n", section_name(s));
        for c in in_section(s) {
            let _ = write!(m, "\n### `{}` — {}\n\n{}\n", c.id, c.title, c.doc);
            if let Some(r) = c.remedy {
                let _ = write!(m, "\nFix step: `{r}`.\n");
            }
            if let Some(h) = c.by_hand {
                let _ = write!(m, "\nBy hand: {h}.\n");
            }
        }
    }
    m
}

/// rmp-eval-checks(7).
pub(crate) fn man_page(date: Option<&str>) -> String {
    let mut t = format!(
        ".TH rmp-eval-checks 7 {} \"rmp-eval {}\" \"rmp-eval\"\n",
        date.unwrap_or("\"\""),
        env!("CARGO_PKG_VERSION")
    );
    let _ = write!(
        t,
        ".SH NAME\n{}\n",
        roff("rmp-eval-checks - the configuration checks of rmp-eval")
    );
    let _ = write!(t, ".SH DESCRIPTION\n{}\n", roff(INTRO));
    t.push_str(".SH STATUS\n");
    for (s, what) in STATUSES {
        let _ = write!(t, ".TP\n\\fB{s}\\fR\n{}\n", roff(what));
    }
    for s in SECTIONS {
        let _ = writeln!(
            t,
            ".SH \"{}\"",
            roff(&section_name(s).to_uppercase()).replace('"', "")
        );
        for c in in_section(s) {
            let _ = write!(
                t,
                ".TP\n\\fB{}\\fR \\(em {}\n{}\n",
                roff(c.id.as_str()),
                roff(c.title),
                roff(c.doc)
            );
            if let Some(r) = c.remedy {
                let _ = write!(t, ".br\nFix step: \\fB{}\\fR.\n", roff(r.as_str()));
            }
            if let Some(h) = c.by_hand {
                let _ = write!(t, ".br\nBy hand: {}.\n", roff(h));
            }
        }
    }
    let _ = write!(
        t,
        ".SH \"SEE ALSO\"\n{}\n",
        roff(
            "rmp-eval(8), rmp-eval-check(8), rmp-eval-fix(8), /usr/share/doc/rmp-eval/guide.md.gz"
        )
    );
    t
}

/// Escapes text for roff — the one escaper of every generated man page: backslashes, minus signs (so that options
/// stay copyable), and a leading dot or quote on a line.
pub(crate) fn roff(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('-', "\\-");
    t.lines()
        .map(|l| {
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_is_in_both_with_its_doc_and_advice() {
        let md = markdown();
        let man = man_page(Some("2026-12-03"));
        for c in CHECKS {
            assert!(
                md.contains(&format!("### `{}` — {}", c.id, c.title)),
                "{}",
                c.id
            );
            assert!(md.contains(c.doc), "{}", c.id);
            assert!(
                man.contains(&format!("\\fB{}\\fR", roff(c.id.as_str()))),
                "{}",
                c.id
            );
            if let Some(h) = c.by_hand {
                assert!(md.contains(h) && man.contains(&roff(h)), "{}", c.id);
            }
        }
        assert!(man.starts_with(".TH rmp-eval-checks 7 2026-12-03 "));
        assert!(
            !man.lines()
                .any(|l| l.starts_with('.') && l.len() > 1 && l[1..].starts_with(' '))
        );
    }
}
