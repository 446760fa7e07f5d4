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
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| Error::failed("empty command"))?;
    let out = Command::new(prog)
        .args(args)
        .output()
        .map_err(|e| Error::sys(format!("cannot run {prog}"), e))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(Error::failed(format!(
        "`{}` failed ({}): {last}",
        argv.join(" "),
        out.status
    )))
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
