//! `rmp-eval apply-saved [--nic IF [--follow]]`: re-apply the runtime tunings saved by fix (at boot from
//! rmp-eval.service, and for the saved NIC from rmp-eval-nic@IF.service, which the udev rule starts when the
//! interface appears). No journal: fix's journal already holds the originals. The changes are made by the same
//! executor as fix's (`fix::kind`): kernel values and NIC settings only.
//!
//! `--follow` stays and applies the NIC's settings again each time the interface is brought up: many drivers
//! (igb, e1000e, r8169) request their queue IRQs only when the interface opens, so at boot, before the MainDevice
//! brings its NIC up, there is nothing yet to pin, and the IRQs then start on the kernel's default CPUs.

use crate::cli::ApplySavedArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::kind::{self, Took};
use crate::fix::saved::Saved;
use crate::fix::{Change, plan, render, saved};
use crate::host::Host;
use crate::outln;
use crate::output::Output;
use crate::sys::netlink::LinkEvents;

pub(crate) fn execute(host: &Host, _out: Output, args: &ApplySavedArgs) -> Result<Outcome> {
    if let Some(n) = &args.nic {
        crate::sys::ifname::validate(n)?;
    }
    if let (Some(nic), true) = (&args.nic, args.follow)
        && host.is_live()
    {
        return follow(host, nic);
    }
    let done = match saved_for(host, args.nic.as_deref())? {
        Some(s) => apply(host, &s, args.nic.is_some()),
        None => Ok(Outcome::Good),
    };
    if args.follow {
        outln!(
            "apply-saved: applied once; --follow watches this machine's interfaces, not a --root tree"
        );
    }
    done
}

/// What fix saved, when it concerns `nic` (any saved settings without one); says why not otherwise.
fn saved_for(host: &Host, nic: Option<&str>) -> Result<Option<Saved>> {
    let Some(s) = saved::load(host)? else {
        outln!("Nothing saved: fix has not saved runtime settings.");
        return Ok(None);
    };
    match nic {
        Some(n) if Some(n) != s.nic.as_deref() => {
            outln!("{n} is not the saved NIC: nothing to do.");
            Ok(None)
        }
        _ => Ok(Some(s)),
    }
}

/// Plans the saved steps on the machine as it is now (the NIC's only with `only_nic`) and writes the values.
fn apply(host: &Host, s: &Saved, only_nic: bool) -> Result<Outcome> {
    let steps = saved::plan(host, s, plan::online_cpus(host)?, only_nic);
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

/// Applies the NIC's saved settings now, then again whenever `nic` goes from down to up, until the interface is
/// removed or fix's saved settings are gone (rollback) or name another NIC. A failed apply is printed (the unit's
/// log) and the watch goes on: the next bring-up may succeed.
fn follow(host: &Host, nic: &str) -> Result<Outcome> {
    // Subscribed before the first apply and before the state is read: a bring-up in between is not missed.
    let mut events =
        LinkEvents::subscribe().map_err(|e| Error::sys("rtnetlink link notifications", e))?;
    let index = crate::sys::netdev::ifindex(nic);
    let mut up = crate::sys::netdev::is_up(nic);
    if !apply_now(host, nic)? {
        return Ok(Outcome::Good);
    }
    // Gone before the unit started, or a chroot whose /sys is not this namespace's: nothing to wait for.
    let Ok(index) = index else {
        outln!(
            "apply-saved: {nic} is not an interface of this network namespace: applied once, not following"
        );
        return Ok(Outcome::Good);
    };
    outln!(
        "apply-saved: following {nic}: its settings are applied again each time it is brought up"
    );
    loop {
        let batch = match events.next() {
            Ok(b) => b,
            // The kernel dropped notifications: read the state instead.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                let now = crate::sys::netdev::is_up(nic);
                if now && !up && !apply_now(host, nic)? {
                    return Ok(Outcome::Good);
                }
                up = now;
                continue;
            }
            Err(e) => return Err(Error::sys("rtnetlink link notifications", e)),
        };
        for ev in batch.into_iter().filter(|e| e.ifindex == index) {
            if ev.removed {
                outln!("apply-saved: {nic} was removed: no longer following it");
                return Ok(Outcome::Good);
            }
            if ev.is_up() && !up && !apply_now(host, nic)? {
                return Ok(Outcome::Good);
            }
            up = ev.is_up();
        }
    }
}

/// One apply of the NIC's saved settings; false when there is nothing (more) to follow.
fn apply_now(host: &Host, nic: &str) -> Result<bool> {
    let Some(s) = saved_for(host, Some(nic))? else {
        return Ok(false);
    };
    if let Err(e) = apply(host, &s, true) {
        outln!("apply-saved: {e}");
    }
    Ok(true)
}
