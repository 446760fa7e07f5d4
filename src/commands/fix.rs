//! `rmp-eval fix`: run the checks, propose the remedies of the failing ones (diffs, values, commands), let the
//! user choose, journal, apply, verify, and measure before and after (fix/measure.rs).

mod measure;

use crate::checks::Ctx;
use crate::cli::FixArgs;
use crate::error::{Error, Outcome, Result};
use crate::fix::kind::Took;
use crate::fix::plan::{self, Request};
use crate::fix::trial::pending;
use crate::fix::{Plan, StepId, journal, render};
use crate::host::Host;
use crate::outln;
use crate::output::Output;
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
    let _lock = if acting {
        let lock = journal::lock(host)?;
        // A journal rollback cannot read would be stacked on and never undone: refuse before changing anything.
        let runs = journal::load_all(host).map_err(|e| {
            Error::failed(format!(
                "{e}; fix adds nothing on top of a journal that cannot be rolled back"
            ))
        })?;
        let removed = journal::remove_stale_temps(host, &runs, &crate::fix::known_targets());
        if let Some(line) = journal::removed_temps_line(&removed) {
            if args.json {
                eprintln!("{line}");
            } else {
                outln!(w, "{line}");
            }
        }
        Some(lock)
    } else {
        None
    };
    let ctx = Ctx {
        core,
        nic: args.nic.clone(),
        pid: None,
        smi_seconds: None,
    };
    let findings = crate::registry::run_all(host, &ctx);
    let (mut steps, failed) = plan::from_findings(&findings);
    if let Some(only) = &args.only {
        steps = plan::parse_only(only)?;
    }
    let req = Request {
        core,
        nic: args.nic.clone(),
        steps,
        failed,
        cmdline_extra: vec![],
    };
    let (full, trial) = match args.trial_boot {
        true => pending::tried_first(host, plan::build(host, &req)?),
        false => (plan::build(host, &req)?, None),
    };
    let live = host.is_live();
    if args.core.is_none() && !args.json {
        outln!(w, "{}\n", chosen_core_line(core));
    }
    let refused: Vec<String> = full
        .steps
        .iter()
        .filter_map(|s| s.refusal().map(|r| format!("[{}] refused: {r}", s.id)))
        .collect();
    // What fix cannot make here and the user must (no boot loader): the machine still falls short, exit 1.
    let by_hand: Vec<String> = full
        .steps
        .iter()
        .filter_map(|s| s.by_hand().map(|h| format!("[{}] set by hand: {h}", s.id)))
        .collect();
    if full.is_empty() {
        if args.json {
            outln!(w, "{}", plan_json(&full, core, args.core.is_some()));
        } else {
            outln!(w, "{}", plan_shown(&full, live, out.width));
            if refused.is_empty() && by_hand.is_empty() {
                outln!(
                    w,
                    "Nothing to change: every proposed step is already as wanted."
                );
            } else {
                outln!(
                    w,
                    "Nothing changed: {}",
                    [refused.clone(), by_hand.clone()].concat().join("; ")
                );
            }
        }
        return Ok(if refused.is_empty() && by_hand.is_empty() {
            Outcome::Good
        } else {
            Outcome::ShortFall
        });
    }
    if args.dry_run {
        if args.json {
            outln!(w, "{}", plan_json(&full, core, args.core.is_some()));
        } else {
            outln!(w, "{}", plan_shown(&full, live, out.width));
            outln!(w, "Dry run: nothing was changed.");
        }
        return Ok(Outcome::Good);
    }
    // Under --root the tree is not this machine: measuring here would compare the wrong thing.
    let measuring = !args.no_measure && host.is_live();
    let chosen = if args.yes {
        full
    } else if crate::sys::term::interactive() && !args.json {
        let next = what_next(args, core, measuring);
        match choose(w, host, &req, &full, (live, out.width, &next))? {
            Some(p) => p,
            None => {
                outln!(w, "Nothing applied.");
                return Ok(Outcome::Good);
            }
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
    if !args.no_measure && !host.is_live() && !args.json {
        outln!(
            w,
            "No before/after measurement under --root (the tree is not this machine)."
        );
    }
    // Only kernel values take effect now; files and the command line wait for a service restart or a reboot.
    let now = chosen.changes().any(|c| {
        matches!(
            c,
            crate::fix::Change::Value(_)
                | crate::fix::Change::Ethtool(_)
                | crate::fix::Change::Partition(_)
        )
    });
    let before = if measuring {
        Some(measure::measure(w, host, out, args, core, "before")?)
    } else {
        None
    };
    let on = (core, args.nic.as_deref());
    let report = pending::apply(host, &chosen, trial.as_ref(), on, &req.failed)?;
    // What the kernel refused (managed IRQs) was never fix's value: the monitor must not call it drift.
    let kernel_refused: Vec<String> = report
        .outcomes
        .iter()
        .filter(|o| matches!(o.took, Took::Refused(_) | Took::Unsupported(_)))
        .map(|o| o.target.clone())
        .collect();
    crate::fix::drift::remember_refused(host, &kernel_refused)?;
    if args.json {
        outln!(w, "{}", render::report_json(&report));
    } else {
        outln!(w, "Applied:");
        outln!(w, "{}", render::report_text(&report));
    }
    if let Some(before) = &before
        && now
    {
        measure::after(w, host, out, args, core, before, &report.undo)?;
    }
    let reboot = report.outcomes.iter().any(|o| o.reboot);
    if let (true, Some((_, bpath))) = (reboot, &before) {
        measure::arm_after_boot(host, args, core, bpath)?;
    }
    if let (true, Some(p)) = (args.trial_boot && !args.json, pending::load(host)?) {
        outln!(w, "{}", p.describe());
    }
    if reboot && !args.json {
        let how = if before.is_some() {
            "After it, rmp-eval-after-boot.service measures the \"after\" by itself once the system has settled; \
             `rmp-eval compare` then shows fix's before against it (`rmp-eval check` says while it is pending)."
        } else {
            "Measure with `rmp-eval run` now and again after it; `rmp-eval compare FIRST.json last` compares the two."
        };
        outln!(
            w,
            "Pending reboot: the kernel command line takes effect at the next boot. {how}"
        );
    }
    let short = report
        .outcomes
        .iter()
        .any(|o| matches!(o.took, Took::Differs(_)));
    if !refused.is_empty() && !args.json {
        outln!(w, "Not done: {}", refused.join("; "));
    }
    if !by_hand.is_empty() && !args.json {
        outln!(w, "Not done: {}", by_hand.join("; "));
    }
    Ok(if short || !refused.is_empty() || !by_hand.is_empty() {
        Outcome::ShortFall
    } else {
        Outcome::Good
    })
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
