//! `rmp-eval check`: every configuration check, as text or JSON. Reads files only (through Host): no subprocess,
//! no change to the machine. Exit status: 0 all good, 1 a check failed, 4 only warnings (what a newer kernel or
//! other hardware would change), 5 nothing failed but a change fix made waits for a reboot; 2 bad input.

use std::io::Write;

use crate::checks::machine_id::describe;
use crate::checks::{self, Ctx, Finding, Status};
use crate::cli::CheckArgs;
use crate::error::{Outcome, Result};
use crate::host::Host;
use crate::machine;
use crate::output::{self, Output};
use crate::report::check as report;
use crate::report::prometheus;

/// Validates the arguments against the machine and builds the check context.
pub(crate) fn context(
    host: &Host,
    core: Option<usize>,
    nic_name: Option<&str>,
    smi_seconds: Option<u64>,
) -> Result<Ctx> {
    if let Some(n) = nic_name {
        checks::nic::require(host, n)?;
    }
    let core = machine::validate_core(host, core)?;
    if let Ok(machine::Online {
        derived: Some(how), ..
    }) = machine::online(host)
    {
        eprintln!("note: {}", crate::parse::text::sanitize(&how, 300));
    }
    Ok(Ctx {
        core,
        nic: nic_name.map(str::to_string),
        pid: None,
        smi_seconds,
    })
}

/// The process `--pid` or `--process` names, checked to exist.
fn audited_pid(host: &Host, pid: Option<u32>, name: Option<&str>) -> Result<Option<u32>> {
    match (pid, name) {
        (Some(p), _) if !host.is_dir(&format!("{}/{p}/task", machine::PROC)) => Err(
            crate::error::Error::usage(format!("--pid {p}: no such process")),
        ),
        (Some(p), _) => Ok(Some(p)),
        (None, Some(n)) => checks::process_threads::find(host, n).map(Some),
        (None, None) => Ok(None),
    }
}

pub(crate) fn execute(
    host: &Host,
    out: Output,
    w: &mut dyn Write,
    args: &CheckArgs,
) -> Result<Outcome> {
    let mut ctx = context(host, args.core, args.nic.as_deref(), Some(args.smi_seconds))?;
    machine::require_cpu_dir(host, ctx.core)?;
    ctx.pid = audited_pid(host, args.pid, args.process.as_deref())?;
    let dest = args
        .prometheus
        .as_deref()
        .map(std::path::Path::new)
        .map(|d| prometheus::Dest::resolve(host, d))
        .transpose()?;
    let findings = crate::fix::reconcile::findings(host, &ctx);
    if let Some(d) = &dest {
        prometheus::export_check(
            d,
            &crate::checks::machine_id::kernel_info(host),
            &findings,
            crate::measure::result::store::unix_now(),
        )?;
    }
    if args.json {
        let json = report::render_json(&describe(host, &ctx), &ctx, &findings);
        output::write(w, &(json + "\n"));
    } else {
        output::write(
            w,
            &report::render_text(&describe(host, &ctx), &ctx, &findings, out),
        );
    }
    Ok(outcome(&findings))
}

/// The exit status of a set of findings: a failure first, then a reboot that is due, then warnings.
pub(crate) fn outcome(findings: &[Finding]) -> Outcome {
    let any = |s: Status| findings.iter().any(|f| f.status == s);
    if any(Status::Fail) {
        Outcome::ShortFall
    } else if any(Status::Pending) {
        Outcome::RebootPending
    } else if any(Status::Warn) {
        Outcome::Warnings
    } else {
        Outcome::Good
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> CheckArgs {
        let cli = Cli::try_parse_from(["rmp-eval", "check"].iter().chain(argv)).unwrap();
        let Some(Command::Check(a)) = cli.command else {
            panic!("not check")
        };
        a
    }

    /// In-process, on a captured root: what check prints goes to the writer it is given, nothing to stdout.
    #[test]
    fn check_prints_through_the_writer_it_is_given() {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/debian12-rt-qemu-isolated"
        );
        let host = Host::with_root(root);
        let mut json = Vec::new();
        let got = execute(
            &host,
            Output::plain(),
            &mut json,
            &args(&["--core", "1", "--json"]),
        )
        .unwrap();
        let json = String::from_utf8(json).unwrap();
        assert!(json.ends_with("}\n"), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["core"], 1);
        let failed = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["status"] == "fail");
        assert_eq!(failed, got == Outcome::ShortFall, "{json}");

        let mut text = Vec::new();
        let again = execute(&host, Output::plain(), &mut text, &args(&["--core", "1"])).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(again, got);
        let first = v["checks"][0]["title"].as_str().unwrap();
        assert!(text.contains(first), "{first} not in:\n{text}");
    }
}
