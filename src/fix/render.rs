//! The plan and the apply report as text (diffs, "path: before → after", commands) and as JSON (docs/json.md keys).

use serde_json::{Value, json};
use similar::TextDiff;

use super::apply::{Report, Took};
use super::{Change, Plan, Step};

fn text(b: &Option<Vec<u8>>) -> Option<String> {
    b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned())
}

/// A unified diff of a file change (a/ and b/ headers, /dev/null for a created or removed file).
pub fn diff(path: &str, before: &Option<Vec<u8>>, after: &Option<Vec<u8>>) -> String {
    let (a, b) = (
        text(before).unwrap_or_default(),
        text(after).unwrap_or_default(),
    );
    let old = if before.is_some() {
        format!("a{path}")
    } else {
        "/dev/null".into()
    };
    let new = if after.is_some() {
        format!("b{path}")
    } else {
        "/dev/null".into()
    };
    TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string()
}

/// New files longer than this show their first lines only in the text plan (the JSON plan has the whole diff).
const NEW_FILE_LINES: usize = 12;

fn new_file_head(path: &str, bytes: &[u8]) -> String {
    let d = diff(path, &None, &Some(bytes.to_vec()));
    let lines: Vec<&str> = d.lines().collect();
    let shown = (3 + NEW_FILE_LINES / 2).min(lines.len());
    format!(
        "{}\n… {} more lines of the new file (`--dry-run --json` shows them all)\n",
        lines[..shown].join("\n"),
        lines.len() - shown
    )
}

pub fn change_text(c: &Change, live: bool) -> String {
    match c {
        Change::File {
            path,
            before: None,
            after: Some(b),
            ..
        } if b.iter().filter(|&&c| c == b'\n').count() > NEW_FILE_LINES => new_file_head(path, b),
        Change::File {
            path,
            before,
            after,
            ..
        } => diff(path, before, after),
        Change::Value {
            path,
            before,
            after,
            ..
        } => format!("{path}: {before} → {after}\n"),
        Change::Ethtool { before, after, .. } if live => {
            format!("{}: {before} → {after}\n", c.target())
        }
        Change::Ethtool { before, after, .. } => format!(
            "{}: {before} → {after} (would be set on the machine, not under --root)\n",
            c.target()
        ),
        Change::Command { argv, .. } if live => format!("run: {}\n", argv.join(" ")),
        Change::Command { argv, .. } => format!(
            "would run on the machine (not under --root): {}\n",
            argv.join(" ")
        ),
    }
}

pub fn step_text(s: &Step, live: bool) -> String {
    let mut o = format!("[{}] {}\n  why: {}\n", s.id, s.title, s.why);
    if s.changes.is_empty() {
        o.push_str("  nothing to change\n");
    }
    for c in &s.changes {
        for l in change_text(c, live).lines() {
            o.push_str(&format!("  {l}\n"));
        }
    }
    if s.changes.iter().any(Change::reboot_required) {
        o.push_str("  takes effect at the next boot\n");
    }
    for n in &s.notes {
        o.push_str(&format!("  note: {n}\n"));
    }
    o
}

pub fn plan_text(p: &Plan, live: bool) -> String {
    p.steps
        .iter()
        .map(|s| step_text(s, live))
        .collect::<Vec<_>>()
        .join("\n")
}

/// docs/json.md: {"steps":[{"id","title","changes":[{"kind","target","before","after","reboot_required"}]}]}.
pub fn plan_json(p: &Plan) -> Value {
    let steps: Vec<Value> = p
        .steps
        .iter()
        .map(|s| {
            let changes: Vec<Value> = s
                .changes
                .iter()
                .map(|c| match c {
                    Change::File { path, before, after, .. } => json!({
                        "kind": "file", "target": path, "before": text(before), "after": text(after),
                        "reboot_required": c.reboot_required(), "diff": diff(path, before, after),
                    }),
                    Change::Value { path, before, after, .. } => json!({
                        "kind": "value", "target": path, "before": before, "after": after,
                        "reboot_required": false,
                    }),
                    Change::Ethtool { nic, field, before, after } => json!({
                        "kind": "ethtool", "target": c.target(), "before": before.to_string(),
                        "after": after.to_string(), "reboot_required": false, "nic": nic, "field": field.name(),
                    }),
                    Change::Command { argv, .. } => json!({
                        "kind": "command", "target": argv.join(" "), "before": null, "after": null,
                        "reboot_required": c.reboot_required(), "argv": argv,
                    }),
                })
                .collect();
            json!({"id": s.id, "title": s.title, "why": s.why, "changes": changes, "notes": s.notes})
        })
        .collect();
    json!({ "steps": steps })
}

pub fn took_text(t: &Took) -> String {
    match t {
        Took::Took => "took".into(),
        Took::Differs(now) => format!("did NOT take (reads {now})"),
        Took::Refused(why) => {
            format!(
                "refused by the kernel ({why}): an IRQ it does not let move (managed or fixed), left as it was"
            )
        }
        Took::Unsupported(why) => format!("not supported by the driver ({why}), left as it was"),
        Took::Ran => "ran".into(),
        Took::WouldRun => "not run (--root): run it on the machine".into(),
    }
}

pub fn report_text(r: &Report) -> String {
    let mut o = String::new();
    for x in &r.outcomes {
        let pending = if x.reboot { " — pending reboot" } else { "" };
        o.push_str(&format!(
            "  [{}] {}: {}{pending}\n",
            x.step,
            x.target,
            took_text(&x.took)
        ));
    }
    o.push_str(&format!(
        "journal: {} (undo with `rmp-eval rollback`)\n",
        r.journal
    ));
    o
}

pub fn report_json(r: &Report) -> Value {
    let outcomes: Vec<Value> = r
        .outcomes
        .iter()
        .map(|x| {
            let (status, detail) = match &x.took {
                Took::Took => ("took", None),
                Took::Differs(d) => ("differs", Some(d.clone())),
                Took::Refused(d) => ("refused", Some(d.clone())),
                Took::Unsupported(d) => ("unsupported", Some(d.clone())),
                Took::Ran => ("ran", None),
                Took::WouldRun => ("not_run", None),
            };
            json!({"step": x.step, "target": x.target, "status": status, "detail": detail, "reboot_required": x.reboot})
        })
        .collect();
    json!({"journal": r.journal, "applied": outcomes})
}
