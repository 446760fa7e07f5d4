//! One module per command: each turns parsed arguments into work on a `Host` and an `Outcome`.

pub(crate) mod after_boot;
pub(crate) mod apply_saved;
pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod fix;
pub(crate) mod generate;
pub(crate) mod monitor;
pub(crate) mod qualify;
pub(crate) mod reflect;
pub(crate) mod report;
pub(crate) mod rollback;
pub mod run;
pub mod snapshot;

use crate::cli::{Cli, Command};
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

/// Runs the command `cli` names. Every command prints through the writer it is given (stdout here, a buffer in a
/// test); warnings and errors go to stderr.
pub fn dispatch(host: &Host, out: Output, cli: Cli) -> Result<Outcome> {
    if cli.command.is_some() && !cli.legacy.is_unset() {
        return Err(Error::usage(
            "the original tool's options (--nic, -i, -s, -sp, …) go without a command, or after it: rmp-eval check --nic IF",
        ));
    }
    let mut stdout = std::io::stdout();
    let w = &mut stdout;
    match cli.command {
        Some(Command::Check(a)) => check::execute(host, out, w, &a),
        Some(Command::Run(a)) => run::execute(host, out, w, &a),
        Some(Command::Fix(a)) => fix::execute(host, out, w, &a),
        Some(Command::Rollback(a)) => rollback::execute(host, out, w, &a),
        Some(Command::Qualify(a)) => qualify::execute(host, out, w, &a),
        Some(Command::Compare(a)) => compare::execute(host, out, w, &a),
        Some(Command::Reflect(a)) => reflect::execute(host, out, w, &a),
        Some(Command::Report(a)) => report::execute(host, out, w, &a),
        Some(Command::Snapshot(a)) => snapshot::execute(host, out, w, &a),
        Some(Command::AfterBoot) => after_boot::execute(host, out, w),
        Some(Command::Monitor(a)) => monitor::execute(host, out, w, &a),
        Some(Command::ApplySaved(a)) => apply_saved::execute(host, out, w, &a),
        Some(Command::Generate(a)) => generate::execute(w, &a),
        None if cli.legacy.only_config => check::execute(host, out, w, &cli.legacy.to_check()),
        None => run::execute(host, out, w, &cli.legacy.to_run()),
    }
}

/// A note beside a command's report: on stderr beside JSON (stdout stays one document), else on the writer.
pub(crate) fn note(w: &mut dyn std::io::Write, json: bool, line: &str) {
    if json {
        eprintln!("{line}");
    } else {
        crate::outln!(w, "{line}");
    }
}
