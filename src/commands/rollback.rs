//! `rmp-eval rollback`: undo every journaled fix run, newest first, each in reverse order; files byte for byte
//! (content, mode, owner; created files and directories removed), values restored; then update-grub & co. run
//! again. A file or value changed since fix is not overwritten without --force (or a yes on the terminal): a
//! command-line file loses only fix's parameters, anything else is left and named, and rollback exits 1.

use serde_json::{Value, json};
use std::io::Write;

use crate::cli::RollbackArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::kind::command::run_program;
use crate::fix::kind::{self, How, Restored};
use crate::fix::{journal, render, undo};
use crate::host::Host;
use crate::outln;
use crate::output::Output;

/// What rollback will do, run by run (newest first), as text and JSON; and how many targets changed since fix.
fn preview(host: &Host, runs: &[(String, journal::Run)], how: How) -> (String, Vec<Value>, usize) {
    let mut text = String::new();
    let mut json_runs = Vec::new();
    let mut conflicts = 0;
    // A target a newer run puts back is, for the older runs, as that run leaves it: not a later edit.
    let mut newer: Vec<(String, bool)> = Vec::new();
    // The files the rollback removes, as it comes to the directories fix made for them.
    let mut removed: Vec<String> = Vec::new();
    for (path, run) in runs.iter().rev() {
        let state = if run.complete { "" } else { ", interrupted" };
        text.push_str(&format!(
            "{path}: fix of {} (core {}{state}), steps {}\n",
            run.created,
            run.core,
            run.steps.join(", ")
        ));
        let mut entries = Vec::new();
        let mut mine = Vec::new();
        let mut users = undo::UsersParams::default();
        for e in run.entries.iter().rev() {
            let before = newer.iter().find(|(p, _)| p == e.path()).map(|x| x.1);
            let r = match (before, e, users.keeps(host, e)) {
                (_, _, Some(kept)) => Ok(kept),
                (Some(true), _, _) => Ok(Restored::Conflict(
                    "changed since fix (see the newer run above)".into(),
                )),
                (_, journal::Entry::Dir(d), _) => kind::dir::preview(host, d, &removed),
                (Some(false), _, _) => kind::restore(
                    host,
                    e,
                    How {
                        dry_run: true,
                        force: true,
                    },
                ),
                (None, _, _) => kind::restore(
                    host,
                    e,
                    How {
                        dry_run: true,
                        ..how
                    },
                ),
            };
            if let Ok(r) = &r {
                users.saw(e, r);
            }
            mine.push((e.path().to_string(), matches!(r, Ok(Restored::Conflict(_)))));
            if matches!(r, Ok(Restored::Removed)) {
                removed.push(e.path().to_string());
            }
            let (action, what, diff) = match &r {
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
            text.push_str(&format!("  {}: {what}\n", e.path()));
            if let Some(d) = &diff {
                conflicts += 1;
                for l in d.lines() {
                    text.push_str(&format!("    {l}\n"));
                }
            }
            entries
                .push(json!({"target": e.path(), "action": action, "detail": what, "diff": diff}));
        }
        newer.extend(mine);
        json_runs.push(json!({
            "journal": path, "created": run.created, "core": run.core, "nic": run.nic,
            "steps": run.steps, "interrupted": !run.complete, "entries": entries,
        }));
    }
    (text, json_runs, conflicts)
}

/// Removes what a killed fix or rollback left half-written, and says so (on stderr beside JSON).
fn clean_up(w: &mut dyn Write, host: &Host, runs: &[(String, journal::Run)], json: bool) {
    let removed = journal::remove_stale_temps(host, runs, &crate::fix::known_targets());
    if let Some(line) = journal::removed_temps_line(&removed) {
        if json {
            eprintln!("{line}");
        } else {
            outln!(w, "{line}");
        }
    }
}

fn confirm(prompt: &str) -> Result<bool> {
    dialoguer::Confirm::new()
        .with_prompt(prompt)
        .default(false)
        .interact()
        .map_err(|e| Error::failed(format!("prompt: {e}")))
}

pub(crate) fn execute(
    host: &Host,
    _out: Output,
    w: &mut dyn Write,
    args: &RollbackArgs,
) -> Result<Outcome> {
    // Locked before the journal is read and through the prompts: a fix finishing meanwhile would be missed.
    let _lock = if args.dry_run {
        None
    } else {
        Some(journal::lock(host)?)
    };
    let runs = journal::load_all(host)?;
    if runs.is_empty() {
        if !args.dry_run {
            clean_up(w, host, &runs, args.json);
        }
        if !args.dry_run && crate::after_boot_state::disarm(host)? && !args.json {
            outln!(w, "The after-boot measurement fix had armed is disarmed.");
        }
        if !args.dry_run {
            crate::fix::trial::pending::forget(host)?;
        }
        if args.json {
            outln!(
                w,
                "{}",
                json!({"runs": [], "dry_run": args.dry_run, "commands": [], "undone": false})
            );
        } else {
            outln!(w, "Nothing to undo: the journal is empty.");
        }
        return Ok(Outcome::Good);
    }
    let mut how = How {
        dry_run: false,
        force: args.force,
    };
    let (text, json_runs, conflicts) = preview(host, &runs, how);
    if !args.json {
        crate::out!(w, "{text}");
    }
    if args.dry_run {
        if args.json {
            outln!(
                w,
                "{}",
                json!({"runs": json_runs, "dry_run": true, "commands": [], "undone": false})
            );
        } else {
            outln!(w, "Dry run: nothing was changed.");
        }
        return Ok(Outcome::Good);
    }
    if !args.yes {
        if !crate::sys::term::interactive() || args.json {
            return Err(Error::usage(
                "no terminal to ask on: nothing was changed; pass --yes to roll back",
            ));
        }
        if !confirm("Undo all of this?")? {
            outln!(w, "Nothing changed.");
            return Ok(Outcome::Good);
        }
        if conflicts > 0 && !args.force {
            how.force = confirm(&format!(
                "{conflicts} target(s) changed since fix (shown above). Put them back too, losing those changes?"
            ))?;
        }
    }
    // Only now, with the rollback confirmed: a refused one changes nothing.
    clean_up(w, host, &runs, args.json);
    if crate::after_boot_state::disarm(host)? && !args.json {
        outln!(w, "The after-boot measurement fix had armed is disarmed.");
    }
    if crate::fix::trial::pending::forget(host)? && !args.json {
        outln!(
            w,
            "fix's trial boot is forgotten (its entry is undone with the rest)."
        );
    }
    if crate::qualify::state::remove(host)? && !args.json {
        outln!(
            w,
            "The qualify under way is stopped (its changes are undone with the rest)."
        );
    }
    let mut problems = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    let mut again: Vec<Vec<String>> = Vec::new();
    for (path, run) in runs.iter().rev() {
        let u = undo::undo(host, run, how);
        for (target, r) in &u.done {
            match r {
                Restored::Merged(k) if !args.json => {
                    outln!(
                        w,
                        "{target}: changed since fix: fix's parameters taken out, kept yours ({k})"
                    )
                }
                Restored::Kept(why) if !args.json => outln!(w, "{target}: {why}"),
                _ => {}
            }
        }
        kept.extend(u.conflicts().map(|(t, _)| t.clone()));
        problems.extend(u.problems.iter().cloned());
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
        // What could not be put back stays in the journal, so that rollback can be run again.
        if u.left.is_empty() {
            host.remove_file(path)?;
        } else if u.left.len() != run.entries.len() {
            let rest = journal::Run {
                entries: u.left.clone(),
                ..run.clone()
            };
            journal::save(host, path, &rest)?;
        }
    }
    let mut commands = Vec::new();
    for argv in &again {
        let line = argv.join(" ");
        if let Some(k) = host.kernel() {
            match run_program(k, argv) {
                Ok(()) => {
                    if !args.json {
                        outln!(w, "ran: {line}");
                    }
                    commands.push(json!({"command": line, "status": "ran"}));
                }
                Err(e) => problems.push(e.to_string()),
            }
        } else {
            if !args.json {
                outln!(w, "would run on the machine (not under --root): {line}");
            }
            commands.push(json!({"command": line, "status": "not_run"}));
        }
    }
    if !problems.is_empty() {
        return Err(Error::failed(format!(
            "rollback incomplete, the journal of what is not undone is kept: {}",
            problems.join("; ")
        )));
    }
    if args.json {
        outln!(
            w,
            "{}",
            json!({"runs": json_runs, "dry_run": false, "commands": commands, "undone": kept.is_empty(),
                   "kept": kept})
        );
    } else if kept.is_empty() {
        outln!(w, "Rolled back.");
    } else {
        outln!(
            w,
            "Rolled back, except what was changed since fix, left as it is and kept in the journal: {}. \
             `rmp-eval rollback --force` puts those back too.",
            kept.join(", ")
        );
    }
    if !args.json
        && again.iter().any(|a| {
            a.first()
                .is_some_and(|p| p == "update-grub" || p == "kernel-install")
        })
    {
        outln!(
            w,
            "The kernel command line returns to the old one at the next boot: reboot, then `rmp-eval check`."
        );
    }
    Ok(if kept.is_empty() {
        Outcome::Good
    } else {
        Outcome::ShortFall
    })
}
