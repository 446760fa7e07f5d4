//! `rmp-eval rollback`: undo every journaled fix run, newest first, each in reverse order; files byte for byte
//! (content, mode, owner; created files and directories removed), values restored; then update-grub & co. run
//! again. A file or value changed since fix is not overwritten without --force (or a yes on the terminal): a
//! command-line file loses only fix's parameters, anything else is left and named, and rollback exits 1.

use std::io::Write;

use crate::cli::RollbackArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::journal::{self, Held};
use crate::fix::render;
use crate::fix::rollback::{self, Preview, RollbackReport, RolledBack};
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

/// Before any change: what depends on the journal stopped (each said on the terminal).
fn stop_what_depends(
    w: &mut dyn Write,
    host: &Host,
    held: &Held,
    args: &RollbackArgs,
) -> Result<()> {
    let stopped = rollback::stop_dependents(host, held)?;
    if let Some(line) = &stopped.temps {
        super::note(w, args.json, line);
    }
    if !args.json {
        for line in stopped.lines() {
            outln!(w, "{line}");
        }
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
        json_line(w, &RollbackReport::empty(args.dry_run))?;
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

/// The dry run's end: the preview was all.
fn dry_run(w: &mut dyn Write, args: &RollbackArgs, preview: &Preview) -> Result<Outcome> {
    if args.json {
        json_line(w, &RollbackReport::previewed(preview))?;
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
        for line in done.ran_lines() {
            outln!(w, "{line}");
        }
    }
    if let Some(e) = done.incomplete() {
        return Err(e);
    }
    if args.json {
        json_line(w, &RollbackReport::rolled_back(preview, done))?;
    } else {
        for line in done.summary() {
            outln!(w, "{line}");
        }
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
        if let (false, Some(line)) = (args.json, render::restored_line(t, r)) {
            outln!(w, "{line}");
        }
    })?;
    finish(w, args, &preview, &done)
}
