//! The qualify state: the plan it runs, where it is, and what it has learned. Phases, in order:
//!   planned → baseline → step k (applying → [trial armed → trial booted → committing] → measuring) … →
//!   sweep k (each period measured) … → done; aborted from any phase before done.
//! A step that needs no reboot goes applying → measuring (→ the next step when not one at a time). A kernel
//! command-line step is first booted once (trial armed: the one-time boot entry written, the reboot pending);
//! only a trial boot that came up healthy is committed (the permanent boot configuration written). `apply`
//! moves the state by one event and refuses an event the phase does not expect, so the file on disk is always
//! one of the states this machine can reach.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::STATE;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::remedy::StepId;

/// The state format this version writes and reads.
pub(crate) const VERSION: u32 = 1;

/// Where qualify is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub(crate) enum Phase {
    /// The plan is accepted; nothing is measured or changed yet.
    Planned,
    /// Measuring the machine as it was found.
    Baseline,
    /// Working on the plan's step `index`.
    Step {
        index: usize,
        stage: Stage,
    },
    /// Measuring the sweep's period `index`.
    Sweep {
        index: usize,
    },
    Done,
    Aborted {
        why: String,
    },
}

/// Where a step is. `journals`: how many fix journal runs there were when this stage began (None: not begun), so
/// that the run this stage writes is known after a crash (complete: go on; incomplete: undo it, do it again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub(crate) enum Stage {
    /// The step's changes are being applied (a command-line step: its one-time trial entry).
    Applying { journals: Option<usize> },
    /// The trial entry is written and the machine is to boot it once; `boot_id` is the boot that armed it.
    TrialArmed { boot_id: String },
    /// The trial boot came up and passed its health check.
    TrialBooted,
    /// The command line is being made permanent.
    Committing { journals: Option<usize> },
    /// The step is in place; the machine is being measured with it.
    Measuring,
}

/// What a measurement said of a step, by compare's noise rule against the state before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Effect {
    Better,
    Worse,
    /// Neither significantly better nor worse (compare's "unchanged" or "mixed"): kept, see `StepOutcome::Kept`.
    NoClearChange,
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum StepOutcome {
    /// Kept: better, or no clear change (a recommended setting the measurement could not tell from noise is
    /// kept: it removes a known source of latency that this run may not have provoked), or not measured alone.
    Kept { effect: Option<Effect> },
    /// Made the tail significantly worse: undone.
    Reverted,
    /// Its trial boot did not come up healthy: the machine is on the previous command line, the step left out.
    TrialFailed { why: String },
    /// Not applied: nothing to change on the machine as it was by then, or no trial boot possible here.
    NotTried { why: String },
    /// Its measurement could not be made (the SubDevice stopped answering): undone, like a worse step, since
    /// nothing showed it did no harm.
    MeasureFailed { why: String },
}

/// One step of the plan and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StepRecord {
    pub(crate) step: StepId,
    /// Whether it changes the kernel command line (a trial boot, then the commit).
    pub(crate) reboot: bool,
    /// The fix journal runs it wrote, in order (the trial entry, the commit).
    #[serde(default)]
    pub(crate) journals: Vec<String>,
    /// The command line the trial boot was to have.
    #[serde(default)]
    pub(crate) trial_cmdline: Option<String>,
    /// The checks that failed when the trial was armed (they pick the parameters): the commit plans with
    /// them, since the trial boot passes those checks itself.
    #[serde(default)]
    pub(crate) failed: Vec<String>,
    /// The program that reboots into the trial (`systemctl reboot`, a Pi's `reboot '0 tryboot'`).
    #[serde(default)]
    pub(crate) trial_reboot: Vec<String>,
    /// Reboots into an armed trial that the boot after it skipped (GRUB's next_entry still set): one at most.
    #[serde(default)]
    pub(crate) trial_retries: u32,
    /// The measurement with the step in place (one at a time).
    #[serde(default)]
    pub(crate) result: Option<PathBuf>,
    #[serde(default)]
    pub(crate) outcome: Option<StepOutcome>,
}

/// One period of the cycle-time sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SweepRecord {
    pub(crate) period_us: u32,
    #[serde(default)]
    pub(crate) result: Option<PathBuf>,
    /// Why it could not be measured (the SubDevice stopped answering).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Qualify {
    pub(crate) version: u32,
    /// UTC, when the plan was accepted.
    pub(crate) started: String,
    pub(crate) core: usize,
    pub(crate) nic: Option<String>,
    pub(crate) one_at_a_time: bool,
    /// Seconds of each measurement.
    pub(crate) seconds: f64,
    pub(crate) steps: Vec<StepRecord>,
    pub(crate) sweep: Vec<SweepRecord>,
    #[serde(default)]
    pub(crate) baseline: Option<PathBuf>,
    /// `--confidence`: each sweep period runs until it proves fewer than this many cycles outside the Great band
    /// per hour (95 %), or until the first one; None: `seconds` each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) confidence_per_hour: Option<f64>,
    /// `--load`: every measurement runs under these stress-ng loads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) load: Vec<crate::measure::load::LoadKind>,
    /// `--budget`, seconds: the plan's measurements were checked to fit in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) budget_s: Option<f64>,
    /// `--cmdline-extra`: the user's own kernel parameters, tried and committed with the command-line step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) cmdline_extra: Vec<String>,
    /// /proc/cmdline when qualify started: a measurement's line is judged against it (`line.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) original_cmdline: Option<String>,
    /// The phase (described) for which qualify rebooted because the running command line was not the one in
    /// force: a second mismatch there is not rebooted again but recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) line_reboot: Option<String>,
    pub(crate) phase: Phase,
}

/// What happened, as the command tells the state.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum QualifyEvent {
    Start,
    BaselineMeasured(PathBuf),
    /// The current step's changes are about to be applied; `journals`: fix journal runs there are now.
    Applying {
        journals: usize,
    },
    /// The step's journal run is complete (its changes applied) and it needs no reboot.
    Applied {
        journal: String,
    },
    /// The trial entry is written (journal run `journal`); the machine boots it next (`boot_id`: this boot).
    TrialArmed {
        journal: String,
        boot_id: String,
        cmdline: String,
    },
    /// The trial boot came up and passed its health check.
    TrialBooted,
    /// The trial boot did not come up healthy (the trial entry is undone by the caller).
    TrialFailed {
        why: String,
    },
    /// The step is left out before anything was applied (nothing to change, or no trial boot here).
    NotTried {
        why: String,
    },
    Committing {
        journals: usize,
    },
    Committed {
        journal: String,
    },
    /// The step was measured; `effect` by compare's noise rule.
    Measured {
        result: PathBuf,
        effect: Effect,
    },
    /// The step's measurement could not be made; the step is undone next.
    MeasureFailed {
        why: String,
    },
    /// A step that made the tail worse, or could not be measured, was undone.
    Reverted,
    SweepMeasured(PathBuf),
    SweepFailed {
        why: String,
    },
    Abort {
        why: String,
    },
}

/// An event the phase does not expect: a bug or a hand-edited file, never acted on.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("qualify: {event} is not expected while {phase}")]
pub(crate) struct Unexpected {
    event: String,
    phase: String,
}

impl Qualify {
    /// A new plan: `steps` in the order they are applied, then `periods` (µs) measured in that order.
    pub(crate) fn new(
        core: usize,
        nic: Option<String>,
        steps: &[(StepId, bool)],
        periods: &[u32],
        one_at_a_time: bool,
        seconds: f64,
    ) -> Qualify {
        Qualify {
            version: VERSION,
            started: crate::wallclock::rfc3339_now(),
            core,
            nic,
            one_at_a_time,
            seconds,
            steps: steps
                .iter()
                .map(|&(step, reboot)| StepRecord {
                    step,
                    reboot,
                    journals: vec![],
                    trial_cmdline: None,
                    trial_reboot: vec![],
                    failed: vec![],
                    trial_retries: 0,
                    result: None,
                    outcome: None,
                })
                .collect(),
            sweep: periods
                .iter()
                .map(|&period_us| SweepRecord {
                    period_us,
                    result: None,
                    failed: None,
                })
                .collect(),
            baseline: None,
            confidence_per_hour: None,
            load: vec![],
            budget_s: None,
            cmdline_extra: vec![],
            original_cmdline: None,
            line_reboot: None,
            phase: Phase::Planned,
        }
    }

    /// The state after `ev`, or why `ev` cannot happen now (the state is then unchanged).
    pub(crate) fn apply(&mut self, ev: QualifyEvent) -> std::result::Result<(), Unexpected> {
        let next = self.next_phase(&ev).ok_or_else(|| Unexpected {
            event: format!("{ev:?}"),
            phase: self.phase.describe(),
        })?;
        self.record(ev);
        self.phase = next;
        Ok(())
    }

    /// The phase `ev` leads to from this one, None when it does not follow.
    fn next_phase(&self, ev: &QualifyEvent) -> Option<Phase> {
        use Phase as P;
        use QualifyEvent as E;
        Some(match (&self.phase, ev) {
            (P::Done | P::Aborted { .. }, _) => return None,
            (_, E::Abort { why }) => P::Aborted { why: why.clone() },
            (P::Planned, E::Start) => P::Baseline,
            (P::Baseline, E::BaselineMeasured(_)) => self.after_step(None),
            (P::Step { index, stage }, ev) => self.step_next(*index, stage, ev)?,
            (P::Sweep { index }, E::SweepMeasured(_) | E::SweepFailed { .. })
                if index + 1 < self.sweep.len() =>
            {
                P::Sweep { index: index + 1 }
            }
            (P::Sweep { .. }, E::SweepMeasured(_) | E::SweepFailed { .. }) => P::Done,
            _ => return None,
        })
    }

    fn step_next(&self, index: usize, stage: &Stage, ev: &QualifyEvent) -> Option<Phase> {
        use QualifyEvent as E;
        use Stage as S;
        let reboot = self.steps[index].reboot;
        let at = |stage| Phase::Step { index, stage };
        let measured = || {
            if self.one_at_a_time {
                at(S::Measuring)
            } else {
                self.after_step(Some(index))
            }
        };
        Some(match (stage, ev) {
            // Begun again after a cut-short run was undone: the count is taken again.
            (S::Applying { .. }, E::Applying { journals }) => at(S::Applying {
                journals: Some(*journals),
            }),
            (S::Applying { journals: Some(_) }, E::Applied { .. }) if !reboot => measured(),
            (S::Applying { journals: Some(_) }, E::NotTried { .. }) => self.after_step(Some(index)),
            (S::Applying { journals: Some(_) }, E::TrialArmed { boot_id, .. }) if reboot => {
                at(S::TrialArmed {
                    boot_id: boot_id.clone(),
                })
            }
            (S::TrialArmed { .. }, E::TrialBooted) => at(S::TrialBooted),
            (S::TrialArmed { .. }, E::TrialFailed { .. }) => self.after_step(Some(index)),
            (S::TrialBooted | S::Committing { .. }, E::Committing { journals }) => {
                at(S::Committing {
                    journals: Some(*journals),
                })
            }
            (S::Committing { journals: Some(_) }, E::Committed { .. }) => measured(),
            (S::Measuring, E::Measured { .. } | E::MeasureFailed { .. }) if self.to_undo(index) => {
                return None;
            }
            (S::Measuring, E::MeasureFailed { .. }) => at(S::Measuring),
            (S::Measuring, E::Measured { effect, .. }) if *effect == Effect::Worse => {
                at(S::Measuring)
            }
            (S::Measuring, E::Measured { .. }) => self.after_step(Some(index)),
            (S::Measuring, E::Reverted) if self.to_undo(index) => self.after_step(Some(index)),
            _ => return None,
        })
    }

    /// Whether step `index` was measured worse, or could not be measured, and still waits to be undone.
    pub(crate) fn to_undo(&self, index: usize) -> bool {
        matches!(
            self.steps[index].outcome,
            Some(
                StepOutcome::Kept {
                    effect: Some(Effect::Worse)
                } | StepOutcome::MeasureFailed { .. }
            )
        )
    }

    /// The phase after step `done` (None: after the baseline): the next step, else the sweep, else done.
    fn after_step(&self, done: Option<usize>) -> Phase {
        let next = done.map_or(0, |i| i + 1);
        if next < self.steps.len() {
            Phase::Step {
                index: next,
                stage: Stage::Applying { journals: None },
            }
        } else if !self.sweep.is_empty() {
            Phase::Sweep { index: 0 }
        } else {
            Phase::Done
        }
    }

    /// Keeps what `ev` teaches in the records (called with the phase still the one `ev` happened in).
    fn record(&mut self, ev: QualifyEvent) {
        let index = match self.phase {
            Phase::Step { index, .. } | Phase::Sweep { index } => index,
            _ => 0,
        };
        match ev {
            QualifyEvent::BaselineMeasured(p) => self.baseline = Some(p),
            QualifyEvent::Applied { journal } => {
                self.steps[index].journals.push(journal);
                if !self.one_at_a_time {
                    self.steps[index].outcome = Some(StepOutcome::Kept { effect: None });
                }
            }
            // The trial entry's run was undone when the permanent configuration was written.
            QualifyEvent::Committed { journal } => {
                self.steps[index].journals = vec![journal];
                if !self.one_at_a_time {
                    self.steps[index].outcome = Some(StepOutcome::Kept { effect: None });
                }
            }
            QualifyEvent::TrialArmed {
                journal, cmdline, ..
            } => {
                self.steps[index].journals.push(journal);
                self.steps[index].trial_cmdline = Some(cmdline);
            }
            QualifyEvent::TrialFailed { why } => {
                self.steps[index].outcome = Some(StepOutcome::TrialFailed { why })
            }
            QualifyEvent::NotTried { why } => {
                self.steps[index].outcome = Some(StepOutcome::NotTried { why })
            }
            QualifyEvent::Measured { result, effect } => {
                self.steps[index].result = Some(result);
                self.steps[index].outcome = Some(StepOutcome::Kept {
                    effect: Some(effect),
                });
            }
            QualifyEvent::MeasureFailed { why } => {
                self.steps[index].outcome = Some(StepOutcome::MeasureFailed { why })
            }
            // A step that could not be measured keeps that as its outcome.
            QualifyEvent::Reverted
                if !matches!(
                    self.steps[index].outcome,
                    Some(StepOutcome::MeasureFailed { .. })
                ) =>
            {
                self.steps[index].outcome = Some(StepOutcome::Reverted)
            }
            QualifyEvent::SweepMeasured(p) => self.sweep[index].result = Some(p),
            QualifyEvent::SweepFailed { why } => self.sweep[index].failed = Some(why),
            _ => {}
        }
    }

    /// The target period (the sweep's first), or sweep period `i`; 1000 µs for a plan without a sweep.
    pub(crate) fn sweep_period(&self, i: usize) -> u32 {
        self.sweep.get(i).map_or(1000, |s| s.period_us)
    }

    /// The program that reboots into the armed trial (the step being worked on).
    pub(crate) fn reboot_argv(&self) -> Vec<String> {
        match self.phase {
            Phase::Step { index, .. } if !self.steps[index].trial_reboot.is_empty() => {
                self.steps[index].trial_reboot.clone()
            }
            _ => vec!["systemctl".into(), "reboot".into()],
        }
    }

    /// The longest sweep period `i` may run, seconds: until its claim is proved (none outside Great), or `seconds`.
    pub(crate) fn sweep_seconds(&self, i: usize) -> f64 {
        let period = self.sweep[i].period_us;
        match self.confidence_per_hour {
            Some(per_h) => {
                let cycles =
                    crate::measure::result::confidence::cycles_to_prove(per_h / 3600.0, period);
                cycles as f64 * f64::from(period) / 1e6
            }
            None => self.seconds,
        }
    }

    /// The longest the plan's measurements may take, seconds: the baseline, each step measured alone (one at a
    /// time), each period of the sweep.
    pub(crate) fn planned_seconds(&self) -> f64 {
        let steps = if self.one_at_a_time {
            self.steps.len()
        } else {
            0
        };
        let sweep: f64 = (0..self.sweep.len()).map(|i| self.sweep_seconds(i)).sum();
        (1 + steps) as f64 * self.seconds + sweep
    }

    /// The measurement step `i` is compared with: the last kept step's, else the baseline.
    pub(crate) fn previous_result(&self, i: usize) -> Option<PathBuf> {
        self.steps[..i]
            .iter()
            .rev()
            .filter(|s| matches!(s.outcome, Some(StepOutcome::Kept { .. })))
            .find_map(|s| s.result.clone())
            .or_else(|| self.baseline.clone())
    }

    /// The fix journal runs qualify wrote that are still in force (what `--abort` undoes, newest last): a
    /// reverted step's and a failed trial's were undone when that was recorded.
    pub(crate) fn journals(&self) -> impl Iterator<Item = &str> {
        self.steps
            .iter()
            .filter(|s| {
                !matches!(
                    s.outcome,
                    Some(
                        StepOutcome::Reverted
                            | StepOutcome::TrialFailed { .. }
                            | StepOutcome::NotTried { .. }
                    )
                )
            })
            .flat_map(|s| s.journals.iter().map(String::as_str))
    }
}

impl StepRecord {
    /// The checks recorded as failed when the trial was armed.
    pub(crate) fn failed_checks(&self) -> Vec<crate::checks::CheckId> {
        self.failed
            .iter()
            .filter_map(|c| crate::checks::CheckId::parse(c))
            .collect()
    }
}

impl Phase {
    /// The phase in words, for `--status` and errors.
    pub(crate) fn describe(&self) -> String {
        match self {
            Phase::Planned => "planned, not started".into(),
            Phase::Baseline => "measuring the baseline".into(),
            Phase::Step { index, stage } => format!("step {}: {}", index + 1, stage.describe()),
            Phase::Sweep { index } => format!("cycle-time sweep, period {}", index + 1),
            Phase::Done => "done".into(),
            Phase::Aborted { why } => format!("aborted ({why})"),
        }
    }
}

impl Stage {
    fn describe(&self) -> &'static str {
        match self {
            Stage::Applying { .. } => "applying",
            Stage::TrialArmed { .. } => "trial boot pending",
            Stage::TrialBooted => "trial boot came up healthy, not yet committed",
            Stage::Committing { .. } => "making the command line permanent",
            Stage::Measuring => "measuring",
        }
    }
}

/// The state, None when qualify is not under way (no file).
pub(crate) fn load(host: &Host) -> Result<Option<Qualify>> {
    let text = match host.read(STATE) {
        Ok(t) => t,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let q: Qualify = serde_json::from_str(&text).map_err(|e| {
        Error::failed(format!(
            "{STATE}: not a qualify state rmp-eval can read ({e}); left in place"
        ))
    })?;
    if q.version != VERSION {
        return Err(Error::failed(format!(
            "{STATE}: version {}, this rmp-eval reads version {VERSION}; left in place",
            q.version
        )));
    }
    Ok(Some(q))
}

/// Writes the whole state: atomic and fsynced (file and directory), so a crash leaves the old or the new one.
/// The temporary file a write cut short left beside it goes first.
pub(crate) fn save(host: &Host, q: &Qualify) -> Result<()> {
    let text = serde_json::to_string_pretty(q).map_err(|e| Error::failed(e.to_string()))?;
    host.remove_stale_temps(STATE);
    host.write_atomic_steps(STATE, format!("{text}\n").as_bytes(), None, &mut |step| {
        test_seam_pause_in_write(step, &q.phase)
    })?;
    Ok(())
}

/// A test seam, compiled only with the `test-seams` feature (see fix/apply.rs's): with
/// RMP_EVAL_TEST_PAUSE_STATE=STEP:PATH (STEP one of written, synced, renamed, dir_synced), each state write, once
/// at STEP, writes the phase it is writing (JSON) to PATH and waits until PATH is removed (at most 10 min), so
/// that a test can kill the process or cut the power there (tests/qualify/torn_write.rs, the VM scenario
/// 15-qualify-power-loss). Armed by the environment only: nothing in a machine's files or a snapshot reaches it.
#[cfg(feature = "test-seams")]
fn test_seam_pause_in_write(step: crate::host::WriteStep, phase: &Phase) {
    let Ok(spec) = std::env::var("RMP_EVAL_TEST_PAUSE_STATE") else {
        return;
    };
    let Some((want, flag)) = spec.split_once(':') else {
        return;
    };
    use crate::host::WriteStep as W;
    let at = match want {
        "written" => W::Written,
        "synced" => W::Synced,
        "renamed" => W::Renamed,
        "dir_synced" => W::DirSynced,
        _ => return,
    };
    if at != step {
        return;
    }
    let _ = std::fs::write(flag, serde_json::to_string(phase).unwrap_or_default());
    for _ in 0..6000 {
        if !std::path::Path::new(flag).exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[cfg(not(feature = "test-seams"))]
fn test_seam_pause_in_write(_step: crate::host::WriteStep, _phase: &Phase) {}

/// Forgets qualify (rollback: what it applied is undone, nothing is to be resumed). True when it was there.
pub(crate) fn remove(host: &Host) -> Result<bool> {
    if !host.exists(STATE) {
        return Ok(false);
    }
    host.remove_file(STATE)?;
    Ok(true)
}

/// Moves the state by `ev` and saves it; on an unexpected event nothing is written.
pub(crate) fn advance(host: &Host, q: &mut Qualify, ev: QualifyEvent) -> Result<()> {
    q.apply(ev).map_err(|e| Error::failed(e.to_string()))?;
    save(host, q)
}

#[cfg(test)]
mod tests;
