//! The plan and the apply report as text (diffs, "path: before → after", commands) and as JSON (docs/json.md keys).

use serde_json::{Value, json};

use super::apply::Report;
use super::kind::{self, Restored, Took};
use super::{Change, Plan, Step};

pub use super::kind::file::diff;

pub fn change_text(c: &Change, live: bool) -> String {
    kind::text(c, live)
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
            let changes: Vec<Value> = s.changes.iter().map(kind::json).collect();
            json!({"id": s.id, "title": s.title, "why": s.why, "changes": changes, "notes": s.notes})
        })
        .collect();
    json!({ "steps": steps })
}

/// What rollback did (or would do) with one target: (JSON action, text).
pub fn restored_text(r: &Restored, dry_run: bool) -> (&'static str, String) {
    let will = |done: &str, would: &str| {
        if dry_run {
            would.to_string()
        } else {
            done.to_string()
        }
    };
    match r {
        Restored::Unchanged => ("none", "as recorded, nothing to do".into()),
        Restored::Removed => (
            "remove",
            will("removed (did not exist)", "remove (did not exist)"),
        ),
        Restored::Written(d) => ("restore", format!("{} ({d})", will("restored", "restore"))),
        Restored::Refused(d) => (
            "refused",
            format!("refused by the kernel ({d}), left as it is"),
        ),
        Restored::Merged(k) => (
            "merged",
            format!(
                "changed since fix: fix's parameters {}, yours kept ({k})",
                will("taken out", "taken out")
            ),
        ),
        Restored::Conflict(_) => (
            "conflict",
            "changed since fix: left as it is (--force restores it, losing the change below)"
                .into(),
        ),
        Restored::Kept(why) => ("kept", why.clone()),
    }
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
