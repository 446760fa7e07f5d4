//! `rmp-eval rollback`: undo every journaled fix run, newest first, each in reverse order; files byte for byte
//! (content, mode, owner; created files removed), values restored; then update-grub & co. run again.

use serde_json::{Value, json};

use crate::cli::RollbackArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::apply::run_program;
use crate::fix::{journal, undo};
use crate::host::Host;
use crate::outln;
use crate::output::Output;

/// What rollback will do, run by run (newest first), as text and JSON.
fn preview(host: &Host, runs: &[(String, journal::Run)]) -> (String, Vec<Value>) {
    let mut text = String::new();
    let mut json_runs = Vec::new();
    for (path, run) in runs.iter().rev() {
        let state = if run.complete { "" } else { ", interrupted" };
        text.push_str(&format!(
            "{path}: fix of {} (core {}{state}), steps {}\n",
            run.created,
            run.core,
            run.steps.join(", ")
        ));
        let mut entries = Vec::new();
        for e in run.entries.iter().rev() {
            let (action, what) = match undo::restore(host, e, true) {
                Ok(undo::Restored::Unchanged) => ("none", "as recorded, nothing to do".to_string()),
                Ok(undo::Restored::Removed) => ("remove", "remove (did not exist)".to_string()),
                Ok(undo::Restored::Written(d)) => ("restore", format!("restore ({d})")),
                Ok(undo::Restored::Refused(d)) => (
                    "refused",
                    format!("refused by the kernel ({d}), left as it is"),
                ),
                Err(err) => ("error", format!("cannot restore: {err}")),
            };
            text.push_str(&format!("  {}: {what}\n", e.path()));
            entries.push(json!({"target": e.path(), "action": action, "detail": what}));
        }
        json_runs.push(json!({
            "journal": path, "created": run.created, "core": run.core, "nic": run.nic,
            "steps": run.steps, "interrupted": !run.complete, "entries": entries,
        }));
    }
    (text, json_runs)
}

pub fn execute(host: &Host, _out: Output, args: &RollbackArgs) -> Result<Outcome> {
    let runs = journal::load_all(host)?;
    if runs.is_empty() {
        if args.json {
            outln!(
                "{}",
                json!({"runs": [], "dry_run": args.dry_run, "commands": [], "undone": false})
            );
        } else {
            outln!("Nothing to undo: the journal is empty.");
        }
        return Ok(Outcome::Good);
    }
    let (text, json_runs) = preview(host, &runs);
    if !args.json {
        crate::out!("{text}");
    }
    if args.dry_run {
        if args.json {
            outln!(
                "{}",
                json!({"runs": json_runs, "dry_run": true, "commands": [], "undone": false})
            );
        } else {
            outln!("Dry run: nothing was changed.");
        }
        return Ok(Outcome::Good);
    }
    if !args.yes {
        if !crate::commands::fix::interactive() || args.json {
            return Err(Error::usage(
                "no terminal to ask on: nothing was changed; pass --yes to roll back",
            ));
        }
        let ok = dialoguer::Confirm::new()
            .with_prompt("Undo all of this?")
            .default(false)
            .interact()
            .map_err(|e| Error::failed(format!("prompt: {e}")))?;
        if !ok {
            outln!("Nothing changed.");
            return Ok(Outcome::Good);
        }
    }
    let _lock = journal::lock(host)?;
    let mut problems = Vec::new();
    let mut again: Vec<Vec<String>> = Vec::new();
    for (path, run) in runs.iter().rev() {
        let undone = undo::undo(host, run);
        let failed = !undone.is_empty();
        problems.extend(undone);
        for a in &run.after_restore {
            if !again.contains(a) {
                again.push(a.clone());
            }
        }
        // A run that could not be undone completely stays, so that rollback can be tried again.
        if !failed {
            host.remove_file(path)?;
        }
    }
    let mut commands = Vec::new();
    for argv in &again {
        let line = argv.join(" ");
        if host.is_live() {
            match run_program(argv) {
                Ok(()) => {
                    if !args.json {
                        outln!("ran: {line}");
                    }
                    commands.push(json!({"command": line, "status": "ran"}));
                }
                Err(e) => problems.push(e.to_string()),
            }
        } else {
            if !args.json {
                outln!("would run on the machine (not under --root): {line}");
            }
            commands.push(json!({"command": line, "status": "not_run"}));
        }
    }
    if !problems.is_empty() {
        return Err(Error::failed(format!(
            "rollback incomplete, the journal of the failed runs is kept: {}",
            problems.join("; ")
        )));
    }
    if args.json {
        outln!(
            "{}",
            json!({"runs": json_runs, "dry_run": false, "commands": commands, "undone": true})
        );
        return Ok(Outcome::Good);
    }
    outln!("Rolled back.");
    if again.iter().any(|a| {
        a.first()
            .is_some_and(|p| p == "update-grub" || p == "kernel-install")
    }) {
        outln!(
            "The kernel command line returns to the old one at the next boot: reboot, then `rmp-eval check`."
        );
    }
    Ok(Outcome::Good)
}
