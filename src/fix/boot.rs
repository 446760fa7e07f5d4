//! The kernel command-line step: find out which boot loader boots this machine, merge the managed parameters
//! with what is configured, and propose the file changes and the command that make them reach the next boot.
//! GRUB's planner: grub_plan.rs. A loader it cannot tell, or a layout it cannot follow, is refused with a reason.

use super::cmdline::{
    Want, managed_params, merge_bytes, replaced, split_first_line, tokens, tokens_bytes,
};
use super::kind::command::CommandChange;
use super::kind::file::{CmdlineEdit, FileChange};
use super::{Change, Step, StepId, grub, grub_plan};
use crate::host::Host;

pub(crate) const KERNEL_CMDLINE: &str = "/etc/kernel/cmdline";
const PROC_CMDLINE: &str = "/proc/cmdline";
const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
const LOADER_CONFS: &[&str] = &[
    "/boot/efi/loader/loader.conf",
    "/efi/loader/loader.conf",
    "/boot/loader/loader.conf",
];
/// systemd-boot sets this EFI variable when it boots the machine (the Boot Loader Interface).
const LOADER_INFO: &str =
    "/sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";
const DT_MODEL: &str = "/proc/device-tree/model";
const CPU_DIR: &str = "/sys/devices/system/cpu";
const INTEL_IDLE: &str = "/sys/module/intel_idle";
const ACPI_PROCESSOR: &str = "/sys/module/processor";
pub(crate) const PI_CMDLINES: &[&str] = &["/boot/firmware/cmdline.txt", "/boot/cmdline.txt"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Loader {
    /// /etc/default/grub (+ grub.d), made effective by update-grub.
    Grub,
    /// systemd-boot / kernel-install: /etc/kernel/cmdline, made effective by kernel-install.
    KernelInstall,
    /// Raspberry Pi firmware: the first line of cmdline.txt, read at every boot.
    PiFirmware(&'static str),
    None,
    /// Configurations of several loaders and nothing saying which one boots: why.
    Unknown(String),
}

/// Which loader boots the machine: what the running system says first (systemd-boot's EFI variable, GRUB's
/// BOOT_IMAGE= on the command line, a Raspberry Pi's device tree), then which configuration exists. Notes say
/// what was found and left alone.
pub(crate) fn detect(host: &Host) -> (Loader, Vec<String>) {
    // The package installs its own drop-in into /etc/default/grub.d on every machine, a Raspberry Pi too: only
    // /etc/default/grub or another drop-in says that GRUB is configured.
    let grub_cfg = host.exists(grub::GRUB_DEFAULT)
        || host
            .list(grub::GRUB_D)
            .unwrap_or_default()
            .iter()
            .any(|n| n.ends_with(".cfg") && n != grub::DROPIN_NAME);
    let ki_cfg = host.exists(KERNEL_CMDLINE) || LOADER_CONFS.iter().any(|p| host.exists(p));
    let pi_cfg = PI_CMDLINES.iter().copied().find(|p| host.exists(p));
    let running = host.read(PROC_CMDLINE).unwrap_or_default();
    let grub_booted = tokens(&running)
        .iter()
        .any(|t| t.starts_with("BOOT_IMAGE="));
    let pi_model = host
        .read(DT_MODEL)
        .is_ok_and(|m| m.starts_with("Raspberry Pi"));
    let mut notes = Vec::new();
    if host.exists(LOADER_INFO) {
        if grub_cfg {
            notes.push(format!(
                "systemd-boot boots this machine (EFI variable LoaderInfo): {} is not used, left as it is",
                grub::GRUB_DEFAULT
            ));
        }
        return (Loader::KernelInstall, notes);
    }
    if grub_booted && grub_cfg {
        if ki_cfg {
            notes.push(format!(
                "GRUB boots this machine (BOOT_IMAGE= on the running command line): {KERNEL_CMDLINE} and \
                 loader.conf are not used, left as they are"
            ));
        }
        return (Loader::Grub, notes);
    }
    if let (true, Some(p)) = (pi_model, pi_cfg) {
        return (Loader::PiFirmware(p), notes);
    }
    let found: Vec<&str> = [
        grub_cfg.then_some("GRUB's /etc/default/grub"),
        ki_cfg.then_some("systemd-boot's /etc/kernel/cmdline or loader.conf"),
        pi_cfg.is_some().then_some("a Raspberry Pi cmdline.txt"),
    ]
    .into_iter()
    .flatten()
    .collect();
    match found.len() {
        0 => (Loader::None, notes),
        1 if grub_cfg => (Loader::Grub, notes),
        1 if ki_cfg => (Loader::KernelInstall, notes),
        1 => (Loader::PiFirmware(pi_cfg.unwrap_or(PI_CMDLINES[0])), notes),
        _ => (
            Loader::Unknown(format!(
                "cannot tell which boot loader boots this machine: found {}, and neither systemd-boot's \
                 LoaderInfo EFI variable nor GRUB's BOOT_IMAGE= says which one is used",
                found.join(" and ")
            )),
            notes,
        ),
    }
}

/// The C-state caps for this machine's idle driver.
pub(crate) fn cstate_caps(host: &Host) -> Vec<(&'static str, u32)> {
    if host.exists(INTEL_IDLE) {
        vec![("intel_idle.max_cstate", 0), ("processor.max_cstate", 1)]
    } else if host.exists(ACPI_PROCESSOR) {
        vec![("processor.max_cstate", 1)]
    } else {
        vec![("cpuidle.off", 1)]
    }
}

/// The SMT siblings of `core` (not the core itself), from its topology.
pub(crate) fn siblings(host: &Host, core: usize) -> Vec<usize> {
    let path = format!("{CPU_DIR}/cpu{core}/topology/thread_siblings_list");
    let list = host.read(&path).unwrap_or_default();
    crate::parse::cpulist::parse(&list)
        .unwrap_or_default()
        .into_iter()
        .filter(|&c| c != core)
        .collect()
}

fn lossy(toks: &[Vec<u8>]) -> Vec<String> {
    toks.iter()
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect()
}

/// A command-line file's change: `base` tokens merged with `managed`, written as one line (plus `rest`).
fn line_change(
    path: &str,
    before: Option<Vec<u8>>,
    base: &[Vec<u8>],
    managed: &[String],
    newline: bool,
    rest: &[u8],
) -> Option<Change> {
    let mut after = merge_bytes(base, managed).join(&b' ');
    if newline {
        after.push(b'\n');
    }
    after.extend_from_slice(rest);
    if before.as_deref() == Some(&after[..]) {
        return None;
    }
    let mut c = FileChange::new(path, before, after, true);
    c.cmdline = Some(CmdlineEdit {
        added: managed.to_vec(),
        replaced: replaced(base, managed),
    });
    Some(Change::File(c))
}

fn skipped_notes(s: &mut Step, skipped: &[String]) {
    s.notes.extend(
        skipped
            .iter()
            .map(|k| format!("left as configured (cannot merge): {k}")),
    );
}

pub(crate) fn plan(host: &Host, want: &Want) -> Result<Step, String> {
    let mut s = Step {
        id: StepId::Cmdline,
        title: "Kernel command line: isolate the RT core".into(),
        why: "isolcpus keeps the scheduler away, nohz_full stops the tick, rcu_nocbs moves RCU callbacks, irqaffinity \
              keeps interrupts on the housekeeping CPUs (only a boot parameter moves them all)"
            .into(),
        changes: vec![],
        notes: vec![],
    };
    let (loader, notes) = detect(host);
    s.notes.extend(notes);
    match loader {
        Loader::Grub => grub_plan::plan(host, want, &mut s)?,
        Loader::KernelInstall => {
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
            let shown =
                String::from_utf8_lossy(&merge_bytes(&base, &managed).join(&b' ')).into_owned();
            if let Some(c) = line_change(KERNEL_CMDLINE, before, &base, &managed, true, b"") {
                s.changes.push(c);
                let rel = host.read_trimmed(OSRELEASE).unwrap_or_default();
                if !rel.is_empty() {
                    let argv = [
                        "kernel-install",
                        "add",
                        &rel,
                        &format!("/boot/vmlinuz-{rel}"),
                    ]
                    .map(String::from);
                    s.changes.push(Change::Command(CommandChange {
                        argv: argv.to_vec(),
                        again_on_rollback: true,
                        reboot: true,
                    }));
                }
            }
            s.notes.push(format!(
                "systemd-boot / kernel-install ({KERNEL_CMDLINE}): {shown}"
            ));
            skipped_notes(&mut s, &skipped);
        }
        Loader::PiFirmware(path) => {
            let before = host.read_bytes(path).ok();
            let all = before.clone().unwrap_or_default();
            // The firmware reads the first line only; the others (notes, a commented parameter) stay as they are.
            let (first, rest) = split_first_line(&all);
            let base = tokens_bytes(first);
            let (managed, skipped) = managed_params(&lossy(&base), want)?;
            let newline = first.ends_with(b"\n") || before.is_none();
            s.changes.extend(line_change(
                path,
                before.clone(),
                &base,
                &managed,
                newline,
                rest,
            ));
            skipped_notes(&mut s, &skipped);
        }
        Loader::None => {
            let (managed, _) =
                managed_params(&tokens(&host.read(PROC_CMDLINE).unwrap_or_default()), want)?;
            s.notes.push(format!(
                "{}no boot loader configuration found (no {}, {KERNEL_CMDLINE}, loader.conf or cmdline.txt): add \
                 these parameters to the kernel command line: {}",
                super::BY_HAND,
                grub::GRUB_DEFAULT,
                managed.join(" ")
            ));
        }
        Loader::Unknown(why) => s.refuse(why),
    }
    Ok(s)
}
