//! The kernel command-line step: find out which boot loader boots this machine, merge the managed parameters
//! (want.rs) with what is configured, and propose the file changes and the command that make them reach the next
//! boot. Each boot-loader layout is one unit behind [`BootLoader`], listed once in [`LOADERS`]:
//!   grub.rs            /etc/default/grub + grub.d drop-ins (grub_layout.rs the files, grub_source.rs reading
//!                      them as grub-mkconfig sources them, never running them), made effective by update-grub
//!   kernel_install.rs  systemd-boot / kernel-install: /etc/kernel/cmdline, made effective by kernel-install
//!   pi.rs              Raspberry Pi firmware: the first line of cmdline.txt, read at every boot
//! Adding a layout is a new file with its `BootLoader` and one line in `LOADERS`. A loader it cannot tell, or a
//! layout it cannot follow, is refused with a reason; no loader at all is a by-hand note.

mod grub;
pub(crate) mod grub_layout;
mod grub_source;
pub(crate) mod grub_trial;
mod kernel_install;
mod line;
mod pi;
mod pi_trial;
mod sd_trial;
pub(crate) mod tokens;
pub(crate) mod trial;
pub(crate) mod want;

use crate::fix::{Step, StepId};
use crate::host::Host;
use crate::machine::PROC_CMDLINE;
use tokens::tokens;
use trial::{NoTrial, Trial};
use want::{NoHousekeeping, Want, managed_params};

/// One boot-loader layout: how to tell that it is configured and that it boots the machine, and how to change
/// the command line it gives the kernel.
pub(crate) trait BootLoader: Sync {
    /// Its configuration, as the "cannot tell which" refusal names it.
    fn what(&self) -> &'static str;
    /// Whether its configuration is present.
    fn configured(&self, host: &Host) -> bool;
    /// How the running system says that this loader boots it (`configured`: its configuration is present),
    /// or None when it does not say so.
    fn booted(&self, host: &Host, configured: bool) -> Option<&'static str>;
    /// The note when it is configured but another loader boots the machine.
    fn unused(&self, host: &Host) -> String;
    /// The files fix may write for it (where a killed run may have left a temporary file).
    fn files(&self) -> &'static [&'static str];
    /// The program that makes its files take effect at the next boot (run again after a rollback), if any.
    fn program(&self) -> Option<&'static str> {
        None
    }
    /// Adds its changes (the files, then the command that makes them effective) and notes to the step.
    fn plan(&self, host: &Host, want: &Want, s: &mut Step) -> Result<(), NoHousekeeping>;
    /// The files and program that boot a command line with `params` put in once, the default untouched
    /// (trial.rs).
    fn trial(&self, host: &Host, params: &[String]) -> Result<Trial, NoTrial>;
}

/// Every layout, in the order the running system's word is taken: systemd-boot's EFI variable first (it is set
/// only by the loader that booted), then GRUB's BOOT_IMAGE=, then a Raspberry Pi's device tree.
pub(crate) const LOADERS: &[&dyn BootLoader] =
    &[&kernel_install::KernelInstall, &grub::Grub, &pi::PiFirmware];

/// The files of every layout.
pub(crate) fn files() -> impl Iterator<Item = &'static str> {
    LOADERS.iter().flat_map(|l| l.files().iter().copied())
}

/// Whether `argv` runs a loader's program: after it the old command line returns only at the next boot.
pub(crate) fn rebuilds_boot(argv: &[String]) -> bool {
    argv.first()
        .is_some_and(|p| LOADERS.iter().any(|l| l.program() == Some(p.as_str())))
}

/// Which loader boots the machine.
enum Found {
    Loader(&'static dyn BootLoader),
    /// No configuration of any loader.
    None,
    /// Configurations of several loaders and nothing saying which one boots: why.
    Unknown(String),
}

/// What the running system says first (in `LOADERS` order), then which configuration exists. Notes say what
/// was found and left alone.
fn detect(host: &Host) -> (Found, Vec<String>) {
    let configured: Vec<bool> = LOADERS.iter().map(|l| l.configured(host)).collect();
    for (i, l) in LOADERS.iter().enumerate() {
        if let Some(how) = l.booted(host, configured[i]) {
            let notes = LOADERS
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i && configured[j])
                .map(|(_, other)| format!("{how}: {}", other.unused(host)))
                .collect();
            return (Found::Loader(*l), notes);
        }
    }
    let found: Vec<&'static dyn BootLoader> = LOADERS
        .iter()
        .zip(&configured)
        .filter(|&(_, &c)| c)
        .map(|(l, _)| *l)
        .collect();
    let f = match found.as_slice() {
        [] => Found::None,
        [one] => Found::Loader(*one),
        many => Found::Unknown(format!(
            "cannot tell which boot loader boots this machine: found {}, and neither systemd-boot's \
             LoaderInfo EFI variable nor GRUB's BOOT_IMAGE= says which one is used",
            many.iter()
                .map(|l| l.what())
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    };
    (f, vec![])
}

/// Why the command-line step cannot set boot parameters here (no boot loader configuration, or no telling which
/// one boots), or None when it can.
pub(crate) fn why_no_loader(host: &Host) -> Option<String> {
    match detect(host).0 {
        Found::Loader(_) => None,
        Found::None => Some("no boot loader configuration was found".into()),
        Found::Unknown(why) => Some(why),
    }
}

/// The trial boot of `params` on the loader that boots this machine.
pub(crate) fn trial(host: &Host, params: &[String]) -> Result<Trial, NoTrial> {
    match detect(host).0 {
        Found::Loader(l) => l.trial(host, params),
        Found::None => Err(NoTrial("no boot loader configuration found".into())),
        Found::Unknown(why) => Err(NoTrial(why)),
    }
}

pub(crate) fn plan(host: &Host, want: &Want) -> Result<Step, NoHousekeeping> {
    let mut s = Step {
        id: StepId::Cmdline,
        title: "Kernel command line: isolate the RT core".into(),
        why: "isolcpus keeps the scheduler away, nohz_full stops the tick, rcu_nocbs moves RCU callbacks, irqaffinity \
              keeps interrupts on the housekeeping CPUs (only a boot parameter moves them all)"
            .into(),
        changes: vec![],
        notes: vec![],
    };
    let (found, notes) = detect(host);
    s.notes
        .extend(notes.into_iter().map(crate::fix::Note::Info));
    match found {
        Found::Loader(l) => l.plan(host, want, &mut s)?,
        Found::None => {
            let (managed, _) =
                managed_params(&tokens(&host.read(PROC_CMDLINE).unwrap_or_default()), want)?;
            s.notes.push(crate::fix::Note::ByHand(format!(
                "no boot loader configuration found (no {}, {}, loader.conf or cmdline.txt): add \
                 these parameters to the kernel command line: `{}`",
                grub_layout::GRUB_DEFAULT,
                kernel_install::KERNEL_CMDLINE,
                managed.join(" ")
            )));
        }
        Found::Unknown(why) => s.refuse(why),
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root with these files (contents as given).
    fn root(files: &[(&str, &str)]) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let p = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let h = Host::with_root(d.path());
        (d, h)
    }

    fn which(h: &Host) -> (String, Vec<String>) {
        let (f, notes) = detect(h);
        let w = match f {
            Found::Loader(l) => l.what().to_string(),
            Found::None => "none".into(),
            Found::Unknown(why) => why,
        };
        (w, notes)
    }

    #[test]
    fn the_running_system_says_which_loader_and_the_others_are_noted() {
        const GRUB: (&str, &str) = ("/etc/default/grub", "GRUB_CMDLINE_LINUX=\"\"\n");
        // systemd-boot's EFI variable wins over a GRUB configuration left on the disk.
        let (_d, h) = root(&[
            GRUB,
            (
                "/sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
                "x",
            ),
        ]);
        let (w, notes) = which(&h);
        assert_eq!(w, kernel_install::KernelInstall.what());
        assert_eq!(
            notes,
            [
                "systemd-boot boots this machine (EFI variable LoaderInfo): /etc/default/grub is not used, left as it is"
            ]
        );
        // GRUB booted (BOOT_IMAGE=) with /etc/kernel/cmdline present: GRUB, the other noted.
        let (_d, h) = root(&[
            GRUB,
            ("/etc/kernel/cmdline", "quiet\n"),
            ("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1\n"),
        ]);
        let (w, notes) = which(&h);
        assert_eq!(w, grub::Grub.what());
        assert!(
            notes[0].contains("/etc/kernel/cmdline and loader.conf are not used"),
            "{notes:?}"
        );
        // A Raspberry Pi: its device tree, and only our package's own GRUB drop-in (not a GRUB configuration).
        let (_d, h) = root(&[
            ("/proc/device-tree/model", "Raspberry Pi 4 Model B Rev 1.5"),
            (
                "/boot/firmware/cmdline.txt",
                "console=tty1 root=PARTUUID=1\n",
            ),
            ("/etc/default/grub.d/99-rmp-eval.cfg", grub_layout::DROPIN),
        ]);
        assert_eq!(which(&h), (pi::PiFirmware.what().to_string(), vec![]));
        // Two configurations and no word from the running system: refused, both named.
        let (_d, h) = root(&[GRUB, ("/etc/kernel/cmdline", "quiet\n")]);
        let (w, _) = which(&h);
        assert!(w.starts_with("cannot tell which boot loader"), "{w}");
        assert!(w.contains("GRUB's") && w.contains("systemd-boot's"), "{w}");
        // One configuration: that one; none: none.
        let (_d, h) = root(&[("/boot/cmdline.txt", "quiet\n")]);
        assert_eq!(which(&h).0, pi::PiFirmware.what());
        let (_d, h) = root(&[]);
        assert_eq!(which(&h).0, "none");
    }

    #[test]
    fn every_loaders_files_are_known_to_fix() {
        let known = crate::fix::known_targets();
        for f in files() {
            assert!(known.contains(&f), "{f}");
        }
        assert!(known.contains(&"/etc/kernel/cmdline") && known.contains(&"/boot/cmdline.txt"));
    }
}
