//! Trial boots: a new kernel command line is booted once before it is kept. Each loader has a way to boot an
//! entry once and then fall back by itself to the one it always boots, which stays untouched:
//!   GRUB          a one-time entry in /boot/grub/custom.cfg (sourced by 41_custom) named by `next_entry` in
//!                 grubenv — what grub-reboot does; GRUB clears next_entry before it boots the entry (grub_trial/)
//!   systemd-boot  a copy of the booted entry with the new options, booted once by `bootctl set-oneshot`
//!                 (LoaderEntryOneShot, cleared by the loader when it reads it) (sd_trial.rs)
//!   Raspberry Pi  tryboot.txt (config.txt naming a trial cmdline file), booted once by `reboot '0 tryboot'`
//!                 (pi_trial.rs; judged on trees only: there is no Pi firmware here to boot it)
//! A trial that panics (the trial adds panic=10 when the line has no panic=) or hangs (a watchdog or a power
//! cycle) therefore comes back on the previous command line. The trial's files are fix changes: journaled
//! first, undone byte for byte when the trial is judged (or by rollback).

use super::tokens::{is_safe_token, merge_into, name, tokens};
use crate::fix::Change;

/// How long a panicking trial kernel waits before it reboots (when the command line does not say).
pub(crate) const PANIC_REBOOT: &str = "panic=10";

/// One trial boot, ready to arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trial {
    /// The files that arm it (journaled), then the program that does when there is one.
    pub(crate) changes: Vec<Change>,
    /// The kernel command line the trial entry gives (the loader's own BOOT_IMAGE= aside).
    pub(crate) cmdline: Vec<String>,
    /// The program and arguments that reboot into it.
    pub(crate) reboot: Vec<String>,
    /// What the plan says of it.
    pub(crate) how: String,
}

/// Why a trial boot cannot be armed here: the change is then not tried (and not made) by qualify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no trial boot: {0}")]
pub(crate) struct NoTrial(pub(crate) String);

/// The trial's command line: `base` (the entry's own) with `params` put in, and panic=10 when it has no
/// panic= (so that a trial kernel that panics reboots to the previous entry instead of waiting).
pub(crate) fn trial_line(base: &[String], params: &[String]) -> Result<Vec<String>, NoTrial> {
    if let Some(bad) = params.iter().find(|t| !is_safe_token(t)) {
        return Err(NoTrial(format!(
            "{bad} is not a parameter fix can hand to a boot loader"
        )));
    }
    let mut line = merge_into(base, params);
    if !line.iter().any(|t| name(t) == "panic") {
        line.push(PANIC_REBOOT.into());
    }
    Ok(line)
}

/// What the health check of a trial boot found wrong, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Health {
    pub(crate) problems: Vec<String>,
}

impl Health {
    pub(crate) fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The health check of a boot that may be the trial: every parameter of the trial on the running command line
/// (`running`: /proc/cmdline), rmp-eval's boot unit ran (`unit_ran`), and the RT core in the kernel's isolated
/// set (`isolated`: /sys/devices/system/cpu/isolated, a CPU list) when the trial isolates it.
pub(crate) fn judge(
    params: &[String],
    running: &str,
    unit_ran: bool,
    isolated: &str,
    core: usize,
) -> Health {
    let now = tokens(running);
    let mut problems: Vec<String> = params
        .iter()
        .filter(|p| !now.contains(p))
        .map(|p| format!("{p} is not on the running command line"))
        .collect();
    if !unit_ran {
        problems.push("rmp-eval's boot unit did not run in this boot".into());
    }
    let isolates = params.iter().any(|p| name(p) == "isolcpus");
    let held = crate::parse::cpulist::parse(isolated.trim()).is_ok_and(|c| c.contains(&core));
    if isolates && !held {
        problems.push(format!(
            "CPU {core} is not isolated (isolated: {:?})",
            isolated.trim()
        ));
    }
    Health { problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_trial_line_adds_the_parameters_and_a_panic_reboot_once() {
        let base = s(&["root=UUID=1", "ro", "isolcpus=3", "quiet"]);
        let line = trial_line(&base, &s(&["isolcpus=1", "nohz_full=1"])).unwrap();
        assert_eq!(
            line,
            s(&[
                "root=UUID=1",
                "ro",
                "isolcpus=1",
                "quiet",
                "nohz_full=1",
                "panic=10"
            ])
        );
        let own = trial_line(&s(&["ro", "panic=30"]), &s(&["isolcpus=1"])).unwrap();
        assert_eq!(own, s(&["ro", "panic=30", "isolcpus=1"]));
        assert!(trial_line(&base, &s(&["init=$(reboot)"])).is_err());
    }

    #[test]
    fn the_health_check_names_each_thing_wrong() {
        let params = s(&["isolcpus=managed_irq,domain,1", "nohz_full=1"]);
        let good = "BOOT_IMAGE=/boot/vmlinuz root=UUID=1 ro isolcpus=managed_irq,domain,1 nohz_full=1 panic=10\n";
        assert!(judge(&params, good, true, "1\n", 1).ok());
        // Booted on the previous line (the trial panicked and GRUB fell back): the parameters are missing.
        let h = judge(&params, "BOOT_IMAGE=/boot/vmlinuz ro\n", true, "\n", 1);
        assert_eq!(h.problems.len(), 3, "{h:?}");
        assert!(h.problems[0].contains("isolcpus=managed_irq,domain,1"));
        assert!(h.problems[2].contains("CPU 1 is not isolated"));
        let h = judge(&params, good, false, "1", 1);
        assert_eq!(
            h.problems,
            ["rmp-eval's boot unit did not run in this boot"]
        );
        // A line that isolates nothing is not judged on isolation.
        assert!(judge(&s(&["skew_tick=1"]), "ro skew_tick=1", true, "", 1).ok());
    }
}
