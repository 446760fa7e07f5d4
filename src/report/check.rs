//! `check`'s report: header (host, CPU, kernel, NIC), one section per scope, one line per check, a summary line;
//! and the JSON document of docs/json.md.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use super::check_header::header;
use crate::checks::machine_id::MachineId;
use crate::checks::{Ctx, Finding, Section, Status};
use crate::output::Output;

const RULE: &str = "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━";
const RULE_ASCII: &str =
    "-------------------------------------------------------------------------";
use crate::report::table::visible_width;

const TITLE_WIDTH: usize = 38;
/// Cells of the status mark and the space after it: ✔️ (two cells) then three spaces, `FAIL` then one.
const MARK_WIDTH: usize = 5;

/// Counts by status and the fix steps that failing checks name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub pass: usize,
    pub fail: usize,
    /// Falls short where only a newer kernel or other hardware helps.
    pub(crate) warn: usize,
    /// Changes fix made that wait for a reboot.
    pub(crate) pending: usize,
    pub unknown: usize,
    pub info: usize,
    /// Distinct remedies of the failed checks, in fix's order.
    pub remedies: Vec<crate::remedy::StepId>,
    /// Failed or warning checks that no fix step repairs (each finding's `by_hand` says what to do).
    pub manual: Vec<&'static str>,
}

pub fn summarize(findings: &[Finding]) -> Summary {
    let mut s = Summary::default();
    let mut rem = BTreeSet::new();
    for f in findings {
        match f.status {
            Status::Pass => s.pass += 1,
            Status::Fail => s.fail += 1,
            Status::Warn => s.warn += 1,
            Status::Pending => s.pending += 1,
            Status::Unknown => s.unknown += 1,
            Status::Info => s.info += 1,
        }
        if let Some(r) = f.remedy {
            rem.insert(r);
        } else if f.by_hand.is_some() {
            s.manual.push(f.id.as_str());
        }
    }
    s.remedies = crate::remedy::StepId::ALL
        .into_iter()
        .filter(|r| rem.contains(r))
        .collect();
    s
}

/// The mark of a status: a symbol in a UTF-8 locale, else four ASCII characters.
pub(crate) fn symbol(st: Status, utf8: bool) -> &'static str {
    match (st, utf8) {
        (Status::Pass, true) => "✔️",
        (Status::Fail, true) => "❌",
        (Status::Warn, true) => "⚠️",
        (Status::Pending, true) => "⏳",
        (Status::Unknown, true) => "❔",
        (Status::Info, true) => "ℹ️",
        (Status::Pass, false) => "ok  ",
        (Status::Fail, false) => "FAIL",
        (Status::Warn, false) => "WARN",
        (Status::Pending, false) => "WAIT",
        (Status::Unknown, false) => "??  ",
        (Status::Info, false) => "info",
    }
}

fn colour(st: Status) -> &'static str {
    match st {
        Status::Pass => "\x1b[32m",
        Status::Fail => "\x1b[31m",
        Status::Warn | Status::Pending | Status::Unknown => "\x1b[33m",
        Status::Info => "\x1b[36m",
    }
}

/// One check line: title padded as the original did, symbol, reason, and the fix step of a failure.
pub fn line(f: &Finding, out: Output) -> String {
    let mark = symbol(f.status, out.utf8);
    let sym = if out.color {
        format!("{}{mark}\x1b[0m", colour(f.status))
    } else {
        mark.to_string()
    };
    // Padded in terminal cells (a mark such as ✔️ or ❌ takes two), so the details line up whatever the mark;
    // a title as wide as the column still gets its space.
    let title_pad = TITLE_WIDTH.saturating_sub(visible_width(f.title)).max(1);
    let mark_pad = MARK_WIDTH.saturating_sub(visible_width(mark)).max(1);
    let mut s = format!(
        "{}{}{sym}{}{}",
        f.title,
        " ".repeat(title_pad),
        " ".repeat(mark_pad),
        f.detail
    );
    let tag = match (f.remedy, &f.by_hand) {
        (Some(r), _) => format!("[fix: {r}]"),
        (None, Some(_)) => "[by hand, below]".to_string(),
        _ => return s,
    };
    if out.color {
        let _ = write!(s, "  \x1b[2m{tag}\x1b[0m");
    } else {
        let _ = write!(s, "  {tag}");
    }
    s
}

fn section_title(sec: Section, ctx: &Ctx) -> String {
    match sec {
        Section::System => "System Checks".into(),
        Section::Core => format!("Core {} Checks", ctx.core),
        Section::Firmware => "Firmware Checks".into(),
        Section::Nic => format!("NIC {} Checks", ctx.nic.as_deref().unwrap_or("?")),
        Section::Process => format!("Process {} Checks", ctx.pid.unwrap_or(0)),
    }
}

/// The one-line summary.
pub(crate) fn summary_line(findings: &[Finding], ctx: &Ctx) -> String {
    let s = summarize(findings);
    let mut l = format!("Summary: {} passed, {} failed", s.pass, s.fail);
    if s.warn > 0 {
        let _ = write!(l, ", {} warning(s)", s.warn);
    }
    if s.pending > 0 {
        let _ = write!(l, ", {} pending reboot", s.pending);
    }
    let _ = write!(l, ", {} unknown, {} info", s.unknown, s.info);
    if !s.remedies.is_empty() && ctx.core == 0 {
        l.push_str("; fix does not tune CPU 0: choose the RT core with --core");
    } else if !s.remedies.is_empty() {
        let nic = ctx
            .nic
            .as_deref()
            .map(|n| format!(" --nic {n}"))
            .unwrap_or_default();
        let _ = write!(
            l,
            "; `rmp-eval fix --core {}{nic}` repairs: {}",
            ctx.core,
            s.remedies
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if s.pending > 0 {
        l.push_str("; reboot to apply what fix set");
    }
    l
}

/// "By hand:" and what to do for the findings no fix step repairs, findings with the same advice together, each
/// paragraph wrapped to `width`; empty when there is none.
pub(crate) fn by_hand_block(findings: &[Finding], width: usize) -> String {
    // By title, as the table above shows them.
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for f in findings {
        if let (None, Some(what)) = (f.remedy, &f.by_hand) {
            match groups.iter_mut().find(|(_, w)| *w == what.as_str()) {
                Some((titles, _)) => titles.push(f.title),
                None => groups.push((vec![f.title], what)),
            }
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    let mut s = String::from("By hand:\n");
    for (ids, what) in groups {
        s.push_str(&wrap(
            &format!("{}: {what}", ids.join(", ")),
            width,
            "  ",
            "    ",
        ));
    }
    s
}

/// Word-wraps `text` to `width` terminal cells: the first line after `first`, the others after `rest`; a
/// `command` in backquotes is never broken.
pub(crate) fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in crate::report::table::words(text) {
        let w = crate::report::table::visible_width(&word);
        if !empty && crate::report::table::visible_width(&line) + 1 + w > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(&word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Header, sections and summary as text (used by check, and by run's and fix's configuration preamble).
pub(crate) fn render_text(id: &MachineId, ctx: &Ctx, findings: &[Finding], out: Output) -> String {
    let mut s = header(id);
    for sec in [
        Section::System,
        Section::Core,
        Section::Firmware,
        Section::Nic,
        Section::Process,
    ] {
        let mut rows = findings.iter().filter(|f| f.section == sec).peekable();
        if rows.peek().is_none() {
            continue;
        }
        let rule = if out.utf8 { RULE } else { RULE_ASCII };
        let _ = write!(s, "\n{}\n{rule}\n", section_title(sec, ctx));
        for f in rows {
            let _ = writeln!(s, "{}", line(f, out));
        }
    }
    let _ = write!(
        s,
        "\n{}",
        wrap(&summary_line(findings, ctx), out.width, "", "  ")
    );
    let hand = by_hand_block(findings, out.width);
    if !hand.is_empty() {
        let _ = write!(s, "\n{hand}");
    }
    s
}

#[derive(Serialize)]
struct JsonHost {
    hostname: Option<String>,
    os: Option<String>,
    cpu: String,
    kernel: String,
    firmware: crate::checks::firmware_id::Firmware,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    core: usize,
    nic: Option<&'a str>,
    host: JsonHost,
    checks: &'a [Finding],
    summary: Summary,
}

/// The JSON document: {"core","nic","host","checks":[{id,section,title,status,detail,remedy}],"summary"}.
pub(crate) fn render_json(id: &MachineId, ctx: &Ctx, findings: &[Finding]) -> String {
    let r = JsonReport {
        core: ctx.core,
        nic: ctx.nic.as_deref(),
        host: JsonHost {
            hostname: id.hostname.clone(),
            os: id.os.clone(),
            cpu: id.cpu.clone(),
            kernel: id.kernel.clone(),
            firmware: id.firmware.clone(),
        },
        checks: findings,
        summary: summarize(findings),
    };
    serde_json::to_string_pretty(&r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
