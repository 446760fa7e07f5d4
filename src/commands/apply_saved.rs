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
use crate::fix::saved::{ApplyScope, Saved};
use crate::fix::{Change, Step, StepId, plan, render, saved};
use crate::host::Host;
use crate::outln;
use crate::output::Output;
use crate::sys::netlink::LinkEvents;
use std::io::Write;

pub(crate) fn execute(
    host: &Host,
    _out: Output,
    w: &mut dyn Write,
    args: &ApplySavedArgs,
) -> Result<Outcome> {
    if let Some(n) = &args.nic {
        crate::sys::ifname::validate(n)?;
    }
    if let (Some(nic), true) = (&args.nic, args.follow)
        && host.is_live()
    {
        return follow(w, host, nic);
    }
    let scope = args.nic.as_deref().map_or(ApplyScope::All, ApplyScope::Nic);
    let done = match load(w, host)? {
        Some(s) => apply(w, host, &s, scope),
        None => Ok(Outcome::Good),
    };
    if args.follow {
        outln!(
            w,
            "apply-saved: applied once; --follow watches this machine's interfaces, not a --root tree"
        );
    }
    done
}

/// What fix saved, or None (said).
fn load(w: &mut dyn Write, host: &Host) -> Result<Option<Saved>> {
    let s = saved::load(host)?;
    if s.is_none() {
        outln!(w, "Nothing saved: fix has not saved runtime settings.");
    }
    Ok(s)
}

/// What one apply did, said once however many passes it took.
#[derive(Default)]
struct Tally {
    written: usize,
    said: Vec<String>,
    problems: Vec<String>,
}

impl Tally {
    fn once(list: &mut Vec<String>, line: String) {
        if !list.contains(&line) {
            list.push(line);
        }
    }
}

/// Plans the saved steps in `scope` on the machine as it is now and writes the values.
fn apply(w: &mut dyn Write, host: &Host, s: &Saved, scope: ApplyScope) -> Result<Outcome> {
    if let ApplyScope::Nic(n) = scope
        && s.nic.as_deref() != Some(n)
    {
        outln!(
            w,
            "{n} is not the saved NIC: only its IRQs are kept off the RT core."
        );
    }
    let online = plan::online_cpus(host)?;
    let mut tally = Tally::default();
    let first = saved::plan(host, s, online.clone(), scope)?;
    apply_steps(host, &first, &mut tally);
    // A driver that probed while the first pass ran allocated its IRQs with the old default affinity (which the
    // first pass wrote before any IRQ's): planned again, they are listed and moved too.
    if first.iter().any(|st| st.id == StepId::IrqAffinity) {
        let again: Vec<_> = saved::plan(host, s, online, scope)?
            .into_iter()
            .filter(|st| st.id == StepId::IrqAffinity)
            .collect();
        apply_steps(host, &again, &mut tally);
    }
    for line in &tally.said {
        outln!(w, "{line}");
    }
    let steps: Vec<&str> = first.iter().map(|st| st.id.as_str()).collect();
    if steps.is_empty() {
        outln!(w, "apply-saved: none of the saved steps concerns this");
        return Ok(Outcome::Good);
    }
    outln!(
        w,
        "apply-saved: {} value(s) written for steps {}",
        tally.written,
        steps.join(", ")
    );
    if tally.problems.is_empty() {
        Ok(Outcome::Good)
    } else {
        Err(Error::failed(tally.problems.join("; ")))
    }
}

fn apply_steps(host: &Host, steps: &[Step], tally: &mut Tally) {
    for c in steps.iter().flat_map(|st| st.changes.iter()) {
        // Files and commands are fix's alone (journaled); the runtime steps plan only values and NIC settings.
        if !c.takes_effect_now() {
            continue;
        }
        match kind::apply(host, c).map(|t| kind::verify(host, c, t)) {
            Ok(Took::Took) => tally.written += 1,
            Ok(Took::WouldRun) => {
                let to = match c {
                    Change::Ethtool(e) => format!(" to {}", e.after),
                    _ => String::new(),
                };
                let line = format!(
                    "{}: would be set{to} on the machine (not under --root)",
                    c.target()
                );
                Tally::once(&mut tally.said, line);
            }
            Ok(t @ Took::Differs(_)) => Tally::once(
                &mut tally.problems,
                format!("{}: {}", c.target(), render::took_text(&t)),
            ),
            Ok(t) => Tally::once(
                &mut tally.said,
                format!("{}: {}", c.target(), render::took_text(&t)),
            ),
            Err(e) => Tally::once(&mut tally.problems, e.to_string()),
        }
    }
}

/// Applies the NIC's saved settings now, then again whenever `nic` goes from down to up, until the interface is
/// removed or fix's saved settings are gone (rollback) or name another NIC. A failed apply is printed (the unit's
/// log) and the watch goes on: the next bring-up may succeed. Any other interface gets its IRQs kept off the RT
/// core once: that is all fix saved for it.
fn follow(w: &mut dyn Write, host: &Host, nic: &str) -> Result<Outcome> {
    // Subscribed before the first apply and before the state is read: a bring-up in between is not missed.
    let mut events =
        LinkEvents::subscribe().map_err(|e| Error::sys("rtnetlink link notifications", e))?;
    let index = crate::sys::netdev::ifindex(nic);
    let mut up = crate::sys::netdev::is_up(nic);
    if !apply_now(w, host, nic)? {
        return Ok(Outcome::Good);
    }
    // Gone before the unit started, or a chroot whose /sys is not this namespace's: nothing to wait for.
    let Ok(index) = index else {
        outln!(
            w,
            "apply-saved: {nic} is not an interface of this network namespace: applied once, not following"
        );
        return Ok(Outcome::Good);
    };
    outln!(
        w,
        "apply-saved: following {nic}: its settings are applied again each time it is brought up"
    );
    loop {
        let batch = match events.next() {
            Ok(b) => b,
            // The kernel dropped notifications: read the state instead.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                let now = crate::sys::netdev::is_up(nic);
                if now && !up && !apply_now(w, host, nic)? {
                    return Ok(Outcome::Good);
                }
                up = now;
                continue;
            }
            Err(e) => return Err(Error::sys("rtnetlink link notifications", e)),
        };
        for ev in batch.into_iter().filter(|e| e.ifindex == index) {
            if ev.removed {
                outln!(w, "apply-saved: {nic} was removed: no longer following it");
                return Ok(Outcome::Good);
            }
            if ev.is_up() && !up && !apply_now(w, host, nic)? {
                return Ok(Outcome::Good);
            }
            up = ev.is_up();
        }
    }
}

/// One apply of the NIC's saved settings; false when there is nothing (more) to follow: nothing saved, or
/// `nic` is not the saved NIC (then its IRQs were kept off the RT core, once).
fn apply_now(w: &mut dyn Write, host: &Host, nic: &str) -> Result<bool> {
    let Some(s) = load(w, host)? else {
        return Ok(false);
    };
    if let Err(e) = apply(w, host, &s, ApplyScope::Nic(nic)) {
        outln!(w, "apply-saved: {e}");
    }
    Ok(s.nic.as_deref() == Some(nic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> ApplySavedArgs {
        let cli = Cli::try_parse_from(["rmp-eval", "apply-saved"].iter().chain(argv)).unwrap();
        let Some(Command::ApplySaved(a)) = cli.command else {
            panic!("not apply-saved")
        };
        a
    }

    /// In-process, on a tree as a reboot leaves it: the default first, then the IRQ that came up on the RT core,
    /// and what it did goes to the writer given.
    #[test]
    fn apply_saved_prints_through_the_writer_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("sys/devices/system/cpu/online", "0-1\n");
        put("proc/irq/default_smp_affinity", "3\n");
        put("proc/irq/27/smp_affinity_list", "0-1\n");
        put("proc/irq/28/smp_affinity_list", "0\n");
        put(
            "var/lib/rmp-eval/runtime.json",
            r#"{"version": 1, "core": 1, "nic": null, "steps": ["irq_affinity"]}"#,
        );
        let host = Host::with_root(dir.path());
        let mut text = Vec::new();
        let got = execute(&host, Output::plain(), &mut text, &args(&[])).unwrap();
        assert_eq!(got, Outcome::Good);
        let text = String::from_utf8(text).unwrap();
        assert_eq!(
            text, "apply-saved: 2 value(s) written for steps irq_affinity\n",
            "{text}"
        );
        let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
        assert_eq!(read("proc/irq/default_smp_affinity").trim(), "1");
        assert_eq!(read("proc/irq/27/smp_affinity_list").trim(), "0");
        assert_eq!(read("proc/irq/28/smp_affinity_list"), "0\n");
    }
}
