//! The driver: does what `resume::next` says, records the event it leads to (state saved, fsynced), and asks
//! again — until qualify needs a reboot (the trial boot), is done or aborted. The same loop runs when the plan
//! is accepted, when the boot unit resumes it, and after a crash: every action is safe to do again from the
//! state it starts in (a cut-short journal run is undone first, a measurement is made again).

use std::io::Write;
use std::path::PathBuf;

use super::resume::{self, Action, Observed};
use super::state::{self, Effect, Event, Qualify};
use crate::checks::CheckId;
use crate::error::{Error, Result};
use crate::fix::plan::{self, Request};
use crate::fix::trial::{self, runs};
use crate::fix::{Plan, StepId};
use crate::host::Host;
use crate::measure::spec::RunSpec;
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
            let stop = match resume::next(q, &seen) {
                Action::Start => self.event(q, Event::Start),
                Action::MeasureBaseline => {
                    let (p, _) = self.measure(q, q.sweep_period(0), "qualify-baseline", None)?;
                    self.event(q, Event::BaselineMeasured(p))
                }
                Action::Apply(i) => self.apply(q, i),
                Action::UndoUnfinished(_) => {
                    let (path, _) = runs(self.host)?
                        .pop()
                        .ok_or_else(|| Error::failed("qualify: the journal run to undo is gone"))?;
                    self.undo(&path)
                }
                Action::FinishApply(i) => self.finish_apply(q, i),
                Action::Reboot => return Ok(Stop::Reboot(q.reboot_argv())),
                Action::JudgeTrial(i) => self.judge(q, i),
                Action::Commit(i) => self.commit(q, i),
                Action::FinishCommit(i) => self.finish_commit(q, i),
                Action::Measure(i) => self.measure_step(q, i),
                Action::Revert(i) => self.revert(q, i),
                Action::MeasureSweep(i) => {
                    let period = q.sweep[i].period_us;
                    let (p, _) = self.measure(
                        q,
                        period,
                        &format!("qualify-{period}us"),
                        q.confidence_per_hour,
                    )?;
                    self.event(q, Event::SweepMeasured(p))
                }
                Action::Report => return Ok(Stop::Done),
                Action::Nothing => return Ok(Stop::Aborted),
            };
            stop?;
        }
    }

    /// Moves the state by `ev` and says where it is now — once: a stage that begins again, or a step's
    /// "applying" that records its journal count, is not news.
    fn event(&mut self, q: &mut Qualify, ev: Event) -> Result<()> {
        let was = q.phase.describe();
        state::advance(self.host, q, ev)?;
        let now = q.phase.describe();
        if now != was {
            outln!(self.w, "qualify: {now}");
        }
        Ok(())
    }

    /// One measurement of `period_us` under the plan's loads: `seconds` long, or (a sweep period under
    /// --confidence, `claim` per hour) until the claim is proved or broken.
    fn measure(
        &mut self,
        q: &Qualify,
        period_us: u32,
        label: &str,
        claim: Option<f64>,
    ) -> Result<(PathBuf, f64)> {
        let spec = RunSpec {
            core: Some(q.core),
            period_us,
            duration: claim.is_none().then_some(q.seconds),
            load: q.load.clone(),
            until_confident: claim.map(|per_h| per_h / 3600.0),
            ..RunSpec::default()
        };
        let (_, path) = crate::job::measure_saved(self.host, self.out, self.w, &spec, true, label)?;
        Ok((path, q.seconds))
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
        self.event(q, Event::Applying { journals })?;
        let failed = self.failed_now(q);
        q.steps[i].failed = failed.iter().map(|c| c.as_str().to_string()).collect();
        let plan = self.plan(q, q.steps[i].step, failed)?;
        if plan.is_empty() {
            let why = plan
                .steps
                .iter()
                .find_map(|s| s.refusal().map(|r| format!("refused: {r}")))
                .unwrap_or_else(|| "nothing to change: already as wanted".into());
            return self.event(q, Event::NotTried { why });
        }
        if !q.steps[i].reboot {
            let r = crate::fix::apply::apply(self.host, &plan, q.core, q.nic.as_deref())?;
            return self.event(q, Event::Applied { journal: r.journal });
        }
        let (step, t) = match trial::step_of(self.host, &plan) {
            Ok(st) => st,
            Err(NoTrial(why)) => return self.event(q, Event::NotTried { why }),
        };
        let journal = trial::arm(self.host, &step, q.core)?.journal;
        outln!(self.w, "qualify: trial boot armed: {}", t.how);
        q.steps[i].trial_reboot = t.reboot.clone();
        self.event(
            q,
            Event::TrialArmed {
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
        self.event(q, Event::Applied { journal: path })
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
            self.event(q, Event::TrialBooted)
        } else {
            let why = health.problems.join("; ");
            outln!(self.w, "qualify: the trial boot failed: {why}");
            self.event(q, Event::TrialFailed { why })
        }
    }

    fn commit(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let journals = runs(self.host)?.len();
        self.event(q, Event::Committing { journals })?;
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
        self.event(q, Event::Committed { journal: path })
    }

    fn measure_step(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        let before = q.previous_result(i).ok_or_else(|| {
            Error::failed("qualify: no earlier measurement to compare the step with")
        })?;
        let period = q.sweep_period(0);
        let label = format!("qualify-step-{}", q.steps[i].step);
        let (after, _) = self.measure(q, period, &label, None)?;
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
            Event::Measured {
                result: after,
                effect,
            },
        )
    }

    fn revert(&mut self, q: &mut Qualify, i: usize) -> Result<()> {
        for j in q.steps[i].journals.clone().iter().rev() {
            self.undo(j)?;
        }
        self.event(q, Event::Reverted)
    }

    /// Undoes one journal run (gone already: nothing to do) and removes it (fix's trial machinery: forced).
    pub(crate) fn undo(&mut self, path: &str) -> Result<()> {
        trial::undo_run(self.host, path).map_err(|e| Error::failed(format!("qualify: {e}")))
    }
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
