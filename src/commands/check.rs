//! `rmp-eval check`: every configuration check, as text or JSON. Exit 0 when nothing failed, 1 when a check
//! failed, 2 for bad input. Reads files only (through Host): no subprocess, no change to the machine.

use crate::checks::{self, Ctx, Status, machine};
use crate::cli::CheckArgs;
use crate::error::{Outcome, Result};
use crate::host::Host;
use crate::output::Output;
use crate::report::check as report;
use crate::report::prometheus;

/// Validates the arguments against the machine and builds the check context.
pub fn context(host: &Host, core: Option<usize>, nic_name: Option<&str>) -> Result<Ctx> {
    if let Some(n) = nic_name {
        crate::sys::ifname::validate(n)?;
    }
    let core = machine::validate_core(host, core)?;
    Ok(Ctx {
        core,
        nic: nic_name.map(str::to_string),
    })
}

pub fn execute(host: &Host, out: Output, args: &CheckArgs) -> Result<Outcome> {
    let ctx = context(host, args.core, args.nic.as_deref())?;
    let dest = args
        .prometheus
        .as_deref()
        .map(std::path::Path::new)
        .map(|d| prometheus::Dest::resolve(host, d))
        .transpose()?;
    let findings = checks::run_all(host, &ctx);
    if let Some(d) = &dest {
        prometheus::export_check(host, d, &findings, crate::measure::store::unix_now())?;
    }
    if args.json {
        crate::outln!("{}", report::render_json(host, &ctx, &findings));
    } else {
        crate::out!("{}", report::render_text(host, &ctx, &findings, out));
    }
    Ok(if findings.iter().any(|f| f.status == Status::Fail) {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}
