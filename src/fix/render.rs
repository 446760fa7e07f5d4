//! The plan and the apply report as text (diffs, "path: before → after", commands) and as JSON (docs/json.md keys).

use serde_json::{Value, json};

use super::apply::Report;
use super::kind::{self, Restored, Took};
use super::{Change, Note, Plan, Step};

pub(crate) fn change_text(c: &Change, live: bool) -> String {
    kind::text(c, live)
}

/// One step in full: what it changes (diffs, values with their devices), when it takes effect, its notes and
/// the risks it takes. A step fix cannot make says what to do by hand instead of "nothing to change".
pub(crate) fn step_text(s: &Step, live: bool) -> String {
    let mut o = format!("[{}] {}\n  why: {}\n", s.id, s.title, s.why);
    for c in &s.changes {
        for l in change_text(c, live).lines() {
            o.push_str(&format!("  {l}\n"));
        }
    }
    if s.changes.iter().any(Change::reboot_required) {
        o.push_str("  takes effect at the next boot\n");
    }
    for n in &s.notes {
        match n {
            Note::ByHand(h) => o.push_str(&format!("  NOT DONE, set by hand: {h}\n")),
            Note::Refused(_) | Note::Risk(_) => o.push_str(&format!("  {n}\n")),
            Note::Info(i) => o.push_str(&format!("  note: {i}\n")),
        }
    }
    o
}

/// Whether a step belongs in the plan: it changes something, was refused, or leaves something to do by hand.
/// The others (already as wanted, nothing to do here) get one line under "Nothing to change".
fn shown(s: &Step) -> bool {
    !s.changes.is_empty() || s.refusal().is_some() || s.by_hand().is_some()
}

pub(crate) fn plan_text(p: &Plan, live: bool) -> String {
    let mut o = p
        .steps
        .iter()
        .filter(|s| shown(s))
        .map(|s| step_text(s, live))
        .collect::<Vec<_>>()
        .join("\n");
    let quiet: Vec<String> = p
        .steps
        .iter()
        .filter(|s| !shown(s))
        .map(|s| match s.notes.first() {
            Some(n) => format!("  [{}] {n}", s.id),
            None => format!("  [{}] already as wanted", s.id),
        })
        .collect();
    if !quiet.is_empty() {
        if !o.is_empty() {
            o.push('\n');
        }
        o.push_str("Nothing to change (left out of the plan):\n");
        o.push_str(&quiet.join("\n"));
        o.push('\n');
    }
    o
}

/// The steps of a plan as one line each, for the step picker: id, title, how many changes, and "risk" when it
/// states one (the diffs and risks are printed above the picker).
pub(crate) fn pick_item(s: &Step) -> String {
    let risk = if s.risks().next().is_some() {
        ", risks above"
    } else {
        ""
    };
    format!(
        "{} — {} ({} change(s){risk})",
        s.id,
        s.title,
        s.changes.len()
    )
}

/// docs/json.md: {"steps":[{"id","title","changes":[{"kind","target","before","after","reboot_required"}]}]}.
pub(crate) fn plan_json(p: &Plan) -> Value {
    let steps: Vec<Value> = p
        .steps
        .iter()
        .map(|s| {
            let changes: Vec<Value> = s.changes.iter().map(kind::json).collect();
            let risks: Vec<&str> = s.risks().collect();
            let notes: Vec<String> = s
                .notes
                .iter()
                .filter(|n| !matches!(n, Note::Risk(_)))
                .map(Note::to_string)
                .collect();
            json!({"id": s.id, "title": s.title, "why": s.why, "changes": changes, "notes": notes,
                   "risks": risks, "by_hand": s.by_hand()})
        })
        .collect();
    json!({ "steps": steps })
}

/// The terminal's line for a target rollback put back otherwise than as recorded (None: as recorded).
pub(crate) fn restored_line(target: &str, r: &Restored) -> Option<String> {
    match r {
        Restored::Merged(k) => Some(format!(
            "{target}: changed since fix: fix's parameters taken out, kept yours ({k})"
        )),
        Restored::Kept(why) | Restored::Gone(why) => Some(format!("{target}: {why}")),
        _ => None,
    }
}

/// What rollback did (or would do) with one target: (JSON action, text).
pub(crate) fn restored_text(r: &Restored, dry_run: bool) -> (&'static str, String) {
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
        Restored::Gone(why) => ("gone", why.clone()),
    }
}

pub(crate) fn took_text(t: &Took) -> String {
    match t {
        Took::Took => "set and read back".into(),
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
        "journal: {} (undo with `{}`)\n",
        r.journal, r.undo
    ));
    o
}

pub(crate) fn report_json(r: &Report) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_took_says_it_was_set_and_read_back() {
        assert_eq!(took_text(&Took::Took), "set and read back");
        assert!(took_text(&Took::Differs("3".into())).contains("did NOT take"));
    }
}
