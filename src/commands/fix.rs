//! `rmp-eval fix`: run the checks, propose the remedies of the failing ones (diffs, values, commands), let the
//! user choose, journal, apply, verify, and measure before and after (fix/measure.rs).

mod measure;

use crate::cli::FixArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::apply::Report;
use crate::fix::journal::Held;
use crate::fix::plan::{self, Request};
use crate::fix::trial::pending;
use crate::fix::{NotDone, Plan, StepId, render};
use crate::host::Host;
use crate::measure::result::store::RunLabel;
use crate::outln;
use crate::output::Output;
use crate::tunable::cmdline::boot::trial::Trial;
use std::io::Write;

/// The RT core fix tunes: --core, else the last online CPU (as check and run choose it).
pub(crate) fn check_core(host: &Host, core: Option<usize>) -> Result<usize> {
    let chosen = crate::machine::validate_core(host, core)?;
    if chosen == 0 {
        return Err(Error::usage(match core {
            Some(_) => {
                "--core 0 refused: CPU 0 carries the housekeeping (boot-time IRQs, timers, RCU) and cannot be \
                 isolated; pick another CPU"
            }
            None => {
                "this machine has one online CPU (0): nothing can be isolated for the RT thread"
            }
        }));
    }
    Ok(chosen)
}

/// The line that heads the plan when --core did not name the core: fix changes the machine for it.
fn chosen_core_line(core: usize) -> String {
    format!(
        "RT core: CPU {core}, the last online CPU (no --core given; `--core N` tunes another). The steps below \
         isolate it."
    )
}

/// The plan as shown: its prose (why, notes, risks, what is left out or to do by hand) wrapped at the output's
/// width in terminal cells without breaking a word or a `command`; the changes themselves (diff lines, values,
/// commands fix runs) are left whole, as they would be copied.
fn plan_shown(plan: &Plan, live: bool, width: usize) -> String {
    const PROSE: [&str; 6] = ["why: ", "note: ", "risk: ", "NOT DONE", "refused", "["];
    render::plan_text(plan, live)
        .split_inclusive('\n')
        .map(|l| {
            if PROSE.iter().any(|p| l.trim_start().starts_with(p)) {
                crate::report::table::fit(l, width)
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// The plan's JSON with the core it is for.
fn plan_json(plan: &Plan, core: usize, given: bool) -> serde_json::Value {
    let mut v = render::plan_json(plan);
    v["core"] = core.into();
    v["core_chosen"] = (if given { "--core" } else { "last_online_cpu" }).into();
    v
}

/// The terminal path: the whole plan first (diffs, devices, risks), then one question — the step picker (all
/// proposed steps preselected), whose Enter applies the pick and whose prompt says what follows (`next`). Enter with
/// nothing picked asks again; Esc or q leaves without changing anything.
fn choose(
    w: &mut dyn Write,
    host: &Host,
    req: &Request,
    plan: &Plan,
    (live, width, next): (bool, usize, &str),
) -> Result<Option<Plan>> {
    use dialoguer::MultiSelect;
    let prompt = |e: dialoguer::Error| Error::failed(format!("prompt: {e}"));
    outln!(w, "{}", plan_shown(plan, live, width));
    // Persistence follows from the runtime steps picked; it is not a choice of its own.
    let candidates: Vec<&crate::fix::Step> = plan
        .steps
        .iter()
        .filter(|s| !s.changes.is_empty() && s.id != StepId::Persist)
        .collect();
    let items: Vec<String> = candidates.iter().map(|s| render::pick_item(s)).collect();
    let mut defaults = vec![true; items.len()];
    outln!(w, "Enter applies the steps picked below: {next}.");
    loop {
        let picked = MultiSelect::new()
            .with_prompt("Steps to apply (space toggles, Enter applies, Esc or q leaves)")
            .items(&items)
            .defaults(&defaults)
            .interact_opt()
            .map_err(prompt)?;
        let Some(picked) = picked else {
            return Ok(None);
        };
        defaults = (0..items.len()).map(|i| picked.contains(&i)).collect();
        let ids: Vec<StepId> = picked.iter().map(|&i| candidates[i].id).collect();
        let chosen = plan::select(host, req, plan, &ids);
        if chosen.is_empty() {
            outln!(
                w,
                "No step picked: pick one with space, or leave with Esc or q."
            );
            continue;
        }
        let n = chosen.changes().count();
        let names: Vec<String> = chosen.steps.iter().map(|s| s.id.to_string()).collect();
        outln!(
            w,
            "Picked: {} ({n} change(s), shown above).",
            names.join(", ")
        );
        return Ok(Some(chosen));
    }
}

/// What happens once the user says yes, for the picker's line: the measurements and how long each takes.
fn what_next(args: &FixArgs, core: usize, measuring: bool) -> String {
    if measuring {
        let s = args.measure_seconds;
        format!(
            "first {s} s measuring CPU {core} as it is (\"before\"), then the changes, then {s} s measuring again \
             (\"after\", for the changes that take effect now) and the comparison; q or Ctrl+C during the before \
             stops fix with nothing changed"
        )
    } else {
        "the changes, then what each took (no measurement)".to_string()
    }
}

pub(crate) fn execute(
    host: &Host,
    out: Output,
    w: &mut dyn Write,
    args: &FixArgs,
) -> Result<Outcome> {
    if args.status {
        return trial_status(host, w);
    }
    let core = check_core(host, args.core)?;
    if let Some(n) = &args.nic {
        crate::checks::nic::require(host, n)?;
    }
    // Whoever may change something locks first, before reading any state, and holds the lock through the
    // prompts: a plan made before another fix or rollback finished would be stale.
    let acting = !args.dry_run && (args.yes || (crate::sys::term::interactive() && !args.json));
    let _held = match acting {
        true => Some(hold(host, w, args)?),
        false => None,
    };
    let req = plan::request(host, core, args.nic.clone(), args.only.as_deref())?;
    let (full, trial) = match args.trial_boot {
        true => pending::tried_first(host, plan::build(host, &req)?),
        false => (plan::build(host, &req)?, None),
    };
    if args.core.is_none() && !args.json {
        outln!(w, "{}\n", chosen_core_line(core));
    }
    let left = full.not_done();
    if full.is_empty() || args.dry_run {
        return shown_only(w, host, out, args, (&full, core), &left);
    }
    // Under --root the tree is not this machine: measuring here would compare the wrong thing.
    let measuring = !args.no_measure && host.is_live();
    let Some(chosen) = chosen(w, host, out, args, (&req, full), measuring)? else {
        outln!(w, "Nothing applied.");
        return Ok(Outcome::Good);
    };
    let (report, measured) = applied(
        w,
        (host, out),
        args,
        (&req, &chosen, trial.as_ref()),
        measuring,
    )?;
    closing(w, host, args, (&report, measured), &left)?;
    Ok(if report.short() || !left.is_empty() {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}

/// The journal locked and read (one that rollback cannot read refuses fix: it would be stacked on and never
/// undone), and what a killed run left half-written removed, said beside the report.
fn hold(host: &Host, w: &mut dyn Write, args: &FixArgs) -> Result<Held> {
    let held = Held::take(host, |e| {
        Error::failed(format!(
            "{e}; fix adds nothing on top of a journal that cannot be rolled back"
        ))
    })?;
    if let Some(line) = held.clean_temps(host) {
        super::note(w, args.json, &line);
    }
    Ok(held)
}

/// The plan shown and nothing changed: a dry run, or a plan with nothing to change (every step as wanted, or what
/// is left refused or to be set by hand: then the machine still falls short).
fn shown_only(
    w: &mut dyn Write,
    host: &Host,
    out: Output,
    args: &FixArgs,
    (plan, core): (&Plan, usize),
    left: &NotDone,
) -> Result<Outcome> {
    if args.json {
        outln!(w, "{}", plan_json(plan, core, args.core.is_some()));
    } else {
        outln!(w, "{}", plan_shown(plan, host.is_live(), out.width));
        if !plan.is_empty() {
            outln!(w, "Dry run: nothing was changed.");
        } else if left.is_empty() {
            outln!(
                w,
                "Nothing to change: every proposed step is already as wanted."
            );
        } else {
            outln!(w, "Nothing changed: {}", left.lines().join("; "));
        }
    }
    Ok(if plan.is_empty() && !left.is_empty() {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
}

/// The plan to apply: all of it with --yes, else what the user picks on the terminal (None: nothing); with
/// neither, nothing is changed and the user is told how.
fn chosen(
    w: &mut dyn Write,
    host: &Host,
    out: Output,
    args: &FixArgs,
    (req, full): (&Request, Plan),
    measuring: bool,
) -> Result<Option<Plan>> {
    let live = host.is_live();
    let chosen = if args.yes {
        full
    } else if crate::sys::term::interactive() && !args.json {
        let next = what_next(args, req.core, measuring);
        match choose(w, host, req, &full, (live, out.width, &next))? {
            Some(p) => p,
            None => return Ok(None),
        }
    } else {
        if !args.json {
            outln!(w, "{}", plan_shown(&full, live, out.width));
        }
        return Err(Error::usage(
            "no terminal to ask on: nothing was changed; pass --yes to apply the plan (or --dry-run to only show it)",
        ));
    };
    if args.yes && !args.json {
        outln!(w, "{}", plan_shown(&chosen, live, out.width));
    }
    if !args.no_measure && !live && !args.json {
        outln!(
            w,
            "No before/after measurement under --root (the tree is not this machine)."
        );
    }
    Ok(Some(chosen))
}

/// The changes made and said, between the before measurement and the after: the after only when something
/// takes effect now (files and the command line wait for a restart or a reboot); the after-boot measurement
/// armed when something waits for the reboot. Whether the before was measured comes back with the report.
fn applied(
    w: &mut dyn Write,
    (host, out): (&Host, Output),
    args: &FixArgs,
    (req, chosen, trial): (&Request, &Plan, Option<&Trial>),
    measuring: bool,
) -> Result<(Report, bool)> {
    let core = req.core;
    let before = match measuring {
        true => Some(measure::measure(
            w,
            host,
            out,
            args,
            core,
            RunLabel::Before,
        )?),
        false => None,
    };
    let on = (core, args.nic.as_deref());
    let report = pending::apply(host, chosen, trial, on, &req.failed)?;
    if args.json {
        outln!(w, "{}", render::report_json(&report));
    } else {
        outln!(w, "Applied:");
        outln!(w, "{}", render::report_text(&report));
    }
    if let Some(before) = &before
        && chosen.takes_effect_now()
    {
        measure::after(w, host, out, args, core, before, &report.undo)?;
    }
    if let (true, Some((_, bpath))) = (report.reboot(), &before) {
        measure::arm_after_boot(host, args, core, bpath)?;
    }
    Ok((report, before.is_some()))
}

/// What the reboot to come brings, and how the after is measured then.
fn reboot_line(measured: bool) -> String {
    let how = if measured {
        "After it, rmp-eval-after-boot.service measures the \"after\" by itself once the system has settled; \
         `rmp-eval compare` then shows fix's before against it (`rmp-eval check` says while it is pending)."
    } else {
        "Measure with `rmp-eval run` now and again after it; `rmp-eval compare FIRST.json last` compares the two."
    };
    format!("Pending reboot: the kernel command line takes effect at the next boot. {how}")
}

/// The lines after the report: the trial boot armed, the reboot to come, and what the plan left undone.
fn closing(
    w: &mut dyn Write,
    host: &Host,
    args: &FixArgs,
    (report, measured): (&Report, bool),
    left: &NotDone,
) -> Result<()> {
    if let (true, Some(p)) = (args.trial_boot && !args.json, pending::load(host)?) {
        outln!(w, "{}", p.describe());
    }
    if args.json {
        return Ok(());
    }
    if let Some(f) = &report.boot_flush {
        outln!(w, "{f}");
    }
    if report.reboot() {
        outln!(w, "{}", reboot_line(measured));
    }
    for lines in [&left.refused, &left.by_hand] {
        if !lines.is_empty() {
            outln!(w, "Not done: {}", lines.join("; "));
        }
    }
    Ok(())
}

/// `fix --status`: where fix's trial boot is, or how the last one ended.
fn trial_status(host: &Host, w: &mut dyn Write) -> Result<Outcome> {
    match pending::status(host)? {
        Some(p) => {
            outln!(w, "{}", p.describe());
            if let Some(j) = &p.judged {
                outln!(w, "  {j}");
            }
        }
        None => outln!(w, "fix has armed no trial boot (`fix --trial-boot`)."),
    }
    Ok(Outcome::Good)
}
