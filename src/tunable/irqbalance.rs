//! irqbalance: the check that it keeps off the RT core, and the step that bans the core in its settings.
//!
//! irqbalance moves IRQs between CPUs every 10 s by their load, undoing fix's IRQ affinity; left to itself it
//! avoids isolated and nohz_full CPUs, which an explicit banned list replaces. Its settings file lasts across
//! reboots, and the daemon reads it when it starts: the step edits the file and restarts the service.

use crate::checks::{Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, unknown};
use crate::fix::kind::command::CommandChange;
use crate::fix::runtime::{Target, file, step};
use crate::fix::{Change, Step, StepId};
use crate::host::Host;
use crate::machine::{CPU_DIR, CPU_ISOLATED, CPU_NOHZ_FULL, PROC};
use crate::parse::{cpulist, mask};

use super::{Persistence, Tunable, no_risks};

/// irqbalance's settings (IRQBALANCE_BANNED_CPULIST …), which the check reads and the step edits.
pub(crate) const IRQBALANCE_DEFAULTS: &str = "/etc/default/irqbalance";

pub(crate) const TUNABLE: Tunable = Tunable {
    step: StepId::Irqbalance,
    persistence: Persistence::Files,
    plan: |host, t, _| Ok(plan(host, t)),
    risks: no_risks,
};

pub(crate) const CHECK: Check = Check {
    id: CheckId::Irqbalance,
    section: Section::Core,
    title: "irqbalance keeps off RT core",
    doc: "irqbalance rewrites IRQ affinities every 10 s and undoes manual pinning. Passes when it is not running, \
          or IRQBALANCE_BANNED_CPULIST/IRQBALANCE_BANNED_CPUS in /etc/default/irqbalance bans the core, or \
          neither is set and the core is isolated or nohz_full (irqbalance skips those by itself; an empty \
          banned list removes that).",
    remedy: Some(StepId::Irqbalance),
    by_hand: None,
    evaluate: irqbalance,
};

/// A process's name: its comm file, else the name in its stat line (a snapshot may hold one without the other).
/// Ok(None) when the process is gone (exited while being read, or recorded so by the snapshot).
fn process_name(host: &Host, pid: &str) -> Result<Option<String>, ()> {
    let comm = format!("{PROC}/{pid}/comm");
    match host.read_trimmed(&comm) {
        Ok(c) => return Ok(Some(c)),
        Err(e) if !e.is_not_found() => return Err(()),
        Err(_) => {}
    }
    // comm gone from the machine (live, or recorded so) is the process gone.
    if host.lacks(&comm) {
        return Ok(None);
    }
    let stat = format!("{PROC}/{pid}/stat");
    match host.read_bytes(&stat) {
        Ok(b) => crate::parse::task::stat(&b).map(|s| Some(s.comm)).ok_or(()),
        Err(_) => Err(()),
    }
}

/// Whether a process named `name` runs, from /proc/PID/comm or /proc/PID/stat (works on snapshots, which keep
/// them).
fn process_running(host: &Host, name: &str) -> Result<bool, Unknown> {
    let pids = host
        .list(PROC)
        .map_err(|e| unknown(format!("{PROC}: {}", e.reason())))?;
    // A process that exits meanwhile is gone (not found); one whose name cannot be read might be `name`.
    let mut unreadable = 0;
    for p in pids
        .iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        match process_name(host, p) {
            Ok(Some(c)) if c == name => return Ok(true),
            Ok(_) => {}
            Err(()) => unreadable += 1,
        }
    }
    if unreadable > 0 {
        return Err(unknown(format!(
            "{unreadable} processes' names could not be read"
        )));
    }
    Ok(false)
}

fn shell_var<'a>(text: &'a str, var: &str) -> Option<&'a str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.trim().strip_prefix(var)?.strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').trim_matches('\''))
        .next_back()
}

fn irqbalance(host: &Host, ctx: &Ctx) -> Eval {
    if !process_running(host, "irqbalance")? {
        return Ok(Assessment::pass("not running"));
    }
    let core = ctx.core;
    let defaults = host.read(IRQBALANCE_DEFAULTS).unwrap_or_default();
    // irqbalance reads the mask first (1.8 and later too, with a warning), the list only from 1.8 on.
    if let Some(m) = shell_var(&defaults, "IRQBALANCE_BANNED_CPUS").filter(|m| !m.is_empty()) {
        return Ok(banned_by_mask(m, core));
    }
    let list = shell_var(&defaults, "IRQBALANCE_BANNED_CPULIST");
    if let Some(l) = list.filter(|_| installed(host) != Some(Form::Mask)) {
        let banned = cpulist::parse(l).unwrap_or_default();
        return Ok(if banned.contains(&core) {
            Assessment::pass(format!("running, banned CPUs {l}"))
        } else {
            Assessment::fail(format!(
                "running, CPU{core} not in IRQBALANCE_BANNED_CPULIST={l}"
            ))
        });
    }
    if let Some(m) = shell_var(&defaults, "IRQBALANCE_BANNED_CPUS") {
        return Ok(banned_by_mask(m, core));
    }
    let in_list = |p: &str| {
        host.read_trimmed(p)
            .ok()
            .and_then(|r| cpulist::parse(&r).ok())
            .is_some_and(|v| v.contains(&core))
    };
    Ok(if in_list(CPU_ISOLATED) || in_list(CPU_NOHZ_FULL) {
        Assessment::pass("running, skips isolated CPUs")
    } else {
        Assessment::fail(format!("running and may move IRQs onto CPU{core}"))
    })
}

fn banned_by_mask(m: &str, core: usize) -> Assessment {
    if mask::parse(m).unwrap_or_default().contains(&core) {
        Assessment::pass(format!("running, banned mask {m}"))
    } else {
        Assessment::fail(format!(
            "running, CPU{core} not in IRQBALANCE_BANNED_CPUS={m}"
        ))
    }
}

const BANNED: &str = "IRQBALANCE_BANNED_CPULIST=";
/// The hex mask every irqbalance reads, before the list where it knows both.
const BANNED_MASK: &str = "IRQBALANCE_BANNED_CPUS=";

/// The form of the banned CPUs the installed irqbalance reads: the list from 1.8 on, the mask before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    List,
    Mask,
}

/// The form the irqbalance dpkg installed reads; None when dpkg does not say (another packager, a build of
/// one's own).
fn installed(host: &Host) -> Option<Form> {
    let status = host.read("/var/lib/dpkg/status").ok()?;
    let v = crate::parse::dpkg::installed_version(&status, "irqbalance")?;
    let (major, minor, _) = crate::parse::kernel::version(v)?;
    Some(if (major, minor) < (1, 8) {
        Form::Mask
    } else {
        Form::List
    })
}

/// The CPUs a line that sets the banned list or mask names; None for any other line.
fn banned_setting(line: &str) -> Option<Vec<usize>> {
    let l = line.trim_start();
    let value = |v: &str| v.trim().trim_matches('"').to_string();
    if let Some(v) = l.strip_prefix(BANNED) {
        return Some(cpulist::parse(&value(v)).unwrap_or_default());
    }
    let v = l.strip_prefix(BANNED_MASK)?;
    Some(mask::parse(&value(v)).unwrap_or_default())
}

/// The CPUs the last setting of the banned list and of the mask in `text` name (as the shell that sources it
/// keeps the last of each).
fn banned_cpus(text: &str) -> Vec<usize> {
    let last = |prefix: &str| {
        text.lines()
            .rev()
            .filter(|l| l.trim_start().starts_with(prefix))
            .find_map(banned_setting)
            .unwrap_or_default()
    };
    let mut cpus = last(BANNED);
    cpus.extend(last(BANNED_MASK));
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The lines that ban `cpus` in the form the installed irqbalance reads; both where it is not known (every
/// version reads the mask, the list outlives it).
fn banned_lines(host: &Host, t: &Target, cpus: &[usize], s: &mut Step) -> Vec<String> {
    let list = format!("{BANNED}{}", cpulist::format(cpus));
    let mask = format!("{BANNED_MASK}{}", mask::format(cpus, t.nbits()));
    match installed(host) {
        Some(Form::List) => vec![list],
        Some(Form::Mask) => {
            s.note("irqbalance before 1.8 reads the banned CPUs as a mask (IRQBALANCE_BANNED_CPUS) only");
            vec![mask]
        }
        None => {
            s.note(
                "the installed irqbalance's version is not known (dpkg does not list it): the banned CPUs are \
                 set both as a mask, which every version reads, and as a list, which 1.8 and later read",
            );
            vec![mask, list]
        }
    }
}

/// irqbalance (1.8 and later: IRQBALANCE_BANNED_CPULIST; before, that name is ignored) keeps IRQs off the CPUs
/// the running kernel isolates (isolated, nohz_full) by itself while no banned list is set, and an explicit list
/// replaces that. So fix sets a list only while the boot parameters do not cover the isolated CPUs yet (before
/// the reboot, or without the command-line step), and takes its own list out again once they do: then
/// irqbalance follows the boot parameters wherever they move. The list holds the user's own CPUs, the target's
/// isolated CPUs and those the running kernel isolates — less the CPUs earlier fixes put there for another core.
fn plan(host: &Host, t: &Target) -> Step {
    let mut s = step(
        StepId::Irqbalance,
        "irqbalance: keep IRQs off the isolated CPUs",
        "irqbalance moves IRQs back onto the RT core every 10 s",
    );
    let Ok(text) = host.read(IRQBALANCE_DEFAULTS) else {
        s.note(format!(
            "{IRQBALANCE_DEFAULTS} not found: irqbalance is not installed, nothing to do"
        ));
        return s;
    };
    let earlier = crate::fix::earlier::Earlier::load(host);
    let ours = earlier.added_to_file(IRQBALANCE_DEFAULTS, banned_cpus);
    let mut users = banned_cpus(&text);
    users.retain(|c| !ours.contains(c));
    let mut kernel = Vec::new();
    for f in ["isolated", "nohz_full"] {
        let v = host.read(&format!("{CPU_DIR}/{f}")).unwrap_or_default();
        kernel.extend(cpulist::parse(&v).unwrap_or_default());
    }
    let covered = t.isolated.iter().all(|c| kernel.contains(c));
    let lines = if users.is_empty() && covered {
        s.note(format!(
            "the running kernel isolates {} (isolated, nohz_full): irqbalance keeps IRQs off them by itself while \
             no banned list is set, so none is",
            crate::fix::cpus_named(&t.isolated)
        ));
        Vec::new()
    } else {
        // CPUs the kernel isolates because an earlier fix asked are not the user's: they leave with that fix.
        let released = earlier.cmdline_isolated();
        kernel.retain(|c| !released.contains(c) || t.isolated.contains(c));
        let mut banned = users;
        banned.extend(&t.isolated);
        banned.extend(kernel);
        banned.sort_unstable();
        banned.dedup();
        banned_lines(host, t, &banned, &mut s)
    };
    let new = with_banned(&text, &lines);
    if new != text {
        file(&mut s, host, IRQBALANCE_DEFAULTS, new);
        let argv = ["systemctl", "try-restart", "irqbalance.service"]
            .map(String::from)
            .to_vec();
        s.changes.push(Change::Command(CommandChange {
            argv,
            again_on_rollback: true,
            reboot: false,
        }));
    }
    s
}

/// `text` with its banned-list and mask settings replaced by `new` (where the first was, else next to Debian's
/// commented-out example, else at the end), or taken out.
fn with_banned(text: &str, new: &[String]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut placed = false;
    for l in text.lines() {
        if banned_setting(l).is_none() {
            lines.push(l.to_string());
        } else if !placed {
            lines.extend_from_slice(new);
            placed = true;
        }
    }
    if !placed && !new.is_empty() {
        match lines.iter().position(|l| l.trim() == format!("#{BANNED}")) {
            Some(i) => lines.splice(i + 1..i + 1, new.iter().cloned()),
            None => lines.splice(lines.len().., new.iter().cloned()),
        };
    }
    let mut new = lines.join("\n");
    new.push('\n');
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_reads_the_form_the_installed_irqbalance_reads() {
        // irqbalance runs (pid 1 here); CPU 3 is not isolated. 1.7 ignores the list, every version reads the mask
        // first (1.9.2's setup_banned_cpus), so the mask decides where both are set.
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        let w = |p: &str, t: &str| h.write_atomic(p, t.as_bytes(), None).unwrap();
        w("/proc/1/comm", "irqbalance\n");
        let ctx = Ctx {
            core: 3,
            nic: None,
            pid: None,
            smi_seconds: None,
        };
        let status =
            |v: &str| format!("Package: irqbalance\nStatus: install ok installed\nVersion: {v}\n");
        w(IRQBALANCE_DEFAULTS, "IRQBALANCE_BANNED_CPULIST=3\n");
        w("/var/lib/dpkg/status", &status("1.9.2-1"));
        assert_eq!(
            irqbalance(&h, &ctx).unwrap().status,
            crate::checks::Status::Pass
        );
        w("/var/lib/dpkg/status", &status("1.7.0-5"));
        assert_eq!(
            irqbalance(&h, &ctx).unwrap().status,
            crate::checks::Status::Fail
        );
        w(
            IRQBALANCE_DEFAULTS,
            "IRQBALANCE_BANNED_CPULIST=3\nIRQBALANCE_BANNED_CPUS=08\n",
        );
        assert_eq!(
            irqbalance(&h, &ctx).unwrap().status,
            crate::checks::Status::Pass
        );
        w("/var/lib/dpkg/status", &status("1.9.2-1"));
        w(
            IRQBALANCE_DEFAULTS,
            "IRQBALANCE_BANNED_CPULIST=3\nIRQBALANCE_BANNED_CPUS=01\n",
        );
        assert_eq!(
            irqbalance(&h, &ctx).unwrap().status,
            crate::checks::Status::Fail
        );
    }
}
