//! `rmp-eval apply-saved [--nic IF]`: re-apply the runtime tunings saved by fix (at boot from rmp-eval.service,
//! and from the udev rule when the NIC appears). No journal: fix's journal already holds the originals. The
//! changes are made by the same executor as fix's (`fix::kind`): kernel values and NIC settings only.

use crate::cli::ApplySavedArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::kind::{self, Took};
use crate::fix::{Change, plan, render, saved};
use crate::host::Host;
use crate::outln;
use crate::output::Output;

pub(crate) fn execute(host: &Host, _out: Output, args: &ApplySavedArgs) -> Result<Outcome> {
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
    for c in steps.iter().flat_map(|st| st.changes.iter()) {
        // Files and commands are fix's alone (journaled); the runtime steps plan only values and NIC settings.
        if !matches!(
            c,
            Change::Value(_) | Change::Ethtool(_) | Change::Partition(_)
        ) {
            continue;
        }
        match kind::apply(host, c).map(|t| kind::verify(host, c, t)) {
            Ok(Took::Took) => written += 1,
            Ok(Took::WouldRun) => {
                let to = match c {
                    Change::Ethtool(e) => format!(" to {}", e.after),
                    _ => String::new(),
                };
                outln!(
                    "{}: would be set{to} on the machine (not under --root)",
                    c.target()
                )
            }
            Ok(t @ Took::Differs(_)) => {
                problems.push(format!("{}: {}", c.target(), render::took_text(&t)))
            }
            Ok(t) => outln!("{}: {}", c.target(), render::took_text(&t)),
            Err(e) => problems.push(e.to_string()),
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
