//! Applying a plan: every target journaled first (fsynced, with room set aside for the journal's last write),
//! then each change in order, then every target read back. A change that fails midway, or a journal that cannot
//! be completed, reverts what this run applied; what could not be reverted is named, with the journal kept.

use super::journal::{self, Entry, Reserve, Run};
use super::kind::{self, How, Took};
use super::{Change, Plan, StepId};
use crate::error::{Error, Result};
use crate::host::Host;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepResult {
    pub step: StepId,
    pub target: String,
    pub took: Took,
    pub(crate) reboot: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub journal: String,
    /// The command that undoes it (with --root when the plan was for a root).
    pub(crate) undo: String,
    pub outcomes: Vec<StepResult>,
    /// What was done to put the boot files where the boot loader reads them (`boot_flush`), if any were written.
    pub(crate) boot_flush: Option<String>,
}

impl Report {
    /// The targets the kernel refused (a managed IRQ) or does not support: never fix's value, so never drift.
    pub(crate) fn kernel_refused(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|o| matches!(o.took, Took::Refused(_) | Took::Unsupported(_)))
            .map(|o| o.target.clone())
            .collect()
    }
    /// Whether a change waits for the next boot.
    pub(crate) fn reboot(&self) -> bool {
        self.outcomes.iter().any(|o| o.reboot)
    }
    /// Whether a target read back otherwise than fix wrote it: the machine falls short.
    pub(crate) fn short(&self) -> bool {
        self.outcomes
            .iter()
            .any(|o| matches!(o.took, Took::Differs(_)))
    }
}

/// A test seam, compiled only with the `test-seams` feature: `cargo test` builds with it (Cargo.toml's
/// dev-dependency on this package), `cargo build` and the package never do (debian/rules checks). Between two
/// changes, with RMP_EVAL_TEST_PAUSE_FILE set, fix writes that file and waits until it is removed (at most 60 s),
/// so that a test can SIGKILL it there: tests/fix/safety.rs.
#[cfg(feature = "test-seams")]
fn test_seam_pause_between_changes(done: usize, total: usize) {
    let Some(flag) = std::env::var_os("RMP_EVAL_TEST_PAUSE_FILE") else {
        return;
    };
    if done == 0 || done >= total {
        return;
    }
    let _ = std::fs::write(&flag, format!("{done}\n"));
    // The test kills us here, or removes the flag to let us go on.
    for _ in 0..600 {
        if !std::path::Path::new(&flag).exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_pause_between_changes(_done: usize, _total: usize) {}

/// Puts back what the applied changes touched (newest first, directories fix created included), then runs the
/// commands that must follow. Returns what could not be put back.
fn revert(
    host: &Host,
    entries: &[Entry],
    applied: &[&Change],
    again: &[Vec<String>],
) -> Vec<String> {
    let targets: Vec<String> = applied.iter().map(|c| c.target()).collect();
    let force = How {
        dry_run: false,
        force: true,
    };
    let mut problems = Vec::new();
    for e in entries.iter().rev() {
        if !(targets.iter().any(|t| t == e.path()) || matches!(e, Entry::Dir(_))) {
            continue;
        }
        match kind::restore(host, e, force) {
            Ok(kind::Restored::Kept(_)) if matches!(e, Entry::Dir(_)) => {}
            Ok(_) => {}
            Err(err) => problems.push(format!("{}: {err}", e.path())),
        }
    }
    if let (true, Some(k)) = (
        applied.iter().any(|c| matches!(c, Change::Command(_))),
        host.kernel(),
    ) {
        for argv in again {
            if let Err(err) = kind::command::run_program(k, argv) {
                problems.push(err.to_string());
            }
        }
    }
    problems
}

/// Journals, applies and verifies `plan`. `core`/`nic` are recorded in the journal for the record.
pub fn apply(host: &Host, plan: &Plan, core: usize, nic: Option<&str>) -> Result<Report> {
    let changes: Vec<(StepId, &Change)> = plan
        .steps
        .iter()
        .flat_map(|s| s.changes.iter().map(move |c| (s.id, c)))
        .collect();
    let mut entries: Vec<Entry> = Vec::new();
    for (_, c) in &changes {
        for e in kind::record(host, c)? {
            if !entries.iter().any(|x| x.path() == e.path()) {
                entries.push(e);
            }
        }
    }
    let again: Vec<Vec<String>> = changes
        .iter()
        .filter_map(|(_, c)| match c {
            Change::Command(x) if x.again_on_rollback => Some(x.argv.clone()),
            _ => None,
        })
        .collect();
    let mut run = Run {
        version: journal::VERSION,
        created: journal::utc_now(),
        core,
        nic: nic.map(str::to_string),
        steps: plan
            .steps
            .iter()
            .filter(|s| !s.changes.is_empty())
            .map(|s| s.id.to_string())
            .collect(),
        entries: entries.clone(),
        after_restore: again.clone(),
        complete: false,
    };
    let jpath = journal::create(host, &run).map_err(|e| {
        Error::failed(format!(
            "cannot write the journal: {e}; nothing was changed"
        ))
    })?;
    // Room for the journal's last write and for putting the files back.
    let room = journal::to_bytes(&run)?.len()
        + entries
            .iter()
            .map(|e| match e {
                Entry::File(f) => f.previous.as_ref().map_or(0, |p| p.content.bytes().len()),
                _ => 0,
            })
            .sum::<usize>()
        + 4096;
    let reserve = match Reserve::take(host, room) {
        Ok(r) => r,
        Err(e) => {
            let _ = host.remove_file(&jpath);
            return Err(Error::failed(format!(
                "not enough room to journal safely: {e}; nothing was changed"
            )));
        }
    };

    let mut took = Vec::new();
    let mut applied: Vec<&Change> = Vec::new();
    for (i, (step, c)) in changes.iter().enumerate() {
        test_seam_pause_between_changes(i, changes.len());
        match kind::apply(host, c) {
            Ok(t) => {
                if !t.left_as_it_was() {
                    applied.push(c);
                }
                took.push((*step, *c, t));
            }
            Err(e) => {
                reserve.release(host);
                let what = format!("{} (step {step}): {e}", c.target());
                return Err(undone(host, &jpath, &entries, &applied, &again, &what));
            }
        }
    }
    // What was not changed (refused by the kernel, unsupported, under --root) has nothing to restore later.
    let untouched: Vec<String> = took
        .iter()
        .filter(|(_, c, t)| t.left_as_it_was() && !matches!(c, Change::Command(_)))
        .map(|(_, c, _)| c.target())
        .collect();
    run.entries
        .retain(|e| !untouched.iter().any(|r| r == e.path()));
    run.complete = true;
    reserve.release(host);
    if let Err(e) = journal::save(host, &jpath, &run) {
        let what = format!("completing the journal {jpath}: {e}");
        return Err(undone(host, &jpath, &entries, &applied, &again, &what));
    }
    let boot_flush = super::boot_flush::writes_boot(changes.iter().map(|(s, _)| s))
        .then(|| super::boot_flush::flush(host));
    let outcomes = took
        .into_iter()
        .map(|(step, c, t)| StepResult {
            step,
            target: c.target(),
            took: kind::verify(host, c, t),
            reboot: c.reboot_required(),
        })
        .collect();
    Ok(Report {
        journal: jpath,
        undo: super::undo::hint(host),
        outcomes,
        boot_flush,
    })
}

/// After a failure: reverts what was applied and says exactly what, if anything, is left changed.
fn undone(
    host: &Host,
    jpath: &str,
    entries: &[Entry],
    applied: &[&Change],
    again: &[Vec<String>],
    what: &str,
) -> Error {
    let problems = revert(host, entries, applied, again);
    if problems.is_empty() {
        let _ = host.remove_file(jpath);
        return Error::failed(format!(
            "{what}; the {} change(s) this run had applied were reverted, nothing is left changed",
            applied.len()
        ));
    }
    Error::failed(format!(
        "{what}; reverting failed for: {}; the journal {jpath} is kept: `{}` undoes the rest",
        problems.join("; "),
        super::undo::hint(host)
    ))
}
