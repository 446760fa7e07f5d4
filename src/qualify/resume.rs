//! What to do next, from the state and what this boot observes. The one decision for a run that goes on, a
//! run resumed by the boot unit, and a run resumed after a power loss or SIGKILL at any instant: a stage whose
//! fix journal run is incomplete is undone and done again; one whose run is complete but not yet recorded is
//! recorded; a trial boot is judged by the boot it is in, never by what the state hoped for.

use super::state::{Phase, Qualify, Stage};

/// What this boot shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Observed {
    /// /proc/sys/kernel/random/boot_id: a different one means the machine rebooted since it was recorded.
    pub(crate) boot_id: String,
    /// The fix journal run written after the stage began, if any: Some(true) complete, Some(false) cut short.
    pub(crate) stage_run: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResumeAction {
    /// Planned: start (then the baseline).
    Start,
    MeasureBaseline,
    /// Begin step `index` (record the journal count, then apply its changes or its trial entry).
    Apply(usize),
    /// The stage's journal run was cut short: undo it, then begin the stage again.
    UndoUnfinished(usize),
    /// The stage's journal run is complete but the state does not say so yet: record it.
    FinishApply(usize),
    /// The trial entry is armed and this is still the boot that armed it: reboot into the trial.
    Reboot,
    /// A new boot since the trial was armed: judge it (health check) and record the trial booted or failed.
    JudgeTrial(usize),
    /// Make the trial's command line permanent.
    Commit(usize),
    /// The permanent configuration is written: undo the trial entry's run and record the commit.
    FinishCommit(usize),
    Measure(usize),
    /// The step made the tail significantly worse, or could not be measured: undo it and record that.
    Revert(usize),
    MeasureSweep(usize),
    /// Done: write the report (again; it is derived from the state and the results).
    Report,
    /// Aborted: nothing more to do.
    Nothing,
}

pub(crate) fn next(q: &Qualify, seen: &Observed) -> ResumeAction {
    match &q.phase {
        Phase::Planned => ResumeAction::Start,
        Phase::Baseline => ResumeAction::MeasureBaseline,
        Phase::Step { index, stage } => in_step(q, *index, stage, seen),
        Phase::Sweep { index } => ResumeAction::MeasureSweep(*index),
        Phase::Done => ResumeAction::Report,
        Phase::Aborted { .. } => ResumeAction::Nothing,
    }
}

fn in_step(q: &Qualify, index: usize, stage: &Stage, seen: &Observed) -> ResumeAction {
    match stage {
        Stage::Applying { journals: None } => ResumeAction::Apply(index),
        Stage::Applying { journals: Some(_) } => match seen.stage_run {
            None => ResumeAction::Apply(index),
            Some(false) => ResumeAction::UndoUnfinished(index),
            Some(true) => ResumeAction::FinishApply(index),
        },
        Stage::TrialArmed { boot_id } if *boot_id == seen.boot_id => ResumeAction::Reboot,
        Stage::TrialArmed { .. } => ResumeAction::JudgeTrial(index),
        Stage::TrialBooted | Stage::Committing { journals: None } => ResumeAction::Commit(index),
        Stage::Committing { journals: Some(_) } => match seen.stage_run {
            None => ResumeAction::Commit(index),
            Some(false) => ResumeAction::UndoUnfinished(index),
            Some(true) => ResumeAction::FinishCommit(index),
        },
        Stage::Measuring if q.to_undo(index) => ResumeAction::Revert(index),
        Stage::Measuring => ResumeAction::Measure(index),
    }
}
