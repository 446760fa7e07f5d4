//! The command line a measurement must be made on. GRUB reads /boot without replaying the file system's
//! journal: after a power cut, a boot may come up on the grub.cfg from before the commit (or before a revert),
//! and a measurement there would be credited to a step not in force. Before each measurement the running line
//! is held against what the state says is in force: the parameters of each command-line step kept (or being
//! measured) on it, those of a step undone (reverted, its trial failed) off it.

use super::state::{Phase, Qualify, Stage, StepOutcome};
use crate::parse::cmdline::tokens;
use crate::tunable::cmdline::boot::trial::PANIC_REBOOT;

/// Why `running` (/proc/cmdline) is not the line this measurement must be made on; None when it is, or when
/// the state cannot say (a state from before the original line was recorded).
pub(crate) fn mismatch(q: &Qualify, running: &str) -> Option<String> {
    let original = tokens(q.original_cmdline.as_deref()?);
    let now = tokens(running);
    let measuring = match q.phase {
        Phase::Step {
            index,
            stage: Stage::Measuring,
        } => Some(index),
        _ => None,
    };
    let mut problems = vec![];
    for (i, s) in q.steps.iter().enumerate().filter(|(_, s)| s.reboot) {
        let Some(trial) = s.trial_cmdline.as_deref() else {
            continue;
        };
        // What the step added: the trial line less the original and the trial's own reboot on panic.
        let added = tokens(trial)
            .into_iter()
            .filter(|t| !original.contains(t) && t != PANIC_REBOOT);
        let in_force = Some(i) == measuring || matches!(s.outcome, Some(StepOutcome::Kept { .. }));
        let undone = matches!(
            s.outcome,
            Some(
                StepOutcome::Reverted
                    | StepOutcome::TrialFailed { .. }
                    | StepOutcome::MeasureFailed { .. }
            )
        );
        for p in added {
            match (in_force, undone, now.contains(&p)) {
                (true, _, false) => problems.push(format!("{p} ({}) is not on it", s.step)),
                (false, true, true) => problems.push(format!("{p} ({}, undone) is on it", s.step)),
                _ => {}
            }
        }
    }
    (!problems.is_empty()).then(|| {
        format!(
            "this boot runs `{}`, not the command line in force: {}",
            running.trim(),
            problems.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qualify::state::{Effect, QualifyEvent};
    use crate::remedy::StepId;

    /// /proc/cmdline of the captured untuned Debian 12 RT guest (tests/fixtures/samples).
    const ORIGINAL: &str =
        "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 root=UUID=1 ro console=ttyS0,115200\n";
    const TRIAL: &str = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 root=UUID=1 ro console=ttyS0,115200 \
                         isolcpus=managed_irq,domain,1 nohz_full=1 panic=10";
    const COMMITTED: &str = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 root=UUID=1 ro console=ttyS0,115200 \
                             isolcpus=managed_irq,domain,1 nohz_full=1\n";

    /// One at a time: the command-line step committed and being measured.
    fn measuring() -> Qualify {
        let mut q = Qualify::new(
            1,
            None,
            &[(StepId::Cmdline, true), (StepId::Sysctl, false)],
            &[],
            true,
            10.0,
        );
        q.original_cmdline = Some(ORIGINAL.into());
        q.steps[0].trial_cmdline = Some(TRIAL.into());
        q.phase = Phase::Step {
            index: 0,
            stage: Stage::Measuring,
        };
        q
    }

    #[test]
    fn a_committed_step_is_measured_only_on_its_line() {
        let q = measuring();
        assert_eq!(mismatch(&q, COMMITTED), None);
        let why = mismatch(&q, ORIGINAL).unwrap();
        assert!(
            why.contains("isolcpus=managed_irq,domain,1 (cmdline) is not on it"),
            "{why}"
        );
        assert!(!why.contains("panic=10"), "{why}");
    }

    #[test]
    fn after_a_revert_the_steps_parameters_must_be_gone() {
        let mut q = measuring();
        let result = "/r.json".into();
        q.apply(QualifyEvent::Measured {
            result,
            effect: Effect::Worse,
        })
        .unwrap();
        q.apply(QualifyEvent::Reverted).unwrap();
        q.phase = Phase::Step {
            index: 1,
            stage: Stage::Measuring,
        };
        assert_eq!(mismatch(&q, ORIGINAL), None);
        let why = mismatch(&q, COMMITTED).unwrap();
        assert!(
            why.contains("nohz_full=1 (cmdline, undone) is on it"),
            "{why}"
        );
    }

    #[test]
    fn a_state_without_the_original_line_is_not_judged() {
        let mut q = measuring();
        q.original_cmdline = None;
        assert_eq!(mismatch(&q, ORIGINAL), None);
    }
}
