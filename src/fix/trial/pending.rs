//! `fix --trial-boot`: fix's record of its trial boot, /var/lib/rmp-eval/trial-boot.json, rewritten whole at
//! each transition (atomic, fsynced) and written before the journal run it announces:
//!   arming (the trial entry's run about to be written) → armed (the machine is to boot it once) →
//!   [the next boot: rmp-eval-after-boot.service judges it] → committing (the permanent configuration being
//!   written) → kept; or → undone (the trial boot was not healthy, or fix stopped while arming it).
//! Kept and undone are moved to trial-boot-done.json (the unit then has nothing left to do at the next boot) and
//! say why. `resume` is the one decision after a clean stop, a crash at any of these points, or the reboot.

use std::io::Write;

use serde::{Deserialize, Serialize};

use super::{boot_id, run_after};
use crate::error::{Error, Result};
use crate::fix::apply::Report;
use crate::fix::{Plan, Step, StepId};
use crate::host::Host;
use crate::outln;
use crate::tunable::cmdline::boot::trial::Trial;

pub(crate) const STATE: &str = "/var/lib/rmp-eval/trial-boot.json";
pub(crate) const DONE: &str = "/var/lib/rmp-eval/trial-boot-done.json";
const VERSION: u32 = 1;

/// Where fix's trial boot is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub(crate) enum TrialStage {
    /// The trial entry's run is being written; `journals` runs existed before it.
    Arming { journals: usize },
    /// The trial entry is written (run `journal`); the next boot boots it once.
    Armed { journal: String },
    /// The trial boot was healthy; the permanent configuration's run is being written after `journals` runs.
    Committing { trial: String, journals: usize },
    /// The command line is permanent (run `journal`); the trial entry is undone.
    Kept { journal: String },
    /// The trial entry is undone and the command line left as it was: why.
    Undone { why: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub(crate) version: u32,
    /// UTC, when fix armed it.
    pub(crate) armed: String,
    pub(crate) core: usize,
    pub(crate) nic: Option<String>,
    /// The checks that picked the parameters: the commit plans with them.
    pub(crate) failed: Vec<String>,
    /// The trial entry's command line.
    pub(crate) cmdline: String,
    /// The boot that armed it: a trial is judged only in another one.
    pub(crate) boot_id: String,
    /// The program that reboots into it.
    pub(crate) reboot: Vec<String>,
    pub(crate) stage: TrialStage,
    /// Boots that skipped the armed trial (GRUB's next_entry still set) and were given another: one at most.
    #[serde(default)]
    pub(crate) retries: u32,
    /// What the judging boot found (its command line, the health check's findings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) judged: Option<String>,
}

/// What to do next, from the record and what this boot observes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// The trial entry's run is complete: record it armed.
    RecordArmed(String),
    /// The trial entry's run was cut short (undo it) or never begun: the trial is undone.
    Abandon(Option<String>),
    /// Still the boot that armed it: the trial boot is to come.
    Wait,
    Judge,
    /// Write the permanent configuration (after undoing a cut-short attempt, if any).
    Commit(Option<String>),
    FinishCommit,
    Nothing,
}

/// The decision: `now` this boot's id, `after` the run written after the stage's count (path, complete).
pub(crate) fn next(p: &Pending, now: &str, after: Option<(String, bool)>) -> Action {
    match (&p.stage, after) {
        (TrialStage::Arming { .. }, Some((run, true))) => Action::RecordArmed(run),
        (TrialStage::Arming { .. }, Some((run, false))) => Action::Abandon(Some(run)),
        (TrialStage::Arming { .. }, None) => Action::Abandon(None),
        (TrialStage::Armed { .. }, _) if p.boot_id == now => Action::Wait,
        (TrialStage::Armed { .. }, _) => Action::Judge,
        (TrialStage::Committing { .. }, Some((_, true))) => Action::FinishCommit,
        (TrialStage::Committing { .. }, Some((run, false))) => Action::Commit(Some(run)),
        (TrialStage::Committing { .. }, None) => Action::Commit(None),
        (TrialStage::Kept { .. } | TrialStage::Undone { .. }, _) => Action::Nothing,
    }
}

impl Pending {
    /// The count the stage began with, if the stage writes a run.
    fn began(&self) -> Option<usize> {
        match self.stage {
            TrialStage::Arming { journals } | TrialStage::Committing { journals, .. } => {
                Some(journals)
            }
            _ => None,
        }
    }

    /// Where it is, in words (`fix --status`, the after-boot log).
    pub(crate) fn describe(&self) -> String {
        let what = match &self.stage {
            TrialStage::Arming { .. } => {
                "being written (or cut short: the next boot undoes it)".to_string()
            }
            TrialStage::Armed { .. } => format!(
                "armed: the next boot boots it once (`{}`), then rmp-eval-after-boot.service judges it",
                self.reboot.join(" ")
            ),
            TrialStage::Committing { .. } => {
                "healthy; the permanent configuration is being written".into()
            }
            TrialStage::Kept { journal } => {
                format!("kept: the boot was healthy, the command line is permanent ({journal})")
            }
            TrialStage::Undone { why } => format!("undone, the command line left as it was: {why}"),
        };
        format!(
            "fix's trial boot of `{}` (armed {}, CPU {}): {what}",
            self.cmdline, self.armed, self.core
        )
    }
}

/// The plan with its command-line step to be tried first: the step's changes replaced by the trial entry's,
/// with a note of what follows; refused (with why) where no trial boot can be armed. The dry run, the diff and
/// the apply all come from this plan.
pub(crate) fn tried_first(host: &Host, mut plan: Plan) -> (Plan, Option<Trial>) {
    let Some(i) = plan
        .steps
        .iter()
        .position(|s| s.id == StepId::Cmdline && !s.changes.is_empty())
    else {
        return (plan, None);
    };
    if let Ok(Some(p)) = load(host) {
        plan.steps[i].refuse(format!(
            "--trial-boot: a trial boot is under way: {}",
            p.describe()
        ));
        return (plan, None);
    }
    let one = Plan {
        steps: vec![plan.steps[i].clone()],
    };
    match super::step_of(host, &one) {
        Ok((mut step, t)) => {
            let permanent = &plan.steps[i];
            step.notes = permanent.notes.clone();
            step.note(format!(
                "tried before it is kept: the machine boots `{}` once (reboot with `{}`); at that boot \
                 rmp-eval-after-boot.service checks it (a new boot, the parameters on /proc/cmdline, the RT core \
                 isolated) and only then writes the permanent change ({}); an unhealthy or failed trial boot \
                 comes back on the previous command line and the trial entry is undone",
                t.cmdline.join(" "),
                t.reboot.join(" "),
                permanent
                    .changes
                    .iter()
                    .map(|c| c.target())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            plan.steps[i] = step;
            (plan, Some(t))
        }
        Err(no) => {
            plan.steps[i].refuse(format!("--trial-boot: {no}"));
            (plan, None)
        }
    }
}

/// The plan's trial step, if it has one (what `tried_first` put in), and the rest.
pub(crate) fn split(plan: &Plan) -> (Plan, Option<Step>) {
    let is_trial = |s: &Step| s.id == StepId::Cmdline && s.title.starts_with("Trial boot");
    let rest = plan
        .steps
        .iter()
        .filter(|s| !is_trial(s))
        .cloned()
        .collect();
    (
        Plan { steps: rest },
        plan.steps.iter().find(|s| is_trial(s)).cloned(),
    )
}

/// Applies `plan` as fix does, its trial step (if `tried_first` put one in) as a run of its own after the rest,
/// armed through `arm`. One report for both runs. What the kernel refused (managed IRQs) was never fix's value:
/// it is remembered, so that the monitor does not call it drift.
pub(crate) fn apply(
    host: &Host,
    plan: &Plan,
    trial: Option<&Trial>,
    on: (usize, Option<&str>),
    failed: &[crate::checks::CheckId],
) -> Result<Report> {
    let report = apply_runs(host, plan, trial, on, failed)?;
    crate::fix::drift::remember_refused(host, &report.kernel_refused())?;
    Ok(report)
}

fn apply_runs(
    host: &Host,
    plan: &Plan,
    trial: Option<&Trial>,
    (core, nic): (usize, Option<&str>),
    failed: &[crate::checks::CheckId],
) -> Result<Report> {
    let (rest, step) = split(plan);
    let (Some(step), Some(t)) = (step, trial) else {
        return crate::fix::apply::apply(host, plan, core, nic);
    };
    let first = match rest.is_empty() {
        true => None,
        false => Some(crate::fix::apply::apply(host, &rest, core, nic)?),
    };
    let armed = arm(host, (&step, t), core, nic, failed)?;
    Ok(match first {
        None => armed,
        Some(mut r) => {
            r.journal = format!("{} and {}", r.journal, armed.journal);
            r.outcomes.extend(armed.outcomes);
            r
        }
    })
}

/// Arms `t` (the plan's trial step `step`): the record first (arming, with the count of runs), then the trial
/// entry's run, then the record armed.
pub(crate) fn arm(
    host: &Host,
    (step, t): (&Step, &Trial),
    core: usize,
    nic: Option<&str>,
    failed: &[crate::checks::CheckId],
) -> Result<Report> {
    if load(host)?.is_some() {
        return Err(Error::failed(format!(
            "{STATE}: a trial boot is under way already (`rmp-eval fix --status`); nothing was changed"
        )));
    }
    let mut p = Pending {
        version: VERSION,
        armed: crate::wallclock::rfc3339_now(),
        core,
        nic: nic.map(String::from),
        failed: failed.iter().map(|c| c.as_str().to_string()).collect(),
        cmdline: t.cmdline.join(" "),
        boot_id: boot_id(host),
        reboot: t.reboot.clone(),
        stage: TrialStage::Arming {
            journals: super::runs(host)?.len(),
        },
        retries: 0,
        judged: None,
    };
    save(host, &p)?;
    let r = super::arm(host, step, core)?;
    p.stage = TrialStage::Armed {
        journal: r.journal.clone(),
    };
    save(host, &p)?;
    Ok(r)
}

/// Judges, commits or undoes fix's trial as this boot finds it (rmp-eval-after-boot.service at each boot;
/// `from_unit`: run by it). Nothing pending: nothing to do.
pub(crate) fn resume(host: &Host, w: &mut dyn Write, from_unit: bool) -> Result<()> {
    let Some(mut p) = load(host)? else {
        return Ok(());
    };
    loop {
        let after = match p.began() {
            Some(n) => run_after(host, n)?,
            None => None,
        };
        match next(&p, &boot_id(host), after) {
            Action::RecordArmed(journal) => {
                p.stage = TrialStage::Armed { journal };
                save(host, &p)?;
            }
            Action::Abandon(cut) => {
                if let Some(run) = cut {
                    super::undo_run(host, &run)?;
                }
                let why = "fix stopped before the trial entry was complete; what it had written is undone".into();
                return finish(host, w, p, TrialStage::Undone { why });
            }
            Action::Wait => {
                outln!(w, "{}", p.describe());
                return Ok(());
            }
            Action::Judge if super::skipped_again(host, p.retries) => {
                return armed_again(host, w, p);
            }
            Action::Judge => {
                let TrialStage::Armed { journal } = p.stage.clone() else {
                    return Ok(());
                };
                let (health, running) = super::judge(host, &p.cmdline, from_unit, p.core);
                p.judged = Some(format!("this boot's command line: `{running}`"));
                if !health.ok() {
                    super::undo_run(host, &journal)?;
                    let why = format!(
                        "the trial boot was not healthy: {}; this boot is on the previous command line or the \
                         default entry, the trial entry is undone",
                        health.problems.join("; ")
                    );
                    return finish(host, w, p, TrialStage::Undone { why });
                }
                p.stage = TrialStage::Committing {
                    trial: journal,
                    journals: super::runs(host)?.len(),
                };
                save(host, &p)?;
            }
            Action::Commit(cut) => {
                if let Some(run) = cut {
                    super::undo_run(host, &run)?;
                }
                let failed = p
                    .failed
                    .iter()
                    .filter_map(|c| crate::checks::CheckId::parse(c))
                    .collect();
                super::commit(host, p.core, p.nic.as_deref(), failed, &[])?;
            }
            Action::FinishCommit => {
                let TrialStage::Committing { trial, .. } = &p.stage else {
                    return Ok(());
                };
                let journal = super::finish_commit(host, Some(trial))?;
                return finish(host, w, p, TrialStage::Kept { journal });
            }
            Action::Nothing => return Ok(()),
        }
    }
}

/// This boot skipped the armed trial (its entry still armed): it is the next boot's to judge, once more. Not
/// rebooted from here: the user chose when to reboot into the trial, and is told to do it again.
fn armed_again(host: &Host, w: &mut dyn Write, mut p: Pending) -> Result<()> {
    p.retries += 1;
    p.boot_id = boot_id(host);
    save(host, &p)?;
    outln!(w, "{}", crate::fix::boot_flush::flush(host));
    outln!(
        w,
        "fix's trial boot: this boot did not come through the armed trial (GRUB's next_entry is still set: power \
         lost before the reboot?); it stays armed for one more boot: reboot again (`{}`)",
        p.reboot.join(" ")
    );
    outln!(w, "{}", p.describe());
    Ok(())
}

/// The trial's end: the record moved to DONE (written first, then the pending one removed: a crash between
/// leaves the pending record, whose next step finds its work done), and said.
fn finish(host: &Host, w: &mut dyn Write, mut p: Pending, stage: TrialStage) -> Result<()> {
    p.stage = stage;
    write(host, DONE, &p)?;
    host.remove_file(STATE)?;
    outln!(w, "{}", p.describe());
    if let Some(j) = &p.judged {
        outln!(w, "  {j}");
    }
    Ok(())
}

/// Where fix's trial boot is, or how the last one ended; None when fix never armed one.
pub(crate) fn status(host: &Host) -> Result<Option<Pending>> {
    match load(host)? {
        Some(p) => Ok(Some(p)),
        None => read(host, DONE),
    }
}

/// Forgets fix's trial (rollback undoes its runs with the rest). True when one was pending.
pub(crate) fn forget(host: &Host) -> Result<bool> {
    let pending = host.exists(STATE);
    for f in [STATE, DONE] {
        if host.exists(f) {
            host.remove_file(f)?;
        }
    }
    Ok(pending)
}

/// The pending record, None when there is none.
pub(crate) fn load(host: &Host) -> Result<Option<Pending>> {
    read(host, STATE)
}

fn read(host: &Host, path: &str) -> Result<Option<Pending>> {
    let text = match host.read(path) {
        Ok(t) => t,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let p: Pending = serde_json::from_str(&text).map_err(|e| {
        Error::failed(format!(
            "{path}: not a trial-boot record rmp-eval can read ({e}); left in place"
        ))
    })?;
    if p.version != VERSION {
        return Err(Error::failed(format!(
            "{path}: version {}, this rmp-eval reads version {VERSION}; left in place",
            p.version
        )));
    }
    Ok(Some(p))
}

fn save(host: &Host, p: &Pending) -> Result<()> {
    write(host, STATE, p)
}

fn write(host: &Host, path: &str, p: &Pending) -> Result<()> {
    let text = serde_json::to_string_pretty(p).map_err(|e| Error::failed(e.to_string()))?;
    host.write_atomic(path, format!("{text}\n").as_bytes(), None)?;
    Ok(())
}
