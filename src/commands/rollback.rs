//! `rmp-eval rollback`: undo every journaled fix run, newest first, each in reverse order; files byte for byte
//! (content, mode, owner; created files removed), values restored; then update-grub & co. run again.

use crate::cli::RollbackArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::apply::run_program;
use crate::fix::journal::{self, Restored};
use crate::host::Host;
use crate::outln;
use crate::output::Output;

pub fn execute(host: &Host, _out: Output, args: &RollbackArgs) -> Result<Outcome> {
    let runs = journal::load_all(host)?;
    if runs.is_empty() {
        outln!("Nothing to undo: the journal is empty.");
        return Ok(Outcome::Good);
    }
    for (path, run) in runs.iter().rev() {
        let state = if run.complete { "" } else { ", interrupted" };
        outln!(
            "{path}: fix of {} (core {}{state}), steps {}",
            run.created,
            run.core,
            run.steps.join(", ")
        );
        for e in run.entries.iter().rev() {
            let what = match journal::restore(host, e, true) {
                Ok(Restored::Unchanged) => "as recorded, nothing to do".into(),
                Ok(Restored::Removed) => "remove (did not exist)".into(),
                Ok(Restored::Written(d)) => format!("restore ({d})"),
                Err(err) => format!("cannot restore: {err}"),
            };
            outln!("  {}: {what}", e.path());
        }
    }
    if args.dry_run {
        outln!("Dry run: nothing was changed.");
        return Ok(Outcome::Good);
    }
    if !args.yes {
        if !crate::commands::fix::interactive() {
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
    let mut problems = Vec::new();
    let mut again: Vec<Vec<String>> = Vec::new();
    for (path, run) in runs.iter().rev() {
        let undone = journal::undo(host, run);
        let failed = !undone.is_empty();
        problems.extend(undone);
        for a in &run.after_restore {
            if !again.contains(a) {
                again.push(a.clone());
            }
        }
        if !failed {
            host.remove_file(path)?;
        }
    }
    for argv in &again {
        if host.is_live() {
            match run_program(argv) {
                Ok(()) => outln!("ran: {}", argv.join(" ")),
                Err(e) => problems.push(e.to_string()),
            }
        } else {
            outln!(
                "would run on the machine (not under --root): {}",
                argv.join(" ")
            );
        }
    }
    if !problems.is_empty() {
        return Err(Error::failed(format!(
            "rollback incomplete, the journal of the failed runs is kept: {}",
            problems.join("; ")
        )));
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
