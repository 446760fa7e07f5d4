//! Applying a plan: journal first (fsynced), then each change in order (files atomically), then verify by reading
//! every target back. A change that fails midway reverts what this run applied and the journal run is dropped.

use std::process::Command;

use super::journal::{self, Entry, Run};
use super::undo;
use super::{Change, PAUSE_ENV, Plan};
use crate::error::{Error, Result};
use crate::host::{FileMeta, Host};

/// What became of one change, read back after applying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Took {
    Took,
    /// The value reads back as something else.
    Differs(String),
    /// The kernel refused it (EINVAL/EIO from a managed IRQ): reported, not fatal.
    Refused(String),
    /// The NIC's driver has no such setting (EOPNOTSUPP): reported for its step, not fatal to the others.
    Unsupported(String),
    Ran,
    /// Under --root: the command that would run on the machine.
    WouldRun,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub step: &'static str,
    pub target: String,
    pub took: Took,
    pub reboot: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub journal: String,
    pub outcomes: Vec<Outcome>,
}

/// Runs a program with arguments (never a shell). Its output is returned for the error message.
pub fn run_program(argv: &[String]) -> Result<()> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| Error::failed("empty command"))?;
    let out = Command::new(prog)
        .args(args)
        .output()
        .map_err(|e| Error::sys(format!("cannot run {prog}"), e))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(Error::failed(format!(
        "`{}` failed ({}): {last}",
        argv.join(" "),
        out.status
    )))
}

fn pause_for_tests(done: usize, total: usize) {
    let Some(flag) = std::env::var_os(PAUSE_ENV) else {
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

fn new_file_meta(host: &Host, path: &str, mode: u32) -> FileMeta {
    host.meta(path).unwrap_or(FileMeta {
        mode,
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
    })
}

fn apply_one(host: &Host, c: &Change) -> Result<Took> {
    match c {
        Change::File {
            path,
            after: Some(bytes),
            mode,
            ..
        } => {
            let meta = new_file_meta(host, path, *mode);
            host.write_atomic(path, bytes, Some(&meta))?;
        }
        Change::File {
            path, after: None, ..
        } => match host.remove_file(path) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        },
        Change::Value {
            path,
            after,
            refusable,
            ..
        } => {
            if let Err(e) = host.write_value(path, &format!("{after}\n")) {
                let refused = undo::kernel_refused(&e);
                if *refusable && refused {
                    return Ok(Took::Refused(e.reason()));
                }
                return Err(e.into());
            }
        }
        Change::Ethtool { .. } if !host.is_live() => return Ok(Took::WouldRun),
        Change::Ethtool {
            nic, field, after, ..
        } => {
            if let Err(e) = super::ethtool::write(nic, *field, *after) {
                if super::ethtool::unsupported(&e) {
                    return Ok(Took::Unsupported(e.to_string()));
                }
                return Err(Error::sys(c.target(), e));
            }
        }
        Change::Command { argv, .. } => {
            if !host.is_live() {
                return Ok(Took::WouldRun);
            }
            run_program(argv)?;
            return Ok(Took::Ran);
        }
    }
    Ok(Took::Took)
}

/// Puts back the targets of the applied changes, newest first, and runs the commands that must follow.
fn revert(
    host: &Host,
    entries: &[Entry],
    applied: &[&Change],
    again: &[Vec<String>],
) -> Vec<String> {
    let mut problems = Vec::new();
    for c in applied.iter().rev() {
        let target = c.target();
        if let Some(e) = entries.iter().find(|e| e.path() == target)
            && let Err(err) = undo::restore(host, e, false)
        {
            problems.push(err.to_string());
        }
    }
    if applied.iter().any(|c| matches!(c, Change::Command { .. })) && host.is_live() {
        for argv in again {
            if let Err(err) = run_program(argv) {
                problems.push(err.to_string());
            }
        }
    }
    problems
}

/// Journals, applies and verifies `plan`. `core`/`nic` are recorded in the journal for the record.
pub fn apply(host: &Host, plan: &Plan, core: usize, nic: Option<&str>) -> Result<Report> {
    let changes: Vec<(&'static str, &Change)> = plan
        .steps
        .iter()
        .flat_map(|s| s.changes.iter().map(move |c| (s.id, c)))
        .collect();
    let all: Vec<&Change> = changes.iter().map(|(_, c)| *c).collect();
    let entries = journal::record(host, &all)?;
    let again: Vec<Vec<String>> = all
        .iter()
        .filter_map(|c| match c {
            Change::Command {
                argv,
                again_on_rollback: true,
                ..
            } => Some(argv.clone()),
            _ => None,
        })
        .collect();
    let mut run = Run {
        version: 1,
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
    let jpath = journal::create(host, &run)?;

    let mut took = Vec::new();
    let mut applied: Vec<&Change> = Vec::new();
    for (i, (step, c)) in changes.iter().enumerate() {
        pause_for_tests(i, changes.len());
        match apply_one(host, c) {
            Ok(t) => {
                if !matches!(t, Took::Refused(_) | Took::Unsupported(_)) {
                    applied.push(c);
                }
                took.push((*step, *c, t));
            }
            Err(e) => {
                let problems = revert(host, &entries, &applied, &again);
                if problems.is_empty() {
                    let _ = host.remove_file(&jpath);
                    return Err(Error::failed(format!(
                        "{} (step {step}): {e}; the {} change(s) this run had applied were reverted, nothing is \
                         left changed",
                        c.target(),
                        applied.len()
                    )));
                }
                return Err(Error::failed(format!(
                    "{} (step {step}): {e}; reverting failed too ({}); the journal {jpath} is kept: run \
                     `rmp-eval rollback`",
                    c.target(),
                    problems.join("; ")
                )));
            }
        }
    }
    // What the kernel refused was not changed: nothing to restore later (after a reboot the IRQ may read
    // differently and refuse the old value too).
    let refused: Vec<String> = took
        .iter()
        .filter(|(_, _, t)| matches!(t, Took::Refused(_) | Took::Unsupported(_)))
        .map(|(_, c, _)| c.target())
        .collect();
    run.entries
        .retain(|e| !refused.iter().any(|r| r == e.path()));
    run.complete = true;
    journal::save(host, &jpath, &run)?;
    let outcomes = took
        .into_iter()
        .map(|(step, c, t)| Outcome {
            step,
            target: c.target(),
            took: verify(host, c, t),
            reboot: c.reboot_required(),
        })
        .collect();
    Ok(Report {
        journal: jpath,
        outcomes,
    })
}

/// Reads a target back and says whether the change took.
fn verify(host: &Host, c: &Change, t: Took) -> Took {
    if t != Took::Took {
        return t;
    }
    match c {
        Change::File { path, after, .. } => {
            let now = host.read_bytes(path).ok();
            if now.as_ref() == after.as_ref() {
                Took::Took
            } else {
                Took::Differs(now.map_or("absent".into(), |b| {
                    format!("{} bytes, not as written", b.len())
                }))
            }
        }
        Change::Value {
            path, after, kind, ..
        } => match host.read(path) {
            Ok(now) if kind.same(&now, after) => Took::Took,
            Ok(now) => Took::Differs(now.trim().to_string()),
            Err(e) => Took::Differs(e.reason()),
        },
        Change::Ethtool {
            nic, field, after, ..
        } => match super::ethtool::read(nic, *field) {
            Ok(now) if now == *after => Took::Took,
            Ok(now) => Took::Differs(now.to_string()),
            Err(e) => Took::Differs(e.to_string()),
        },
        Change::Command { .. } => t,
    }
}
