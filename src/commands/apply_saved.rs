//! `rmp-eval apply-saved [--nic IF]`: re-apply the runtime tunings saved by fix (at boot from rmp-eval.service,
//! and from the udev rule when the NIC appears). No journal: fix's journal already holds the originals.

use crate::cli::ApplySavedArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::{Change, ethtool, plan, saved};
use crate::host::Host;
use crate::outln;
use crate::output::Output;

pub fn execute(host: &Host, _out: Output, args: &ApplySavedArgs) -> Result<Outcome> {
    if let Some(n) = &args.nic {
        crate::sys::ifname::validate(n)?;
    }
    let Some(s) = saved::load(host)? else {
        outln!("Nothing saved: fix has not saved runtime settings.");
        return Ok(Outcome::Good);
    };
    if args.nic.is_some() && args.nic != s.nic {
        outln!(
            "{} is not the saved NIC: nothing to do.",
            args.nic.as_deref().unwrap_or("")
        );
        return Ok(Outcome::Good);
    }
    let steps = saved::plan(host, &s, plan::online_cpus(host)?, args.nic.is_some());
    let mut problems = Vec::new();
    let mut written = 0;
    for st in &steps {
        for c in &st.changes {
            if let Change::Ethtool {
                nic, field, after, ..
            } = c
            {
                if !host.is_live() {
                    outln!(
                        "{}: would be set to {after} on the machine (not under --root)",
                        c.target()
                    );
                    continue;
                }
                match ethtool::write(nic, *field, *after) {
                    Ok(()) => written += 1,
                    Err(e) if ethtool::unsupported(&e) => {
                        outln!("{}: not supported by the driver ({e})", c.target())
                    }
                    Err(e) => problems.push(format!("{}: {e}", c.target())),
                }
                continue;
            }
            let Change::Value {
                path,
                after,
                refusable,
                ..
            } = c
            else {
                continue;
            };
            match host.write_value(path, &format!("{after}\n")) {
                Ok(()) => written += 1,
                Err(e) if *refusable => outln!("{path}: refused ({}), left as it is", e.reason()),
                Err(e) => problems.push(e.to_string()),
            }
        }
    }
    outln!(
        "apply-saved: {written} value(s) written for steps {}",
        s.steps.join(", ")
    );
    if problems.is_empty() {
        Ok(Outcome::Good)
    } else {
        Err(Error::failed(problems.join("; ")))
    }
}
