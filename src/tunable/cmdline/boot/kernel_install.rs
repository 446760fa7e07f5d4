//! systemd-boot / kernel-install: /etc/kernel/cmdline (every line joined), made effective by `kernel-install add`
//! for the running kernel. Without the file kernel-install uses the running command line, so fix starts from it.

use super::BootLoader;
use super::line::{line_change, lossy, skipped_notes};
use super::tokens::{merge_bytes, tokens_bytes};
use super::trial::{NoTrial, Trial};
use super::want::{NoHousekeeping, Want, managed_params};
use crate::fix::kind::command::CommandChange;
use crate::fix::{Change, Step};
use crate::host::Host;
use crate::machine::PROC_CMDLINE;

pub(crate) const KERNEL_CMDLINE: &str = "/etc/kernel/cmdline";
const LOADER_CONFS: &[&str] = &[
    "/boot/efi/loader/loader.conf",
    "/efi/loader/loader.conf",
    "/boot/loader/loader.conf",
];
/// systemd-boot sets this EFI variable when it boots the machine (the Boot Loader Interface).
const LOADER_INFO: &str =
    "/sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

pub(super) struct KernelInstall;

/// What installs the kernel with /etc/kernel/cmdline into the boot entries.
const KERNEL_INSTALL: &str = "kernel-install";

impl BootLoader for KernelInstall {
    fn what(&self) -> &'static str {
        "systemd-boot's /etc/kernel/cmdline or loader.conf"
    }

    fn configured(&self, host: &Host) -> bool {
        host.exists(KERNEL_CMDLINE) || LOADER_CONFS.iter().any(|p| host.exists(p))
    }

    fn booted(&self, host: &Host, _configured: bool) -> Option<&'static str> {
        host.exists(LOADER_INFO)
            .then_some("systemd-boot boots this machine (EFI variable LoaderInfo)")
    }

    fn unused(&self, _: &Host) -> String {
        format!("{KERNEL_CMDLINE} and loader.conf are not used, left as they are")
    }

    fn files(&self) -> &'static [&'static str] {
        &[KERNEL_CMDLINE]
    }

    fn program(&self) -> Option<&'static str> {
        Some(KERNEL_INSTALL)
    }

    fn plan(&self, host: &Host, want: &Want, s: &mut Step) -> Result<(), NoHousekeeping> {
        let before = host.read_bytes(KERNEL_CMDLINE).ok();
        let base: Vec<Vec<u8>> = match &before {
            // kernel-install joins every line of the file.
            Some(b) => tokens_bytes(b),
            // kernel-install falls back to the running command line: start from it, minus the loader's own.
            None => tokens_bytes(host.read(PROC_CMDLINE).unwrap_or_default().as_bytes())
                .into_iter()
                .filter(|t| !t.starts_with(b"BOOT_IMAGE=") && !t.starts_with(b"initrd="))
                .collect(),
        };
        let (managed, skipped) = managed_params(&lossy(&base), want)?;
        if let Some(n) = want.released_note() {
            s.note(n);
        }
        let shown = String::from_utf8_lossy(&merge_bytes(&base, &managed).join(&b' ')).into_owned();
        if let Some(c) = line_change(KERNEL_CMDLINE, before, &base, &managed, true, b"") {
            s.changes.push(c);
            let rel = host.kernel_release().unwrap_or_default();
            if !rel.is_empty() {
                let argv = [KERNEL_INSTALL, "add", &rel, &format!("/boot/vmlinuz-{rel}")]
                    .map(String::from);
                s.changes.push(Change::Command(CommandChange {
                    argv: argv.to_vec(),
                    again_on_rollback: true,
                    reboot: true,
                }));
            }
        }
        s.note(format!(
            "systemd-boot / kernel-install ({KERNEL_CMDLINE}): {shown}"
        ));
        skipped_notes(s, &skipped);
        Ok(())
    }

    fn trial(&self, host: &Host, params: &[String]) -> Result<Trial, NoTrial> {
        super::sd_trial::plan(host, params)
    }
}
