//! The driver: does what `resume::next` says, records the event it leads to (state saved, fsynced), and asks
//! again — until qualify needs a reboot (the trial boot), is done or aborted. The same loop runs when the plan
//! is accepted, when the boot unit resumes it, and after a crash: every action is safe to do again from the
//! state it starts in (a cut-short journal run is undone first, a measurement is made again).

use std::io::Write;
use std::path::PathBuf;

use super::resume::{self, Observed, ResumeAction};
use super::state::{self, Effect, Qualify, QualifyEvent};
use crate::checks::CheckId;
use crate::error::{Error, Result};
use crate::fix::plan::{self, Request};
use crate::fix::trial::{self, runs};
use crate::fix::{Plan, StepId};
use crate::host::Host;
use crate::measure::result::RunResult;
use crate::measure::result::store::RunLabel;
use crate::measure::spec::{NicSpec, RunSpec, Workload};
use crate::outln;
use crate::output::Output;
use crate::tunable::cmdline::boot::trial::NoTrial;

/// Why the driver stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The trial is armed: reboot with this program (the caller runs it, or tells the user to).
    Reboot(Vec<String>),
    Done,
    Aborted,
}

/// Whether a measurement may be made on this boot's command line (`Drive::line_in_force`).
enum Line {
    Holds,
    /// Not the line in force, a second time: recorded as the measurement failed.
    Recorded,
    Reboot(Stop),
}

/// What the driver works with.
pub(crate) struct Drive<'a> {
    pub(crate) host: &'a Host,
    pub(crate) out: Output,
    pub(crate) w: &'a mut dyn Write,
    /// Started by rmp-eval's boot unit (one of the trial's health checks).
    pub(crate) from_unit: bool,
}

fn observe(host: &Host, q: &Qualify) -> Result<Observed> {
    use state::{Phase, Stage};
    let boot_id = trial::boot_id(host);
    let began = match &q.phase {
        Phase::Step {
            stage: Stage::Applying { journals: Some(n) } | Stage::Committing { journals: Some(n) },
            ..
        } => Some(*n),
        _ => None,
    };
    let stage_run = match began {
        Some(n) => trial::run_after(host, n)?.map(|(_, complete)| complete),
        None => None,
    };
    Ok(Observed { boot_id, stage_run })
}

impl Drive<'_> {
    pub(crate) fn run(&mut self, q: &mut Qualify) -> Result<Stop> {
        loop {
            let seen = observe(self.host, q)?;
            let mut committed = None;
            let stop = match resume::next(q, &seen) {
                ResumeAction::Start => {
                    q.original_cmdline = self.host.read(crate::machine::PROC_CMDLINE).ok();
                    self.event(q, QualifyEvent::Start)
                }
                ResumeAction::MeasureBaseline => self.baseline(q),
                ResumeAction::Apply(i) => self.apply(q, i),
                ResumeAction::UndoUnfinished(_) => {
                    let (path, _) = runs(self.host)?
                        .pop()
                        .ok_or_else(|| Error::failed("qualify: the journal run to undo is gone"))?;
                    self.undo(&path)
                }
                ResumeAction::FinishApply(i) => self.finish_apply(q, i),
                ResumeAction::Reboot => return Ok(Stop::Reboot(q.reboot_argv())),
                ResumeAction::JudgeTrial(i) if self.trial_skipped(q, i)? => {
                    return Ok(Stop::Reboot(q.reboot_argv()));
                }
                ResumeAction::JudgeTrial(i) => self.judge(q, i),
                ResumeAction::Commit(i) => self.commit(q, i).map(|()| committed = Some(i)),
                ResumeAction::FinishCommit(i) => {
                    self.finish_commit(q, i).map(|()| committed = Some(i))
                }
                ResumeAction::Measure(_) | ResumeAction::MeasureSweep(_) => {
                    match self.line_in_force(q)? {
                        Line::Holds => self.measure_next(q),
                        Line::Recorded => Ok(()),
                        Line::Reboot(stop) => return Ok(stop),
                    }
                }
                ResumeAction::Revert(i) => self.revert(q, i),
                ResumeAction::Report => return Ok(Stop::Done),
                ResumeAction::Nothing => return Ok(Stop::Aborted),
            };
            stop?;
            if let Some(i) = committed
                && let Some(stop) = self.committed_line(q, i)
            {
                return Ok(stop);
            }
        }
    }

    /// After the commit: None when this boot runs the trial's command line, else the reboot onto the committed
    /// line — a power cut between the trial boot's health check and its commit leaves the machine on the old
    /// line, and a measurement there would be credited to a step not in force.
    fn committed_line(&mut self, q: &Qualify, i: usize) -> Option<Stop> {
        let cmdline = q.steps[i].trial_cmdline.clone().unwrap_or_default();
        let (health, running) = trial::judge(self.host, &cmdline, true, q.core);
        if health.ok() {
            return None;
        }
        outln!(
            self.w,
            "qualify: committed, but this boot runs {running}: a reboot onto the committed line first"
        );
        Some(Stop::Reboot(vec!["systemctl".into(), "reboot".into()]))
    }

    /// The step's or the sweep period's measurement, as the phase says.
    fn measure_next(&mut self, q: &mut Qualify) -> Result<()> {
        match q.phase {
            state::Phase::Step { index, .. } => self.measure_step(q, index),
            state::Phase::Sweep { index } => self.sweep(q, index),
            _ => Ok(()),
        }
    }

    /// Before a measurement: whether this boot runs the command line in force (`line.rs`). If not, nothing is
    /// measured: the boot files are flushed and the machine rebooted onto them, once for this phase; a second
    /// mismatch is recorded as the measurement failed (a step is then undone, a sweep period left out) — the
    /// boot loader does not boot what was written, and no boot is credited with a line it does not run.
    fn line_in_force(&mut self, q: &mut Qualify) -> Result<Line> {
        let running = self
            .host
            .read(crate::machine::PROC_CMDLINE)
            .unwrap_or_default();
        let Some(why) = super::line::mismatch(q, &running) else {
            return Ok(Line::Holds);
        };
        let here = q.phase.describe();
        if q.line_reboot.as_deref() == Some(here.as_str()) {
            let why = format!("not measured: {why}, again after a reboot onto it");
            outln!(self.w, "qualify: {why}");
            let ev = match q.phase {
                state::Phase::Sweep { .. } => QualifyEvent::SweepFailed { why },
                _ => QualifyEvent::MeasureFailed { why },
            };
            self.event(q, ev)?;
            return Ok(Line::Recorded);
        }
        q.line_reboot = Some(here);
        state::save(self.host, q)?;
        outln!(
            self.w,
            "qualify: {why}: not measured; a reboot onto it first"
        );
        outln!(
            self.w,
            "qualify: {}",
            crate::fix::boot_flush::flush(self.host)
        );
        Ok(Line::Reboot(Stop::Reboot(vec![
            "systemctl".into(),
            "reboot".into(),
        ])))
    }

    /// Moves the state by `ev` and says where it is now — once: a stage that begins again, or a step's
    /// "applying" that records its journal count, is not news.
    fn event(&mut self, q: &mut Qualify, ev: QualifyEvent) -> Result<()> {
        let was = q.phase.describe();
        state::advance(self.host, q, ev)?;
        let now = q.phase.describe();
        if now != was {
            outln!(self.w, "qualify: {now}");
        }
        Ok(())
    }

    /// One measurement of `period_us` (see `spec`), saved under results/, once the boot has settled.
    fn measure(
        &mut self,
        q: &Qualify,
        period_us: u32,
        label: RunLabel,
        claim: Option<f64>,
    ) -> Result<(RunResult, PathBuf)> {
        let spec = spec(q, period_us, claim);
        crate::job::settle::wait(self.host, self.w, "qualify")?;
        crate::job::measure_saved(self.host, self.out, self.w, &spec, true, label)
    }

    /// The machine as it was found. A baseline that cannot be measured (the SubDevice stopped answering since
    /// the plan's preflight) stops qualify before it changes anything.
    fn baseline(&mut self, q: &mut Qualify) -> Result<()> {
        match self.measure(q, q.sweep_period(0), RunLabel::QualifyBaseline, None) {
            Ok((_, p)) => self.event(q, QualifyEvent::BaselineMeasured(p)),
            Err(e) => {
                let why = format!("the baseline could not be measured: {e}");
                self.event(q, QualifyEvent::Abort { why: why.clone() })?;
                Err(Error::failed(format!(
                    "qualify: {why}; nothing was changed, qualify stopped"
                )))
            }
        }
    }

    /// Sweep period `i`; one that cannot be measured (the SubDevice stopped answering) is recorded so, and the
    /// sweep goes on.
    fn sweep(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let period = q.sweep[i].period_us;
        let label = RunLabel::QualifySweep(period);
        match self.measure(q, period, label, q.confidence_per_hour) {
            Ok((_, p)) => self.event(q, QualifyEvent::SweepMeasured(p)),
            Err(e) => {
                outln!(self.w, "qualify: {period} µs not measured: {e}");
                self.event(q, QualifyEvent::SweepFailed { why: e.to_string() })
            }
        }
    }

    /// The checks that fail on the machine as it is now (they pick the kernel parameters).
    fn failed_now(&self, q: &Qualify) -> Vec<CheckId> {
        let ctx = crate::checks::Ctx {
            core: q.core,
            nic: q.nic.clone(),
            pid: None,
            smi_seconds: None,
        };
        plan::from_findings(&crate::registry::run_all(self.host, &ctx)).1
    }

    /// The plan of one step, with `failed` the checks that pick its parameters.
    fn plan(&self, q: &Qualify, id: StepId, failed: Vec<CheckId>) -> Result<Plan> {
        let req = Request {
            core: q.core,
            nic: q.nic.clone(),
            steps: vec![id],
            failed,
            cmdline_extra: q.cmdline_extra.clone(),
        };
        plan::build(self.host, &req)
    }

    fn apply(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let journals = runs(self.host)?.len();
        self.event(q, QualifyEvent::Applying { journals })?;
        let failed = self.failed_now(q);
        q.steps[i].failed = failed.iter().map(|c| c.as_str().to_string()).collect();
        let plan = self.plan(q, q.steps[i].step, failed)?;
        if plan.is_empty() {
            let why = plan
                .steps
                .iter()
                .find_map(|s| s.refusal().map(|r| format!("refused: {r}")))
                .unwrap_or_else(|| "nothing to change: already as wanted".into());
            return self.event(q, QualifyEvent::NotTried { why });
        }
        if !q.steps[i].reboot {
            let r = crate::fix::apply::apply(self.host, &plan, q.core, q.nic.as_deref())?;
            return self.event(q, QualifyEvent::Applied { journal: r.journal });
        }
        let (step, t) = match trial::step_of(self.host, &plan) {
            Ok(st) => st,
            Err(NoTrial(why)) => return self.event(q, QualifyEvent::NotTried { why }),
        };
        let armed = trial::arm(self.host, &step, q.core)?;
        outln!(self.w, "qualify: trial boot armed: {}", t.how);
        if let Some(f) = &armed.boot_flush {
            outln!(self.w, "qualify: {f}");
        }
        let journal = armed.journal;
        q.steps[i].trial_reboot = t.reboot.clone();
        self.event(
            q,
            QualifyEvent::TrialArmed {
                journal,
                boot_id: trial::boot_id(self.host),
                cmdline: t.cmdline.join(" "),
            },
        )
    }

    /// A stage's run is complete but not recorded: a runtime step is recorded as applied; a trial entry is
    /// undone and armed again (its command line is not recorded anywhere else).
    fn finish_apply(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let (path, _) = runs(self.host)?
            .pop()
            .ok_or_else(|| Error::failed("qualify: the step's journal run is gone"))?;
        if q.steps[i].reboot {
            self.undo(&path)?;
            return self.apply(q, i);
        }
        self.event(q, QualifyEvent::Applied { journal: path })
    }

    /// Whether this boot skipped the armed trial (its entry still armed: power lost before the reboot reached
    /// GRUB) and it is booted once more, counted in the state; a second skip is judged as a failed trial.
    fn trial_skipped(&mut self, q: &mut Qualify, i: usize) -> Result<bool> {
        if !trial::skipped_again(self.host, q.steps[i].trial_retries) {
            return Ok(false);
        }
        q.steps[i].trial_retries += 1;
        state::save(self.host, q)?;
        outln!(
            self.w,
            "qualify: this boot did not come through the armed trial (GRUB's next_entry is still set: power lost \
             before the reboot?): booting it once more"
        );
        outln!(
            self.w,
            "qualify: {}",
            crate::fix::boot_flush::flush(self.host)
        );
        Ok(true)
    }

    fn judge(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let cmdline = q.steps[i].trial_cmdline.clone().unwrap_or_default();
        let (health, running) = trial::judge(self.host, &cmdline, self.from_unit, q.core);
        outln!(self.w, "qualify: this boot's command line: {running}");
        // A failed trial's entry is undone now, a healthy one's once the commit is written.
        if let Some(trial_run) = q.steps[i].journals.first().cloned()
            && !health.ok()
        {
            self.undo(&trial_run)?;
        }
        if health.ok() {
            self.event(q, QualifyEvent::TrialBooted)
        } else {
            let why = health.problems.join("; ");
            outln!(self.w, "qualify: the trial boot failed: {why}");
            self.event(q, QualifyEvent::TrialFailed { why })
        }
    }

    fn commit(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let journals = runs(self.host)?.len();
        self.event(q, QualifyEvent::Committing { journals })?;
        trial::commit(
            self.host,
            q.core,
            q.nic.as_deref(),
            q.steps[i].failed_checks(),
            &q.cmdline_extra,
        )?;
        self.finish_commit(q, i)
    }

    fn finish_commit(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let path =
            trial::finish_commit(self.host, q.steps[i].journals.first().map(String::as_str))?;
        self.event(q, QualifyEvent::Committed { journal: path })
    }

    fn measure_step(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let before = q.previous_result(i).ok_or_else(|| {
            Error::failed("qualify: no earlier measurement to compare the step with")
        })?;
        let period = q.sweep_period(0);
        let label = RunLabel::QualifyStep(q.steps[i].step);
        let after = match self.measure(q, period, label, None) {
            Ok((r, p)) => match wire_failed(&r) {
                Some(why) => Err(why),
                None => Ok(p),
            },
            Err(e) => Err(e.to_string()),
        };
        let after = match after {
            Ok(p) => p,
            Err(why) => {
                // Not the step's effect on the tail: the measurement could not judge it. Undone like a worse
                // step (the step may be what broke the wire), and said so.
                outln!(self.w, "qualify: {}: not measured: {why}", q.steps[i].step);
                return self.event(q, QualifyEvent::MeasureFailed { why });
            }
        };
        let c = crate::report::compare::compare(
            &crate::measure::result::store::load(&before)?,
            &crate::measure::result::store::load(&after)?,
            &before.display().to_string(),
            &after.display().to_string(),
        );
        let effect = effect_of(c.verdict);
        outln!(self.w, "qualify: {}: {}", q.steps[i].step, c.summary);
        self.event(
            q,
            QualifyEvent::Measured {
                result: after,
                effect,
            },
        )
    }

    fn revert(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        for j in q.steps[i].journals.clone().iter().rev() {
            self.undo(j)?;
        }
        self.event(q, QualifyEvent::Reverted)
    }

    /// Undoes one journal run (gone already: nothing to do) and removes it (fix's trial machinery: forced).
    pub(crate) fn undo(&mut self, path: &str) -> Result<()> {
        trial::undo_run(self.host, path).map_err(|e| Error::failed(format!("qualify: {e}")))
    }
}

/// What qualify measures at `period_us` under the plan's loads: the cyclic loop on the RT core, or with --nic
/// what `run --nic IF` measures (round trips to the SubDevice, with the sender's and receiver's cycles); `seconds`
/// long, or (a sweep period under --confidence, `claim` per hour) until the claim is proved or broken.
pub(crate) fn spec(q: &Qualify, period_us: u32, claim: Option<f64>) -> RunSpec {
    RunSpec {
        core: Some(q.core),
        workload: q
            .nic
            .clone()
            .map_or(Workload::Cyclic, |n| Workload::Nic(NicSpec::new(n))),
        period_us,
        duration: claim.is_none().then_some(q.seconds),
        load: q.load.clone(),
        until_confident: claim.map(|per_h| per_h / 3600.0),
        ..RunSpec::default()
    }
}

/// Why a NIC run cannot stand for a step's effect: its replies stopped (a dropout) or its interface went away.
fn wire_failed(r: &RunResult) -> Option<String> {
    r.rtt
        .as_ref()
        .and_then(|t| t.checks.dropout.clone())
        .or_else(|| r.error.clone())
}

/// compare's verdict as a step's effect: better or worse by its noise rule, anything else no clear change.
fn effect_of(t: crate::report::compare::Trend) -> Effect {
    use crate::report::compare::Trend;
    match t {
        Trend::Better => Effect::Better,
        Trend::Worse => Effect::Worse,
        Trend::Mixed | Trend::Unchanged => Effect::NoClearChange,
    }
}
