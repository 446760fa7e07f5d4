//! What each step costs or can break, said in the plan before anyone says yes. Worked out
//! from the step's own changes and the machine's CPUs, so a risk is stated only where this plan takes it.

use super::Step;
use super::runtime::Target;
use crate::parse::cpulist;

/// Adds the risks of `s` (a planned step) as notes. A step left to do by hand takes the same risks.
pub(crate) fn add(s: &mut Step, t: &Target) {
    if s.changes.is_empty() && s.by_hand().is_none() {
        return;
    }
    for r in of(s, t) {
        s.notes.push(super::Note::Risk(r.to_string()));
    }
}

/// "CPU 1 of 2 … one CPU (0) is left for everything else".
pub(crate) fn housekeeping(t: &Target) -> Option<String> {
    let left = t.housekeeping();
    let taken = super::cpus_named(&t.isolated);
    let n = t.online.len();
    match left.len() {
        0 => Some(format!(
            "{taken} is every online CPU: nothing is left for the rest of the system"
        )),
        1 => Some(format!(
            "isolating {taken} of {n} leaves one housekeeping CPU ({}) for everything else: every other task, \
             interrupt and kernel thread shares it, so the desktop and services get slower",
            left[0]
        )),
        l if l * 2 <= n => Some(format!(
            "isolating {taken} leaves {l} of {n} CPUs ({}) for everything else",
            cpulist::format(&left)
        )),
        _ => None,
    }
}

/// "`what` is handled on CPU N alone …" when the plan leaves one housekeeping CPU.
pub(crate) fn alone(t: &Target, what: &str) -> Option<String> {
    match t.housekeeping().as_slice() {
        [one] => Some(format!(
            "{what} is handled on CPU {one} alone, the one CPU left for everything else"
        )),
        _ => None,
    }
}

/// The risks the step's tunable states (Persist, fix's own, takes none).
fn of(s: &Step, t: &Target) -> Vec<String> {
    crate::registry::tunable(s.id).map_or_else(Vec::new, |tunable| (tunable.risks)(s, t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fix::Change;
    use crate::fix::StepId;
    use crate::fix::kind::value::ValueChange;

    fn target(online: &[usize], isolated: &[usize]) -> Target {
        Target {
            core: 1,
            nic: None,
            online: online.to_vec(),
            isolated: isolated.to_vec(),
            cmdline_extra: vec![],
        }
    }

    fn with(id: StepId, path: &str) -> Step {
        let mut s = crate::fix::runtime::step(id, "t", "w");
        s.changes.push(Change::Value(ValueChange {
            path: path.into(),
            before: "1".into(),
            after: "0".into(),
            kind: crate::fix::ValueKind::Exact,
            refusable: false,
            label: None,
            owner: None,
        }));
        s
    }

    #[test]
    fn isolating_one_of_two_cpus_says_one_is_left() {
        let s = with(StepId::Cmdline, "/etc/x");
        let r = of(&s, &target(&[0, 1], &[1])).join("\n");
        assert!(
            r.contains("isolating CPU 1 of 2 leaves one housekeeping CPU (0)"),
            "{r}"
        );
        // Eight CPUs, one isolated: no housekeeping warning, only the boot one.
        let r = of(&s, &target(&[0, 1, 2, 3, 4, 5, 6, 7], &[1]));
        assert_eq!(r.len(), 1, "{r:?}");
    }

    #[test]
    fn an_isolated_smt_sibling_is_named() {
        let s = with(StepId::Cmdline, "/etc/x");
        let r = of(&s, &target(&[0, 1, 2, 3], &[1, 3])).join("\n");
        assert!(r.contains("CPU 3, the SMT sibling of CPU 1"), "{r}");
        assert!(r.contains("leaves 2 of 4 CPUs (0,2)"), "{r}");
    }

    #[test]
    fn rt_throttling_is_a_risk_only_when_the_step_turns_it_off() {
        let t = target(&[0, 1], &[1]);
        let off = with(StepId::Sysctl, "/proc/sys/kernel/sched_rt_runtime_us");
        assert!(of(&off, &t).join("").contains("runaway SCHED_FIFO"));
        let other = with(StepId::Sysctl, "/proc/sys/kernel/timer_migration");
        assert!(of(&other, &t).is_empty());
    }

    #[test]
    fn a_step_without_changes_takes_no_risk() {
        let mut s = crate::fix::runtime::step(StepId::Governor, "t", "w");
        add(&mut s, &target(&[0, 1], &[1]));
        assert!(s.notes.is_empty());
    }
}
