//! `rmp-eval rollback`: undo every journaled fix run, newest first, each in reverse order; files byte for byte
//! (content, mode, owner; created files and directories removed), values restored; then update-grub & co. run
//! again. A file or value changed since fix is not overwritten without --force (or a yes on the terminal): a
//! command-line file loses only fix's parameters, anything else is left and named, and rollback exits 1.

use std::io::Write;

use crate::cli::RollbackArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::journal;
use crate::fix::kind::Restored;
use crate::fix::rollback::{self, Held, Preview, Ran, Report, RolledBack};
use crate::host::Host;
use crate::outln;
use crate::output::Output;

fn confirm(prompt: &str) -> Result<bool> {
    dialoguer::Confirm::new()
        .with_prompt(prompt)
        .default(false)
        .interact()
        .map_err(|e| Error::failed(format!("prompt: {e}")))
}

/// Prints a document as one line of JSON.
fn json_line(w: &mut dyn Write, v: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string(v).map_err(|e| Error::failed(format!("json: {e}")))?;
    outln!(w, "{text}");
    Ok(())
}

/// Before any change: a killed run's temporary files removed and the armed after-boot measurement and a qualify
/// under way stopped (each said on the terminal).
fn stop_what_depends(
    w: &mut dyn Write,
    host: &Host,
    held: &Held,
    args: &RollbackArgs,
) -> Result<()> {
    if let Some(line) = held.clean_temps(host) {
        super::note(w, args.json, &line);
    }
    if crate::after_boot_state::disarm(host)? && !args.json {
        outln!(w, "The after-boot measurement fix had armed is disarmed.");
    }
    Ok(())
}

/// The empty journal: nothing to undo (what a killed run left and the armed measurement still go).
fn nothing(
    w: &mut dyn Write,
    host: &Host,
    held: Option<&Held>,
    args: &RollbackArgs,
) -> Result<Outcome> {
    if let Some(held) = held {
        stop_what_depends(w, host, held, args)?;
    }
    if args.json {
        json_line(w, &Report::empty(args.dry_run))?;
    } else {
        outln!(w, "Nothing to undo: the journal is empty.");
    }
    Ok(Outcome::Good)
}

/// Asks (unless --yes) whether to roll back, and whether to force the targets changed since fix; None: no.
fn ask(w: &mut dyn Write, args: &RollbackArgs, conflicts: usize) -> Result<Option<bool>> {
    if args.yes {
        return Ok(Some(args.force));
    }
    if !crate::sys::term::interactive() || args.json {
        return Err(Error::usage(
            "no terminal to ask on: nothing was changed; pass --yes to roll back",
        ));
    }
    if !confirm("Undo all of this?")? {
        outln!(w, "Nothing changed.");
        return Ok(None);
    }
    if conflicts > 0 && !args.force {
        return confirm(&format!(
            "{conflicts} target(s) changed since fix (shown above). Put them back too, losing those changes?"
        ))
        .map(Some);
    }
    Ok(Some(args.force))
}

/// The terminal's line for a target put back otherwise than as recorded.
fn said(w: &mut dyn Write, target: &str, r: &Restored) {
    match r {
        Restored::Merged(k) => outln!(
            w,
            "{target}: changed since fix: fix's parameters taken out, kept yours ({k})"
        ),
        Restored::Kept(why) => outln!(w, "{target}: {why}"),
        _ => {}
    }
}

/// What the rollback did, on the terminal.
fn show(w: &mut dyn Write, done: &RolledBack) {
    for c in &done.commands {
        match c.status {
            Ran::Ran => outln!(w, "ran: {}", c.command),
            Ran::NotRun => outln!(
                w,
                "would run on the machine (not under --root): {}",
                c.command
            ),
        }
    }
}

fn summary(w: &mut dyn Write, done: &RolledBack) {
    if done.kept.is_empty() {
        outln!(w, "Rolled back.");
    } else {
        outln!(
            w,
            "Rolled back, except what was changed since fix, left as it is and kept in the journal: {}. \
             `rmp-eval rollback --force` puts those back too.",
            done.kept.join(", ")
        );
    }
    if done.at_next_boot {
        outln!(
            w,
            "The kernel command line returns to the old one at the next boot: reboot, then `rmp-eval check`."
        );
    }
}

/// The dry run's end: the preview was all.
fn dry_run(w: &mut dyn Write, args: &RollbackArgs, preview: &Preview) -> Result<Outcome> {
    if args.json {
        json_line(w, &Report::previewed(preview))?;
    } else {
        outln!(w, "Dry run: nothing was changed.");
    }
    Ok(Outcome::Good)
}

/// The rollback's end: what it did, or the error of what it could not.
fn finish(
    w: &mut dyn Write,
    args: &RollbackArgs,
    preview: &Preview,
    done: &RolledBack,
) -> Result<Outcome> {
    if !args.json {
        show(w, done);
    }
    if let Some(e) = done.incomplete() {
        return Err(e);
    }
    if args.json {
        json_line(w, &Report::rolled_back(preview, done))?;
    } else {
        summary(w, done);
    }
    Ok(if done.kept.is_empty() {
        Outcome::Good
    } else {
        Outcome::ShortFall
    })
}

pub(crate) fn execute(
    host: &Host,
    _out: Output,
    w: &mut dyn Write,
    args: &RollbackArgs,
) -> Result<Outcome> {
    // Locked before the journal is read and through the prompts: a fix finishing meanwhile would be missed.
    let (held, runs) = if args.dry_run {
        (None, journal::load_all(host)?)
    } else {
        let held = Held::take(host, |e| e)?;
        let runs = held.runs.clone();
        (Some(held), runs)
    };
    if runs.is_empty() {
        return nothing(w, host, held.as_ref(), args);
    }
    let preview = rollback::preview(host, &runs, args.force);
    if !args.json {
        crate::out!(w, "{}", preview.text());
    }
    let Some(held) = held else {
        return dry_run(w, args, &preview);
    };
    let Some(force) = ask(w, args, preview.conflicts())? else {
        return Ok(Outcome::Good);
    };
    // Only now, with the rollback confirmed: a refused one changes nothing.
    stop_what_depends(w, host, &held, args)?;
    if crate::qualify::state::remove(host)? && !args.json {
        outln!(
            w,
            "The qualify under way is stopped (its changes are undone with the rest)."
        );
    }
    let done = rollback::roll_back(host, &runs, force, &mut |t, r| {
        if !args.json {
            said(w, t, r)
        }
    })?;
    finish(w, args, &preview, &done)
}
