//! The kernel command-line step: find the boot loader's configuration, merge the managed parameters with what
//! is configured, and propose the file changes and the command that makes them reach the next boot.

use super::cmdline::{Want, managed_params, merge_into, tokens};
use super::grub::{DROPIN, DROPIN_NAME, Eval};
use super::kind::command::CommandChange;
use super::kind::file::FileChange;
use super::{CMDLINE_STATE, Change, Step, StepId};
use crate::host::Host;

const GRUB_DEFAULT: &str = "/etc/default/grub";
const GRUB_D: &str = "/etc/default/grub.d";
pub const KERNEL_CMDLINE: &str = "/etc/kernel/cmdline";
const PROC_CMDLINE: &str = "/proc/cmdline";
const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
const LOADER_CONFS: &[&str] = &[
    "/boot/efi/loader/loader.conf",
    "/efi/loader/loader.conf",
    "/boot/loader/loader.conf",
];
const CPU_DIR: &str = "/sys/devices/system/cpu";
const INTEL_IDLE: &str = "/sys/module/intel_idle";
const ACPI_PROCESSOR: &str = "/sys/module/processor";
pub const PI_CMDLINES: &[&str] = &["/boot/firmware/cmdline.txt", "/boot/cmdline.txt"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loader {
    /// /etc/default/grub (+ grub.d), made effective by update-grub.
    Grub,
    /// systemd-boot / kernel-install: /etc/kernel/cmdline, made effective by kernel-install.
    KernelInstall,
    /// Raspberry Pi firmware: one line in cmdline.txt, read at every boot.
    PiFirmware(&'static str),
    None,
}

pub fn detect(host: &Host) -> Loader {
    if host.exists(GRUB_DEFAULT) || host.is_dir(GRUB_D) {
        Loader::Grub
    } else if host.exists(KERNEL_CMDLINE) || LOADER_CONFS.iter().any(|p| host.exists(p)) {
        Loader::KernelInstall
    } else if let Some(p) = PI_CMDLINES.iter().find(|p| host.exists(p)) {
        Loader::PiFirmware(p)
    } else {
        Loader::None
    }
}

/// The C-state caps for this machine's idle driver.
pub fn cstate_caps(host: &Host) -> Vec<(&'static str, u32)> {
    if host.exists(INTEL_IDLE) {
        vec![("intel_idle.max_cstate", 0), ("processor.max_cstate", 1)]
    } else if host.exists(ACPI_PROCESSOR) {
        vec![("processor.max_cstate", 1)]
    } else {
        vec![("cpuidle.off", 1)]
    }
}

/// The SMT siblings of `core` (not the core itself), from its topology.
pub fn siblings(host: &Host, core: usize) -> Vec<usize> {
    let path = format!("{CPU_DIR}/cpu{core}/topology/thread_siblings_list");
    let list = host.read(&path).unwrap_or_default();
    crate::parse::cpulist::parse(&list)
        .unwrap_or_default()
        .into_iter()
        .filter(|&c| c != core)
        .collect()
}

/// GRUB's effective command line (normal entries), with the drop-in applied to `state`.
pub fn grub_eval(host: &Host, state: &[String]) -> Eval {
    let mut e = Eval::default();
    if let Ok(t) = host.read(GRUB_DEFAULT) {
        e.source(GRUB_DEFAULT, &t);
    }
    for n in host.list(GRUB_D).unwrap_or_default() {
        if n.ends_with(".cfg") && n != DROPIN_NAME {
            let p = format!("{GRUB_D}/{n}");
            if let Ok(t) = host.read(&p) {
                e.source(&p, &t);
            }
        }
    }
    e.apply_dropin(state);
    e
}

fn line(bytes: &[String]) -> Vec<u8> {
    format!("{}\n", bytes.join(" ")).into_bytes()
}

pub fn plan(host: &Host, want: &Want) -> Result<Step, String> {
    let mut s = Step {
        id: StepId::Cmdline,
        title: "Kernel command line: isolate the RT core".into(),
        why: "isolcpus keeps the scheduler away, nohz_full stops the tick, rcu_nocbs moves RCU callbacks, irqaffinity \
              keeps interrupts on the housekeeping CPUs (only a boot parameter moves them all)"
            .into(),
        changes: vec![],
        notes: vec![],
    };
    let file_change = |path: &str, before: Option<Vec<u8>>, after: Vec<u8>| {
        Change::File(FileChange::new(path, before, after, true))
    };
    match detect(host) {
        Loader::Grub => {
            let state_before = host.read_bytes(CMDLINE_STATE).ok();
            let state = tokens(&String::from_utf8_lossy(
                state_before.as_deref().unwrap_or_default(),
            ));
            let before = grub_eval(host, &state);
            let (managed, skipped) = managed_params(&before.effective(), want)?;
            let new_state = merge_into(&state, &managed);
            let after = grub_eval(host, &new_state);
            let dropin = format!("{GRUB_D}/{DROPIN_NAME}");
            match host.read_bytes(&dropin) {
                Err(_) => s
                    .changes
                    .push(file_change(&dropin, None, DROPIN.as_bytes().to_vec())),
                Ok(b) if b != DROPIN.as_bytes() => s.notes.push(format!(
                    "{dropin} differs from this version's; left as it is"
                )),
                Ok(_) => {}
            }
            if new_state != state {
                s.changes
                    .push(file_change(CMDLINE_STATE, state_before, line(&new_state)));
            }
            if !s.changes.is_empty() {
                let argv = vec!["update-grub".to_string()];
                s.changes.push(Change::Command(CommandChange {
                    argv,
                    again_on_rollback: true,
                    reboot: true,
                }));
            }
            s.notes.push(format!(
                "GRUB, normal entries, now:   {}",
                before.effective().join(" ")
            ));
            s.notes.push(format!(
                "GRUB, normal entries, after: {}",
                after.effective().join(" ")
            ));
            s.notes.extend(
                before
                    .unsure
                    .iter()
                    .map(|u| format!("could not follow {u}")),
            );
            s.notes.extend(
                skipped
                    .iter()
                    .map(|k| format!("left as configured (cannot merge): {k}")),
            );
        }
        Loader::KernelInstall => {
            let before = host.read_bytes(KERNEL_CMDLINE).ok();
            let cur = match &before {
                Some(b) => tokens(&String::from_utf8_lossy(b)),
                // kernel-install falls back to the running command line: start from it, minus the loader's own.
                None => tokens(&host.read(PROC_CMDLINE).unwrap_or_default())
                    .into_iter()
                    .filter(|t| !t.starts_with("BOOT_IMAGE=") && !t.starts_with("initrd="))
                    .collect(),
            };
            let (managed, skipped) = managed_params(&cur, want)?;
            let new = merge_into(&cur, &managed);
            if before.as_deref() != Some(&line(&new)[..]) {
                s.changes
                    .push(file_change(KERNEL_CMDLINE, before, line(&new)));
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
                "systemd-boot / kernel-install ({KERNEL_CMDLINE}): {}",
                new.join(" ")
            ));
            s.notes.extend(
                skipped
                    .iter()
                    .map(|k| format!("left as configured (cannot merge): {k}")),
            );
        }
        Loader::PiFirmware(path) => {
            let before = host.read_bytes(path).ok();
            let cur = tokens(&String::from_utf8_lossy(
                before.as_deref().unwrap_or_default(),
            ));
            let (managed, skipped) = managed_params(&cur, want)?;
            let new = merge_into(&cur, &managed);
            if before.as_deref() != Some(&line(&new)[..]) {
                s.changes.push(file_change(path, before, line(&new)));
            }
            s.notes.extend(
                skipped
                    .iter()
                    .map(|k| format!("left as configured (cannot merge): {k}")),
            );
        }
        Loader::None => {
            let (managed, _) =
                managed_params(&tokens(&host.read(PROC_CMDLINE).unwrap_or_default()), want)?;
            s.notes.push(format!(
                "no boot loader configuration found (no {GRUB_DEFAULT}, {KERNEL_CMDLINE}, loader.conf or \
                 cmdline.txt): add these parameters to the kernel command line by hand: {}",
                managed.join(" ")
            ));
        }
    }
    Ok(s)
}
