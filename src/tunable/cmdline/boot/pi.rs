//! Raspberry Pi firmware: the first line of cmdline.txt (/boot/firmware on current Raspberry Pi OS, /boot on
//! older ones), read at every boot; nothing to run after editing it.

use super::BootLoader;
use super::line::{line_change, lossy, skipped_notes};
use super::tokens::{split_first_line, tokens_bytes};
use super::trial::{NoTrial, Trial};
use super::want::{NoHousekeeping, Want, managed_params};
use crate::fix::Step;
use crate::host::Host;
use crate::machine::DT_MODEL;

const PI_CMDLINES: &[&str] = &["/boot/firmware/cmdline.txt", "/boot/cmdline.txt"];

pub(super) struct PiFirmware;

/// The cmdline.txt this machine has (the first of `PI_CMDLINES` when none).
pub(super) fn cmdline_txt(host: &Host) -> Option<&'static str> {
    PI_CMDLINES.iter().copied().find(|p| host.exists(p))
}

impl BootLoader for PiFirmware {
    fn what(&self) -> &'static str {
        "a Raspberry Pi cmdline.txt"
    }

    fn configured(&self, host: &Host) -> bool {
        cmdline_txt(host).is_some()
    }

    fn booted(&self, host: &Host, configured: bool) -> Option<&'static str> {
        let pi = host
            .read(DT_MODEL)
            .is_ok_and(|m| m.starts_with("Raspberry Pi"));
        (pi && configured)
            .then_some("the Raspberry Pi firmware boots this machine (device-tree model)")
    }

    fn unused(&self, host: &Host) -> String {
        format!(
            "{} is not used, left as it is",
            cmdline_txt(host).unwrap_or(PI_CMDLINES[0])
        )
    }

    fn files(&self) -> &'static [&'static str] {
        PI_CMDLINES
    }

    fn plan(&self, host: &Host, want: &Want, s: &mut Step) -> Result<(), NoHousekeeping> {
        let path = cmdline_txt(host).unwrap_or(PI_CMDLINES[0]);
        let before = host.read_bytes(path).ok();
        let all = before.clone().unwrap_or_default();
        // The firmware reads the first line only; the others (notes, a commented parameter) stay as they are.
        let (first, rest) = split_first_line(&all);
        let base = tokens_bytes(first);
        let (managed, skipped) = managed_params(&lossy(&base), want)?;
        if let Some(n) = want.released_note() {
            s.note(n);
        }
        let newline = first.ends_with(b"\n") || before.is_none();
        s.changes.extend(line_change(
            path,
            before.clone(),
            &base,
            &managed,
            newline,
            rest,
        ));
        skipped_notes(s, &skipped);
        Ok(())
    }

    fn trial(&self, host: &Host, params: &[String]) -> Result<Trial, NoTrial> {
        super::pi_trial::plan(host, params)
    }
}
