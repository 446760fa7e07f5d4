//! GRUB: the command-line step's plan for /etc/default/grub and its drop-ins. The managed parameters go into /var/lib/rmp-eval/cmdline, read by
//! our drop-in in /etc/default/grub.d. Every candidate layout is evaluated as grub-mkconfig would source it, read
//! and never run (grub_source.rs), and accepted only when the result has each managed parameter once, with our value, and every
//! other parameter of the user's byte for byte, in order. When a drop-in sorting after 99-rmp-eval.cfg undoes
//! ours, the drop-in is placed later (zz-rmp-eval.cfg); when no placement works, the step is refused.

use super::BootLoader;
use super::grub_layout::{
    self as files, DROPIN, DROPIN_NAME, GrubError, LATE_NAME, Layout, is_ours,
};
use super::grub_source::{self as source, Effective};
use super::line::skipped_notes;
use super::tokens::{is_safe_token, merge_into, name, same_name, tokens};
use super::trial::{NoTrial, Trial};
use super::want::{NoHousekeeping, Want, managed_params};
use crate::fix::kind::command::CommandChange;
use crate::fix::kind::file::{CmdlineEdit, FileChange};
use crate::fix::{CMDLINE_STATE, Change, Step};
use crate::host::Host;
use crate::machine::PROC_CMDLINE;

pub(super) struct Grub;

/// What turns /etc/default/grub into the boot configuration.
const UPDATE_GRUB: &str = "update-grub";

impl BootLoader for Grub {
    fn what(&self) -> &'static str {
        "GRUB's /etc/default/grub"
    }

    fn configured(&self, host: &Host) -> bool {
        // The package installs its own drop-in into /etc/default/grub.d on every machine, a Raspberry Pi too:
        // only /etc/default/grub or another drop-in says that GRUB is configured.
        host.exists(files::GRUB_DEFAULT)
            || host
                .list(files::GRUB_D)
                .unwrap_or_default()
                .iter()
                .any(|n| n.ends_with(".cfg") && n != DROPIN_NAME)
    }

    fn booted(&self, host: &Host, configured: bool) -> Option<&'static str> {
        let running = host.read(PROC_CMDLINE).unwrap_or_default();
        let image = tokens(&running)
            .iter()
            .any(|t| t.starts_with("BOOT_IMAGE="));
        (image && configured)
            .then_some("GRUB boots this machine (BOOT_IMAGE= on the running command line)")
    }

    fn unused(&self, _: &Host) -> String {
        format!("{} is not used, left as it is", files::GRUB_DEFAULT)
    }

    fn files(&self) -> &'static [&'static str] {
        files::FILES
    }

    fn program(&self) -> Option<&'static str> {
        Some(UPDATE_GRUB)
    }

    fn plan(&self, host: &Host, want: &Want, s: &mut Step) -> Result<(), NoHousekeeping> {
        plan(host, want, s)
    }

    fn trial(&self, host: &Host, params: &[String]) -> Result<Trial, NoTrial> {
        super::grub_trial::plan(host, params)
    }
}

/// Why a placement of our drop-in is not taken.
#[derive(Debug, thiserror::Error)]
enum Unfit {
    #[error("GRUB: {0}")]
    Grub(#[from] GrubError),
    #[error("{name} would be {got}, not {want}")]
    Differs {
        name: String,
        got: String,
        want: String,
    },
    #[error("{name}= would be on the command line {times} times")]
    Times { name: String, times: usize },
    #[error("the other parameters would not stay as they are")]
    OthersChange,
}

/// The first line of drop-ins older versions of rmp-eval wrote: those are ours to update.
const OURS_HEADER: &[u8] = b"# /etc/default/grub.d/99-rmp-eval.cfg -- installed by rmp-eval.";

/// Whether `after` is what we want: each of `state` once and as is, and the user's other parameters unchanged.
fn check(after: &Effective, user: &[String], state: &[String]) -> Result<(), Unfit> {
    let p = after.params();
    for t in state {
        let same: Vec<&String> = p.iter().filter(|x| same_name(name(x), name(t))).collect();
        match same.as_slice() {
            [one] if *one == t => {}
            [one] => {
                return Err(Unfit::Differs {
                    name: name(t).to_string(),
                    got: one.to_string(),
                    want: t.clone(),
                });
            }
            many => {
                return Err(Unfit::Times {
                    name: name(t).to_string(),
                    times: many.len(),
                });
            }
        }
    }
    let rest: Vec<&String> = p
        .iter()
        .filter(|x| !state.iter().any(|t| same_name(name(t), name(x))))
        .collect();
    if rest
        .iter()
        .map(|s| s.as_str())
        .ne(user.iter().map(|s| s.as_str()))
    {
        return Err(Unfit::OthersChange);
    }
    Ok(())
}

fn plan(host: &Host, want: &Want, s: &mut Step) -> Result<(), NoHousekeeping> {
    let layout = match Layout::read(host) {
        Ok(l) => l,
        Err(e) => {
            s.refuse(format!("GRUB: {e}"));
            return Ok(());
        }
    };
    for (n, b) in layout.dropins.iter().filter(|(n, _)| is_ours(n)) {
        if b != DROPIN.as_bytes() && !b.starts_with(OURS_HEADER) {
            s.refuse(format!(
                "{}/{n} is not the drop-in rmp-eval installs (edited?): restore or remove it, then run fix again",
                files::GRUB_D
            ));
            return Ok(());
        }
    }
    let state_before = host.read_bytes(CMDLINE_STATE).ok();
    let state_bytes = state_before.clone().unwrap_or_default();
    let state = tokens(&String::from_utf8_lossy(&state_bytes));
    // Ours as this version writes them: an older version's drop-in is replaced.
    let existing: Vec<String> = layout
        .dropins
        .iter()
        .filter(|(n, _)| is_ours(n))
        .map(|(n, _)| n.clone())
        .collect();
    let current = layout_with(&layout, &existing);
    let eval = |l: &Layout, st: &[u8]| source::evaluate(l, st).map_err(Unfit::Grub);
    let before = eval(&current, &state_bytes).and_then(|before| {
        // Without our drop-in or its state, what is configured now is the user's own.
        let user = if existing.is_empty() || state.is_empty() {
            before.clone()
        } else {
            eval(&layout.with_ours(None), b"")?
        };
        Ok((before, user))
    });
    let (before, user) = match before {
        Ok(both) => both,
        Err(e) => {
            s.refuse(e.to_string());
            return Ok(());
        }
    };
    let want = &want.released_unless_users(&user.params());
    let (managed, skipped) = managed_params(&before.params(), want)?;
    if let Some(n) = want.released_note() {
        s.note(n);
    }
    let new_state = merge_into(&state, &managed);
    if let Some(bad) = new_state.iter().find(|t| !is_safe_token(t)) {
        s.refuse(format!(
            "{CMDLINE_STATE}: {bad} is not a parameter fix can hand to GRUB"
        ));
        return Ok(());
    }
    let user_rest: Vec<String> = user
        .params()
        .into_iter()
        .filter(|x| !new_state.iter().any(|t| same_name(name(t), name(x))))
        .collect();
    let line = format!("{}\n", new_state.join(" ")).into_bytes();
    let mut reasons = Vec::new();
    let mut chosen = None;
    let last = layout
        .dropins
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !is_ours(n))
        .max()
        .unwrap_or("");
    let late = files::name_after(last);
    let mut tried: Vec<&str> = Vec::new();
    for cand in [DROPIN_NAME, LATE_NAME, late.as_str()] {
        if tried.contains(&cand) {
            continue;
        }
        tried.push(cand);
        let mut names = existing.clone();
        if !names.iter().any(|n| n == cand) {
            names.push(cand.to_string());
        }
        let l = layout_with(&layout, &names);
        match eval(&l, &line).and_then(|a| check(&a, &user_rest, &new_state).map(|()| a)) {
            Ok(a) => {
                chosen = Some((names, a));
                break;
            }
            Err(why) => reasons.push(format!("with {cand}: {why}")),
        }
        // Already in place and not enough: only a later name can help.
    }
    let Some((names, after)) = chosen else {
        s.refuse(format!(
            "no place for the drop-in gives the wanted command line ({}); a drop-in in {} that sorts after \
             ours changes it: merge the parameters there by hand",
            reasons.join("; "),
            files::GRUB_D
        ));
        return Ok(());
    };
    for n in &names {
        let path = format!("{}/{n}", files::GRUB_D);
        let now = layout
            .dropins
            .iter()
            .find(|(x, _)| x == n)
            .map(|(_, b)| b.clone());
        if now.as_deref() != Some(DROPIN.as_bytes()) {
            s.changes.push(Change::File(FileChange::new(
                &path,
                now,
                DROPIN.as_bytes().to_vec(),
                true,
            )));
        }
    }
    if new_state != state {
        let mut c = FileChange::new(CMDLINE_STATE, state_before, line, true);
        c.cmdline = Some(CmdlineEdit {
            added: managed.clone(),
            replaced: state
                .iter()
                .filter(|t| managed.iter().any(|m| same_name(name(m), name(t))))
                .cloned()
                .collect(),
        });
        s.changes.push(Change::File(c));
    }
    if !s.changes.is_empty() {
        s.changes.push(Change::Command(CommandChange {
            argv: vec![UPDATE_GRUB.to_string()],
            again_on_rollback: true,
            reboot: true,
        }));
    }
    s.note(format!(
        "GRUB, normal entries, now:   `{}`",
        before.params().join(" ")
    ));
    s.note(format!(
        "GRUB, normal entries, after: `{}`",
        after.params().join(" ")
    ));
    skipped_notes(s, &skipped);
    Ok(())
}

/// `layout` with our drop-in under each of `names`, as this version writes it.
fn layout_with(layout: &Layout, names: &[String]) -> Layout {
    let mut l = layout.with_ours(None);
    for n in names {
        l.dropins.push((n.clone(), DROPIN.as_bytes().to_vec()));
    }
    // The shell sorts the glob; the order here does not matter.
    l
}
