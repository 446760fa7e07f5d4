//! qualify: the one answer (will this PC run the controller at this cycle time, and what had to change),
//! unattended across reboots. Its progress is one state file, rewritten whole at every transition through
//! `Host::write_atomic` (temporary file, fsync, rename, directory fsync): a power loss or SIGKILL at any instant
//! leaves the state before or after a transition, never half of one. What it changes on the machine goes through
//! fix's plan → journal → apply, so `rollback` undoes it byte for byte like any fix.
//!
//! `state.rs` is the machine of phases and the events that move it (pure, no I/O but load/save); `resume.rs`
//! decides, from the state and what this boot observes (its boot id, its command line, the fix journal), what
//! to do next — the same decision after a clean stop, a crash or a reboot.

pub(crate) mod drive;
pub(crate) mod line;
pub(crate) mod result;
pub(crate) mod resume;
pub(crate) mod state;

/// The state file: present from the moment the plan is accepted until `rollback` or `qualify --abort`.
pub(crate) const STATE: &str = "/var/lib/rmp-eval/qualify.json";

/// The shortest measurement `--one-at-a-time` takes: compare's noise test judges a step on the one-second maxima
/// of the runs before and after it (report/noise.rs). At its minimum of 5 a side the smallest two-sided p-value
/// there is, 2/252 ≈ 0.008, clears its 1 % level only when every maximum of one run lies beyond every one of the
/// other; below 5 compare falls back to a 10 % margin on the maxima, which on a busy machine calls noise worse
/// and would revert a good step. With 10 a side (p down to 1.1e-5) a real shift of part of the maxima shows.
pub(crate) const MIN_STEP_SECONDS: f64 = 10.0;

/// Refuses `--one-at-a-time` with measurements too short to judge a step (one line, exit 2).
pub(crate) fn check_step_seconds(one_at_a_time: bool, seconds: f64) -> crate::error::Result<()> {
    if one_at_a_time && seconds < MIN_STEP_SECONDS {
        return Err(crate::error::Error::usage(format!(
            "qualify: --one-at-a-time needs --seconds {MIN_STEP_SECONDS:.0} or more (got {seconds}): each step is \
             judged by compare's noise test on the one-second maxima before and after it, which needs \
             {MIN_STEP_SECONDS:.0} a side to tell a step from chance"
        )));
    }
    Ok(())
}
