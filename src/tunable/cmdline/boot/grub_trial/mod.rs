//! GRUB's trial boot, as grub-reboot does it: a one-time menu entry — a copy of the entry that booted this
//! machine (matched by BOOT_IMAGE=) with the trial's command line — in /boot/grub/custom.cfg, which the
//! generated grub.cfg sources (41_custom) without update-grub, and `next_entry=rmp-eval-trial` in grubenv.
//! grub.cfg's header boots next_entry once and clears it with save_env before booting it, so a trial that never
//! comes up is followed by the default entry, which is never touched. Refused where GRUB cannot clear it
//! (save_env does not write to btrfs, ZFS, LVM or RAID): there the trial would boot at every start.

use super::tokens::tokens;
use super::trial::{NoTrial, Trial, trial_line};
use crate::fix::Change;
use crate::fix::kind::file::FileChange;
use crate::host::Host;
use crate::machine::PROC_CMDLINE;

pub(crate) const GRUB_CFG: &str = "/boot/grub/grub.cfg";
pub(crate) const GRUBENV: &str = "/boot/grub/grubenv";
pub(crate) const CUSTOM_CFG: &str = "/boot/grub/custom.cfg";
/// The trial entry's id, as next_entry names it.
pub(crate) const TRIAL_ID: &str = "rmp-eval-trial";
const MARK: &str = "### rmp-eval trial boot";
const ENV_HEADER: &[u8] = b"# GRUB Environment Block\n";
const ENV_SIZE: usize = 1024;

/// The lines of the first menu entry (at any submenu depth) whose `linux` line loads `image`.
pub(crate) fn entry_of<'a>(cfg: &'a str, image: &str) -> Option<Vec<&'a str>> {
    let lines: Vec<&str> = cfg.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if !(l.trim_start().starts_with("menuentry ") && l.trim_end().ends_with('{')) {
            continue;
        }
        let mut depth = 0usize;
        for (j, m) in lines[i..].iter().enumerate() {
            let t = m.trim();
            if t.ends_with('{') {
                depth += 1;
            } else if t == "}" {
                depth = depth.saturating_sub(1);
            }
            if depth == 0 {
                let entry = &lines[i..=i + j];
                let loads = entry.iter().any(|e| {
                    let mut w = e.split_whitespace();
                    w.next() == Some("linux") && w.next() == Some(image)
                });
                if loads {
                    return Some(entry.to_vec());
                }
                break;
            }
        }
    }
    None
}

/// The trial entry: `entry` renamed and given `line` as the kernel's parameters. Returns it and the entry's
/// own parameters.
fn trial_entry(entry: &[&str], params: &[String]) -> Result<(String, Vec<String>), NoTrial> {
    let mut out = format!("{MARK}: booted once through next_entry, removed when judged\n");
    out.push_str(&format!(
        "menuentry 'rmp-eval trial boot' --id '{TRIAL_ID}' {{\n"
    ));
    let mut line = None;
    for l in &entry[1..entry.len() - 1] {
        let t = l.trim_start();
        let mut w = t.split_whitespace();
        if w.next() == Some("linux") {
            let image = w.next().unwrap_or_default();
            let base: Vec<String> = w.map(String::from).collect();
            let new = trial_line(&base, params)?;
            out.push_str(&format!("\tlinux\t{image} {}\n", new.join(" ")));
            line = Some(new);
        } else {
            out.push_str(&format!("\t{t}\n"));
        }
    }
    out.push_str("}\n");
    let line = line.ok_or_else(|| NoTrial(format!("{GRUB_CFG}: the entry has no linux line")))?;
    Ok((out, line))
}

/// grubenv with next_entry set to the trial (GRUB's format: its header, NAME=VALUE lines, `#` up to 1024 bytes).
pub(crate) fn with_next_entry(env: Option<&[u8]>) -> Result<Vec<u8>, NoTrial> {
    let bad = |why: &str| NoTrial(format!("{GRUBENV}: {why}"));
    let env = env.unwrap_or(ENV_HEADER);
    if !env.starts_with(ENV_HEADER) || (env.len() != ENV_SIZE && env != ENV_HEADER) {
        return Err(bad(
            "not a GRUB environment block (1024 bytes, GRUB's header)",
        ));
    }
    let text = String::from_utf8_lossy(env);
    let body = text.trim_end_matches('#');
    let mut out = String::new();
    for l in body.lines() {
        if !l.starts_with("next_entry=") {
            out.push_str(l);
            out.push('\n');
        }
    }
    out.push_str(&format!("next_entry={TRIAL_ID}\n"));
    if out.len() > ENV_SIZE {
        return Err(bad("no room left for next_entry"));
    }
    let mut bytes = out.into_bytes();
    bytes.resize(ENV_SIZE, b'#');
    Ok(bytes)
}

/// Whether `now` is grubenv as fix wrote it (`written`) after GRUB booted the trial: grub.cfg's header clears
/// next_entry with save_env (the value emptied in place, the block padded back to its size), grub-editenv
/// unsets it (the line gone). That is the trial working, not someone's edit: rollback restores the file.
pub(crate) fn cleared_by_grub(path: &str, written: &[u8], now: &[u8]) -> bool {
    let set = format!("next_entry={TRIAL_ID}\n");
    let text = String::from_utf8_lossy(written);
    if path != GRUBENV || written.len() != ENV_SIZE || !text.contains(&set) {
        return false;
    }
    ["next_entry=\n", ""].iter().any(|cleared| {
        let mut b = text.replacen(&set, cleared, 1).into_bytes();
        b.resize(ENV_SIZE, b'#');
        b == now
    })
}

/// Whether GRUB can clear next_entry where grubenv lives: not on btrfs, ZFS, LVM or software RAID.
fn save_env_works(mounts: &str) -> Result<(), NoTrial> {
    let best = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && "/boot/grub/".starts_with(&format!("{}/", f[1].trim_end_matches('/'))))
                .then(|| (f[1].len(), f[0], f[2]))
        })
        .max_by_key(|&(n, _, _)| n);
    match best {
        Some((_, dev, fs))
            if ["btrfs", "zfs"].contains(&fs)
                || dev.starts_with("/dev/md")
                || dev.starts_with("/dev/mapper/") =>
        {
            Err(NoTrial(format!(
                "/boot/grub is on {dev} ({fs}), where GRUB cannot clear next_entry: the trial entry would boot at \
                 every start"
            )))
        }
        _ => Ok(()),
    }
}

pub(crate) fn plan(host: &Host, params: &[String]) -> Result<Trial, NoTrial> {
    let read = |p: &str| host.read(p).map_err(|e| NoTrial(format!("{p}: {e}")));
    let cfg = read(GRUB_CFG)?;
    if !cfg.contains("save_env next_entry") || !cfg.contains("custom.cfg") {
        return Err(NoTrial(format!(
            "{GRUB_CFG} does not boot next_entry once or does not source custom.cfg (not made by grub-mkconfig?)"
        )));
    }
    save_env_works(&host.read(crate::cgroup::MOUNTS).unwrap_or_default())?;
    let running = tokens(&read(PROC_CMDLINE)?);
    let image = running
        .iter()
        .find_map(|t| t.strip_prefix("BOOT_IMAGE="))
        .ok_or_else(|| NoTrial("no BOOT_IMAGE= on the running command line".into()))?;
    let entry = entry_of(&cfg, image)
        .ok_or_else(|| NoTrial(format!("{GRUB_CFG} has no entry that loads {image}")))?;
    let (text, line) = trial_entry(&entry, params)?;
    let custom = host.read_bytes(CUSTOM_CFG).ok();
    if custom
        .as_deref()
        .is_some_and(|c| String::from_utf8_lossy(c).contains(MARK))
    {
        return Err(NoTrial(format!(
            "{CUSTOM_CFG} already holds a trial entry (a trial not judged yet)"
        )));
    }
    let mut after = custom.clone().unwrap_or_default();
    if !after.is_empty() && !after.ends_with(b"\n") {
        after.push(b'\n');
    }
    after.extend_from_slice(text.as_bytes());
    let env = host.read_bytes(GRUBENV).ok();
    let new_env = with_next_entry(env.as_deref())?;
    Ok(Trial {
        changes: vec![
            Change::File(FileChange::new(CUSTOM_CFG, custom, after, true)),
            Change::File(FileChange::new(GRUBENV, env, new_env, true)),
        ],
        cmdline: line,
        reboot: vec!["systemctl".into(), "reboot".into()],
        how: format!(
            "GRUB: a one-time entry '{TRIAL_ID}' in {CUSTOM_CFG} and next_entry in {GRUBENV} (as grub-reboot); \
             the default entry is not touched"
        ),
    })
}

#[cfg(test)]
mod tests;
