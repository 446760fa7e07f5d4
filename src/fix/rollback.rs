//! Rolling back every journaled run, newest first: what it will do (the preview, its text and JSON), then doing
//! it — each journal rewritten to what is left, the programs the runs ask for run once each, and whether the old
//! command line waits for a reboot. `commands/rollback.rs` asks and prints.

use serde::Serialize;

use super::journal::{self, Entry, Run};
use super::kind::{self, How, Restored};
use super::{render, undo};
use crate::error::{Error, Result};
use crate::host::Host;

/// One journaled target in the preview (JSON keys in the order serde_json's map gave them: alphabetical).
#[derive(Debug, Serialize)]
pub(crate) struct EntryPreview {
    action: &'static str,
    detail: String,
    /// The change made since fix, for a target left as it is.
    diff: Option<String>,
    target: String,
}

/// One journaled run in the preview.
#[derive(Debug, Serialize)]
pub(crate) struct RunPreview {
    core: usize,
    created: String,
    entries: Vec<EntryPreview>,
    interrupted: bool,
    journal: String,
    nic: Option<String>,
    steps: Vec<String>,
}

/// What rollback will do, run by run, newest first.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub(crate) struct Preview(Vec<RunPreview>);

impl Preview {
    /// The targets changed since fix.
    pub(crate) fn conflicts(&self) -> usize {
        self.0
            .iter()
            .flat_map(|r| &r.entries)
            .filter(|e| e.diff.is_some())
            .count()
    }

    pub(crate) fn text(&self) -> String {
        let mut text = String::new();
        for r in &self.0 {
            let state = if r.interrupted { ", interrupted" } else { "" };
            text.push_str(&format!(
                "{}: fix of {} (core {}{state}), steps {}\n",
                r.journal,
                r.created,
                r.core,
                r.steps.join(", ")
            ));
            for e in &r.entries {
                text.push_str(&format!("  {}: {}\n", e.target, e.detail));
                for l in e.diff.iter().flat_map(|d| d.lines()) {
                    text.push_str(&format!("    {l}\n"));
                }
            }
        }
        text
    }
}

/// What restoring `e` would do, given what the newer runs do to the same targets (`newer`: target, and whether
/// it is left as changed since fix) and the files removed so far (for the directories fix made for them).
fn preview_entry(
    host: &Host,
    e: &Entry,
    how: How,
    (newer, removed, users): (&[(String, bool)], &[String], &undo::UsersParams),
) -> Result<Restored> {
    let before = newer.iter().find(|(p, _)| p == e.path()).map(|x| x.1);
    if let Some(kept) = users.keeps(host, e) {
        return Ok(kept);
    }
    // A target a newer run puts back is, for the older runs, as that run leaves it: not a later edit.
    let forced = How {
        dry_run: true,
        force: true,
    };
    match (before, e) {
        (Some(true), _) => Ok(Restored::Conflict(
            "changed since fix (see the newer run above)".into(),
        )),
        (_, Entry::Dir(d)) => kind::dir::preview(host, d, removed),
        (Some(false), _) => kind::restore(host, e, forced),
        (None, _) => kind::restore(
            host,
            e,
            How {
                dry_run: true,
                ..how
            },
        ),
    }
}

fn entry_preview(target: &str, r: &Result<Restored>) -> EntryPreview {
    let (action, detail, diff) = match r {
        Ok(r) => {
            let (a, w) = render::restored_text(r, true);
            let d = match r {
                Restored::Conflict(d) => Some(d.clone()),
                _ => None,
            };
            (a, w, d)
        }
        Err(err) => ("error", format!("cannot restore: {err}"), None),
    };
    EntryPreview {
        action,
        detail,
        diff,
        target: target.to_string(),
    }
}

/// What rollback will do to `runs` (oldest first, as loaded), newest first; nothing is changed.
/// With `force`, a target changed since fix shows what forcing does.
pub(crate) fn preview(host: &Host, runs: &[(String, Run)], force: bool) -> Preview {
    let how = How {
        dry_run: true,
        force,
    };
    let mut out = Vec::new();
    let mut newer: Vec<(String, bool)> = Vec::new();
    // The files the rollback removes, as it comes to the directories fix made for them.
    let mut removed: Vec<String> = Vec::new();
    for (path, run) in runs.iter().rev() {
        let mut entries = Vec::new();
        let mut mine = Vec::new();
        let mut users = undo::UsersParams::default();
        for e in run.entries.iter().rev() {
            let r = preview_entry(host, e, how, (&newer, &removed, &users));
            if let Ok(r) = &r {
                users.saw(e, r);
            }
            mine.push((e.path().to_string(), matches!(r, Ok(Restored::Conflict(_)))));
            if matches!(r, Ok(Restored::Removed)) {
                removed.push(e.path().to_string());
            }
            entries.push(entry_preview(e.path(), &r));
        }
        newer.extend(mine);
        out.push(RunPreview {
            core: run.core,
            created: run.created.clone(),
            entries,
            interrupted: !run.complete,
            journal: path.clone(),
            nic: run.nic.clone(),
            steps: run.steps.clone(),
        });
    }
    Preview(out)
}

/// Whether a program a run asks for after restoring was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ran {
    Ran,
    /// Under --root: it acts on the machine, not on the tree.
    NotRun,
}

#[derive(Debug, Serialize)]
pub(crate) struct CommandRun {
    pub(crate) command: String,
    pub(crate) status: Ran,
}

/// What a rollback did.
#[derive(Debug, Default)]
pub(crate) struct RolledBack {
    /// Targets changed since fix, left as they are and kept in the journal.
    pub(crate) kept: Vec<String>,
    /// What could not be put back (its journal is kept).
    pub(crate) problems: Vec<String>,
    pub(crate) commands: Vec<CommandRun>,
    /// A program run rebuilds the boot configuration: the old command line returns at the next boot.
    pub(crate) at_next_boot: bool,
    /// What was done to put the rebuilt boot files where the boot loader reads them (`boot_flush`).
    pub(crate) boot_flush: Option<String>,
}

/// The programs the runs ask for after restoring, each once, in the order first asked — only for the runs that
/// put something back.
fn add_once(again: &mut Vec<Vec<String>>, run: &Run, u: &undo::Undone) {
    if u.done
        .iter()
        .any(|(_, r)| !matches!(r, Restored::Unchanged | Restored::Conflict(_)))
    {
        for a in &run.after_restore {
            if !again.contains(a) {
                again.push(a.clone());
            }
        }
    }
}

/// Keeps in the journal what could not be put back, so that rollback can be run again; removes the rest.
fn rewrite(host: &Host, path: &str, run: &Run, u: &undo::Undone) -> Result<()> {
    if u.left.is_empty() {
        host.remove_file(path)?;
    } else if u.left.len() != run.entries.len() {
        let rest = Run {
            entries: u.left.clone(),
            ..run.clone()
        };
        journal::save(host, path, &rest)?;
    }
    Ok(())
}

/// Undoes `runs` (oldest first, as loaded), newest first, with `force` the targets changed since fix too; `done` is told each target's outcome as it happens.
pub(crate) fn roll_back(
    host: &Host,
    runs: &[(String, Run)],
    force: bool,
    done: &mut dyn FnMut(&str, &Restored),
) -> Result<RolledBack> {
    let how = How {
        dry_run: false,
        force,
    };
    let mut out = RolledBack::default();
    let mut again: Vec<Vec<String>> = Vec::new();
    for (path, run) in runs.iter().rev() {
        let u = undo::undo(host, run, how);
        for (target, r) in &u.done {
            done(target, r);
        }
        out.kept.extend(u.conflicts().map(|(t, _)| t.clone()));
        out.problems.extend(u.problems.iter().cloned());
        add_once(&mut again, run, &u);
        rewrite(host, path, run, &u)?;
    }
    for argv in &again {
        let command = argv.join(" ");
        let status = match host.kernel() {
            Some(k) => match kind::command::run_program(k, argv) {
                Ok(()) => Ran::Ran,
                Err(e) => {
                    out.problems.push(e.to_string());
                    continue;
                }
            },
            None => Ran::NotRun,
        };
        out.commands.push(CommandRun { command, status });
    }
    out.at_next_boot = again
        .iter()
        .any(|a| crate::tunable::cmdline::boot::rebuilds_boot(a));
    if out.at_next_boot {
        out.boot_flush = Some(super::boot_flush::flush(host));
    }
    Ok(out)
}

/// What depends on the journal, stopped before a rollback changes anything.
#[derive(Debug, Default)]
pub(crate) struct Stopped {
    /// What a killed run had left half-written and is removed, said in one line.
    pub(crate) temps: Option<String>,
    /// The after-boot measurement fix had armed is disarmed.
    pub(crate) after_boot: bool,
    /// fix's trial boot is forgotten (its entry is undone with the rest).
    pub(crate) trial: bool,
}

impl Stopped {
    /// What was stopped, one line each (the temporary files aside).
    pub(crate) fn lines(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.after_boot {
            v.push("The after-boot measurement fix had armed is disarmed.");
        }
        if self.trial {
            v.push("fix's trial boot is forgotten (its entry is undone with the rest).");
        }
        v
    }
}

/// Before any change: a killed run's temporary files removed, the armed after-boot measurement disarmed and a
/// trial boot forgotten.
pub(crate) fn stop_dependents(host: &Host, held: &journal::Held) -> Result<Stopped> {
    Ok(Stopped {
        temps: held.clean_temps(host),
        after_boot: crate::after_boot_state::disarm(host)?,
        trial: super::trial::pending::forget(host)?,
    })
}

impl RolledBack {
    /// What the rollback ran, one line each.
    pub(crate) fn ran_lines(&self) -> Vec<String> {
        self.commands
            .iter()
            .map(|c| match c.status {
                Ran::Ran => format!("ran: {}", c.command),
                Ran::NotRun => {
                    format!("would run on the machine (not under --root): {}", c.command)
                }
            })
            .collect()
    }

    /// How the rollback ended: what is kept, and whether the old command line waits for a reboot.
    pub(crate) fn summary(&self) -> Vec<String> {
        let mut v = vec![if self.kept.is_empty() {
            "Rolled back.".to_string()
        } else {
            format!(
                "Rolled back, except what was changed since fix, left as it is and kept in the journal: {}. \
                 `rmp-eval rollback --force` puts those back too.",
                self.kept.join(", ")
            )
        }];
        if self.at_next_boot {
            v.push(
                "The kernel command line returns to the old one at the next boot: reboot, then `rmp-eval check`."
                    .to_string(),
            );
        }
        v.extend(self.boot_flush.clone());
        v
    }

    /// The error of a rollback that left something undone.
    pub(crate) fn incomplete(&self) -> Option<Error> {
        (!self.problems.is_empty()).then(|| {
            Error::failed(format!(
                "rollback incomplete, the journal of what is not undone is kept: {}",
                self.problems.join("; ")
            ))
        })
    }
}

/// Rollback's JSON report (docs/json.md).
#[derive(Debug, Serialize)]
pub(crate) struct RollbackReport<'a> {
    commands: &'a [CommandRun],
    dry_run: bool,
    /// Only once something was rolled back.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept: Option<&'a [String]>,
    runs: &'a [RunPreview],
    undone: bool,
}

impl<'a> RollbackReport<'a> {
    /// An empty journal: nothing to undo.
    pub(crate) fn empty(dry_run: bool) -> RollbackReport<'static> {
        RollbackReport {
            commands: &[],
            dry_run,
            kept: None,
            runs: &[],
            undone: false,
        }
    }

    /// A dry run: what rollback would do.
    pub(crate) fn previewed(preview: &'a Preview) -> RollbackReport<'a> {
        RollbackReport {
            commands: &[],
            dry_run: true,
            kept: None,
            runs: &preview.0,
            undone: false,
        }
    }

    pub(crate) fn rolled_back(preview: &'a Preview, done: &'a RolledBack) -> RollbackReport<'a> {
        RollbackReport {
            commands: &done.commands,
            dry_run: false,
            kept: Some(&done.kept),
            runs: &preview.0,
            undone: done.kept.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn preview() -> Preview {
        Preview(vec![RunPreview {
            core: 3,
            created: "2026-01-01T00:00:00Z".into(),
            entries: vec![EntryPreview {
                action: "conflict",
                detail: "changed since fix".into(),
                diff: Some("-a\n+b".into()),
                target: "/etc/default/grub".into(),
            }],
            interrupted: true,
            journal: "/var/lib/rmp-eval/journal/000001.json".into(),
            nic: None,
            steps: vec!["cmdline".into()],
        }])
    }

    /// The reports are the documents docs/json.md shows, byte for byte (keys in serde_json's map order).
    #[test]
    fn the_reports_keep_their_json() {
        let p = preview();
        let runs = json!([{
            "journal": "/var/lib/rmp-eval/journal/000001.json", "created": "2026-01-01T00:00:00Z", "core": 3,
            "nic": null, "steps": ["cmdline"], "interrupted": true,
            "entries": [{"target": "/etc/default/grub", "action": "conflict", "detail": "changed since fix",
                         "diff": "-a\n+b"}],
        }]);
        let s = |r: &RollbackReport| serde_json::to_string(r).unwrap();
        assert_eq!(
            s(&RollbackReport::empty(true)),
            json!({"runs": [], "dry_run": true, "commands": [], "undone": false}).to_string()
        );
        assert_eq!(
            s(&RollbackReport::previewed(&p)),
            json!({"runs": runs, "dry_run": true, "commands": [], "undone": false}).to_string()
        );
        let done = RolledBack {
            kept: vec!["/etc/default/grub".into()],
            commands: vec![CommandRun {
                command: "update-grub".into(),
                status: Ran::NotRun,
            }],
            ..RolledBack::default()
        };
        assert_eq!(
            s(&RollbackReport::rolled_back(&p, &done)),
            json!({"runs": runs, "dry_run": false, "undone": false, "kept": ["/etc/default/grub"],
                   "commands": [{"command": "update-grub", "status": "not_run"}]})
            .to_string()
        );
        assert_eq!(p.conflicts(), 1);
        assert_eq!(
            p.text(),
            "/var/lib/rmp-eval/journal/000001.json: fix of 2026-01-01T00:00:00Z (core 3, interrupted), steps \
             cmdline\n  /etc/default/grub: changed since fix\n    -a\n    +b\n"
        );
    }

    #[test]
    fn a_boot_loaders_program_says_the_boot_changes() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(crate::tunable::cmdline::boot::rebuilds_boot(&argv(&[
            "update-grub"
        ])));
        assert!(crate::tunable::cmdline::boot::rebuilds_boot(&argv(&[
            "kernel-install",
            "add",
            "6.1"
        ])));
        assert!(!crate::tunable::cmdline::boot::rebuilds_boot(&argv(&[
            "systemctl",
            "try-restart",
            "irqbalance"
        ])));
    }
}
