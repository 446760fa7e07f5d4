//! Trial boots of the kernel command line, as qualify and `fix --trial-boot` both run them: the one-time boot
//! entry (tunable/cmdline/boot/trial.rs and each loader's `*_trial.rs`) written as its own journal run, the
//! health check of the boot that follows, then either the permanent configuration (the command-line step,
//! planned with the checks that picked the trial's parameters) written and the trial entry undone, or the trial
//! entry undone. Each tool keeps its own record of where it is (qualify's state, fix's `pending.rs`); the runs,
//! the judging and the undoing are these functions, so both behave the same after a crash at any point: a stage
//! remembers how many journal runs there were when it began, and the run after them tells whether it finished.

pub(crate) mod pending;

use super::journal::{self, Run};
use super::kind::How;
use super::plan::{self, Request};
use super::{Change, Plan, Step, StepId};
use crate::checks::CheckId;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::tunable::cmdline::boot::trial::{self, Health, NoTrial, Trial};

/// This boot's id: another one means the machine rebooted.
pub(crate) const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// This boot's id (empty when it cannot be read: then every boot looks the same and no trial is judged early).
pub(crate) fn boot_id(host: &Host) -> String {
    host.read(BOOT_ID).unwrap_or_default().trim().to_string()
}

/// The journal runs, oldest first (their names sort in creation order).
pub(crate) fn runs(host: &Host) -> Result<Vec<(String, Run)>> {
    let mut r = journal::load_all(host)?;
    r.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(r)
}

/// The run written once `began` runs existed: its path and whether it is complete (None: none written yet).
pub(crate) fn run_after(host: &Host, began: usize) -> Result<Option<(String, bool)>> {
    Ok(runs(host)?.get(began).map(|(p, r)| (p.clone(), r.complete)))
}

/// The trial step of a command-line plan (its managed parameters booted once) and the trial it arms: what a
/// plan shows in place of the permanent change, and what `arm` writes.
pub(crate) fn step_of(host: &Host, plan: &Plan) -> std::result::Result<(Step, Trial), NoTrial> {
    let params: Vec<String> = plan
        .changes()
        .find_map(|c| match c {
            Change::File(f) => f.cmdline.as_ref().map(|e| e.added.clone()),
            _ => None,
        })
        .ok_or_else(|| NoTrial("the command-line step plans no parameters here".into()))?;
    let t = crate::tunable::cmdline::boot::trial(host, &params)?;
    let step = Step {
        id: StepId::Cmdline,
        title: "Trial boot of the kernel command line".into(),
        why: t.how.clone(),
        changes: t.changes.clone(),
        notes: vec![],
    };
    Ok((step, t))
}

/// Writes the trial entry (one journal run of its own, so that it can be undone alone).
pub(crate) fn arm(host: &Host, step: &Step, core: usize) -> Result<super::apply::Report> {
    let plan = Plan {
        steps: vec![step.clone()],
    };
    super::apply::apply(host, &plan, core, None)
}

/// The health check of the boot this is, for a trial whose command line was `cmdline`: every parameter of it on
/// /proc/cmdline, rmp-eval's boot unit ran (`from_unit`), the RT core isolated when the trial isolates it.
/// Returns it and the running command line.
pub(crate) fn judge(host: &Host, cmdline: &str, from_unit: bool, core: usize) -> (Health, String) {
    let params = crate::tunable::cmdline::boot::tokens::tokens(cmdline);
    let running = host.read(crate::machine::PROC_CMDLINE).unwrap_or_default();
    let isolated = host.read(crate::machine::CPU_ISOLATED).unwrap_or_default();
    let health = trial::judge(&params, &running, from_unit, &isolated, core);
    (health, running.trim().to_string())
}

/// How many times a boot that skipped an armed trial is given another: GRUB read a grubenv from before the
/// arming (a power cut before the file system's journal reached the disk: GRUB does not replay it) and booted
/// the default entry, while Linux, which replays it, shows the trial still armed. Such a boot says nothing of
/// the trial's line; a second skip is judged like any boot (the trial failed).
pub(crate) const SKIPPED_TRIAL_RETRIES: u32 = 1;

/// Whether this boot skipped the armed trial (its entry still armed) and it is to be booted again, `retries`
/// the boots given already.
pub(crate) fn skipped_again(host: &Host, retries: u32) -> bool {
    retries < SKIPPED_TRIAL_RETRIES && crate::tunable::cmdline::boot::grub_trial::still_armed(host)
}

/// Writes the permanent command line: the command-line step planned with the checks that picked the trial's
/// parameters and the user's own extra ones the trial carried (the trial boot passes them itself). One journal run.
pub(crate) fn commit(
    host: &Host,
    core: usize,
    nic: Option<&str>,
    failed: Vec<CheckId>,
    cmdline_extra: &[String],
) -> Result<()> {
    let req = Request {
        core,
        nic: nic.map(String::from),
        steps: vec![StepId::Cmdline],
        failed,
        cmdline_extra: cmdline_extra.to_vec(),
    };
    let plan = plan::build(host, &req)?;
    super::apply::apply(host, &plan, core, nic)?;
    Ok(())
}

/// The permanent configuration is written (the newest run): the trial entry's run is undone. Returns the
/// commit's run.
pub(crate) fn finish_commit(host: &Host, trial_run: Option<&str>) -> Result<String> {
    let (path, _) = runs(host)?
        .pop()
        .ok_or_else(|| Error::failed("the commit's journal run is gone"))?;
    if let Some(t) = trial_run
        && t != path
    {
        undo_run(host, t)?;
    }
    Ok(path)
}

/// Undoes one journal run (gone already: nothing to do) and removes it. Forced: what was written is put back
/// even where the only later writer changed it (GRUB clearing next_entry in grubenv).
pub(crate) fn undo_run(host: &Host, path: &str) -> Result<()> {
    let Some((_, run)) = runs(host)?.into_iter().find(|(p, _)| p == path) else {
        return Ok(());
    };
    let how = How {
        dry_run: false,
        force: true,
    };
    let u = super::undo::undo(host, &run, how);
    if !u.problems.is_empty() {
        return Err(Error::failed(format!(
            "undoing {path}: {}",
            u.problems.join("; ")
        )));
    }
    for argv in &run.after_restore {
        if let Some(k) = host.kernel() {
            super::kind::command::run_program(k, argv)?;
        }
    }
    host.remove_file(path)?;
    let steps: Vec<StepId> = run.steps.iter().filter_map(|s| StepId::parse(s)).collect();
    if super::boot_flush::writes_boot(&steps) {
        super::boot_flush::flush(host);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
