//! The command kind: a program run with arguments, never through a shell (update-grub, kernel-install,
//! systemctl try-restart). Nothing to journal; `again_on_rollback` makes rollback run it after restoring.

use std::process::Command;

use serde_json::{Value, json};

use super::Took;
use crate::error::{Error, Result};
use crate::host::{Host, Kernel};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandChange {
    pub(crate) argv: Vec<String>,
    /// Run it again after rollback has restored the files.
    pub(crate) again_on_rollback: bool,
    pub(crate) reboot: bool,
}

pub(crate) fn apply(host: &Host, c: &CommandChange) -> Result<Took> {
    let Some(k) = host.kernel() else {
        return Ok(Took::WouldRun);
    };
    run_program(k, &c.argv)?;
    Ok(Took::Ran)
}

/// Runs a program with arguments (never a shell), on the running machine only: the programs fix runs
/// (systemctl, update-grub) act on the machine, never on a --root tree. Its last line of stderr goes into the error.
pub(crate) fn run_program(_: Kernel, argv: &[String]) -> Result<()> {
    let out = output(argv)?;
    if out.status.success() {
        return Ok(());
    }
    Err(failed(argv, &out))
}

/// Runs the program that reboots the machine. Going down, systemd sends every process SIGTERM, the reboot
/// program too when it has not returned yet: ended by SIGTERM is the reboot under way, not its failure.
pub(crate) fn run_reboot(_: Kernel, argv: &[String]) -> Result<()> {
    use std::os::unix::process::ExitStatusExt;
    let out = output(argv)?;
    if out.status.success() || out.status.signal() == Some(SIGTERM) {
        return Ok(());
    }
    Err(failed(argv, &out))
}

/// SIGTERM's number on every Linux architecture.
const SIGTERM: i32 = 15;

fn output(argv: &[String]) -> Result<std::process::Output> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| Error::failed("empty command"))?;
    Command::new(prog)
        .args(args)
        .output()
        .map_err(|e| Error::sys(format!("cannot run {prog}"), e))
}

/// The error names the command, how it ended and its last line of stderr.
fn failed(argv: &[String], out: &std::process::Output) -> Error {
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Error::failed(format!(
        "`{}` failed ({}): {last}",
        argv.join(" "),
        out.status
    ))
}

pub(crate) fn text(c: &CommandChange, live: bool) -> String {
    if live {
        format!("run: {}\n", c.argv.join(" "))
    } else {
        format!(
            "would run on the machine (not under --root): {}\n",
            c.argv.join(" ")
        )
    }
}

pub(crate) fn json(c: &CommandChange) -> Value {
    json!({
        "kind": "command", "target": c.argv.join(" "), "before": null, "after": null,
        "reboot_required": c.reboot, "argv": c.argv,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_reboot_program_ended_by_sigterm_is_the_reboot_under_way() {
        let k = Host::live().kernel().expect("the live host");
        let term = argv(&["sh", "-c", "kill -TERM $$"]);
        assert!(run_reboot(k, &term).is_ok());
        let e = run_program(k, &term).unwrap_err().to_string();
        assert!(e.contains("signal: 15"), "{e}");
        // Any other failure of the reboot program is still one.
        let kill = argv(&["sh", "-c", "kill -KILL $$"]);
        assert!(run_reboot(k, &kill).is_err());
        let e = run_reboot(k, &argv(&["sh", "-c", "echo no D-Bus >&2; exit 1"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no D-Bus"), "{e}");
    }
}
