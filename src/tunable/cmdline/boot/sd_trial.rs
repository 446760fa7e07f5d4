//! systemd-boot's trial boot: a copy of the booted entry (its name from the LoaderEntrySelected EFI variable)
//! with the trial's options, as loader/entries/rmp-eval-trial.conf, booted once by `bootctl set-oneshot`
//! (LoaderEntryOneShot, which the loader clears when it reads it); the default entry is not touched.

use super::tokens::tokens;
use super::trial::{NoTrial, Trial, trial_line};
use crate::fix::Change;
use crate::fix::kind::command::CommandChange;
use crate::fix::kind::file::FileChange;
use crate::host::Host;

/// The entry systemd-boot booted: UTF-16LE after the variable's 4 bytes of attributes.
pub(crate) const ENTRY_SELECTED: &str =
    "/sys/firmware/efi/efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";
const ENTRIES: &[&str] = &[
    "/boot/loader/entries",
    "/efi/loader/entries",
    "/boot/efi/loader/entries",
];
pub(crate) const TRIAL_ENTRY: &str = "rmp-eval-trial.conf";

/// An EFI variable's text: UTF-16LE after 4 bytes of attributes, up to the first NUL.
pub(crate) fn efi_string(var: &[u8]) -> Option<String> {
    let units: Vec<u16> = var
        .get(4..)?
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16(&units).ok()
}

/// The trial entry: `entry` with its title and options replaced. Returns it and its command line.
fn trial_entry(entry: &str, params: &[String]) -> Result<(String, Vec<String>), NoTrial> {
    let mut base = Vec::new();
    let mut out = String::from("# rmp-eval trial boot: booted once through bootctl set-oneshot\n");
    for l in entry.lines() {
        match l.split_whitespace().next() {
            Some("options") => base.extend(tokens(l.trim_start().trim_start_matches("options"))),
            Some("title") => out.push_str("title rmp-eval trial boot\n"),
            _ => out.push_str(&format!("{l}\n")),
        }
    }
    let line = trial_line(&base, params)?;
    out.push_str(&format!("options {}\n", line.join(" ")));
    Ok((out, line))
}

pub(crate) fn plan(host: &Host, params: &[String]) -> Result<Trial, NoTrial> {
    let selected = host
        .read_bytes(ENTRY_SELECTED)
        .ok()
        .and_then(|v| efi_string(&v))
        .ok_or_else(|| {
            NoTrial("systemd-boot does not say which entry it booted (LoaderEntrySelected)".into())
        })?;
    let name = if selected.ends_with(".conf") {
        selected.clone()
    } else {
        format!("{selected}.conf")
    };
    let dir = ENTRIES
        .iter()
        .find(|d| host.exists(&format!("{d}/{name}")))
        .ok_or_else(|| {
            NoTrial(format!(
                "no loader entry file {name} (a unified kernel image has no options to change)"
            ))
        })?;
    let entry = host
        .read(&format!("{dir}/{name}"))
        .map_err(|e| NoTrial(e.to_string()))?;
    let (text, line) = trial_entry(&entry, params)?;
    let path = format!("{dir}/{TRIAL_ENTRY}");
    Ok(Trial {
        changes: vec![
            Change::File(FileChange::new(
                &path,
                host.read_bytes(&path).ok(),
                text.into_bytes(),
                true,
            )),
            Change::Command(CommandChange {
                argv: ["bootctl", "set-oneshot", TRIAL_ENTRY]
                    .map(String::from)
                    .to_vec(),
                // Used up by the boot it names: nothing to run again after rollback.
                again_on_rollback: false,
                reboot: true,
            }),
        ],
        cmdline: line,
        reboot: vec!["systemctl".into(), "reboot".into()],
        how: format!(
            "systemd-boot: {path}, a copy of {name} with the trial's options, booted once by bootctl set-oneshot; \
             the default entry is not touched"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type #1 entry as kernel-install writes it on Debian 12 (hand-made: no systemd-boot machine captured).
    const ENTRY: &str = "# Boot Loader Specification type#1 entry\ntitle      Debian GNU/Linux 12 (bookworm)\n\
        version    6.1.0-50-rt-amd64\nmachine-id 5f3c\nsort-key   debian\noptions    root=UUID=1 ro quiet\n\
        linux      /5f3c/6.1.0-50-rt-amd64/linux\ninitrd     /5f3c/6.1.0-50-rt-amd64/initrd.img-6.1.0-50-rt-amd64\n";
    const LOADER_INFO: &str =
        "/sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

    fn efi_var(text: &str) -> Vec<u8> {
        let mut v = vec![7, 0, 0, 0];
        for u in text.encode_utf16().chain([0]) {
            v.extend(u.to_le_bytes());
        }
        v
    }

    #[test]
    fn the_booted_entry_is_copied_with_the_trial_options_and_booted_once() {
        let d = tempfile::tempdir().unwrap();
        let put = |p: &str, b: &[u8]| {
            let p = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b).unwrap();
        };
        put(
            "/efi/loader/entries/5f3c-6.1.0-50-rt-amd64.conf",
            ENTRY.as_bytes(),
        );
        put(ENTRY_SELECTED, &efi_var("5f3c-6.1.0-50-rt-amd64.conf"));
        put(LOADER_INFO, &efi_var("systemd-boot 252"));
        put("/etc/kernel/cmdline", b"root=UUID=1 ro quiet\n");
        let h = Host::with_root(d.path());
        let t = crate::tunable::cmdline::boot::trial(&h, &["isolcpus=1".into()]).unwrap();
        assert_eq!(
            t.cmdline.join(" "),
            "root=UUID=1 ro quiet isolcpus=1 panic=10"
        );
        let Change::File(f) = &t.changes[0] else {
            panic!()
        };
        assert_eq!(f.path, "/efi/loader/entries/rmp-eval-trial.conf");
        let text = String::from_utf8(f.after.clone().unwrap()).unwrap();
        assert!(text.contains("title rmp-eval trial boot\n"), "{text}");
        assert!(
            text.contains("\noptions root=UUID=1 ro quiet isolcpus=1 panic=10\n"),
            "{text}"
        );
        assert!(text.contains("initrd     /5f3c/6.1.0-50-rt-amd64/initrd.img-6.1.0-50-rt-amd64\n"));
        assert_eq!(text.matches("options").count(), 1);
        let Change::Command(c) = &t.changes[1] else {
            panic!()
        };
        assert_eq!(c.argv, ["bootctl", "set-oneshot", "rmp-eval-trial.conf"]);
        assert!(!c.again_on_rollback);
        // A unified kernel image (no entry file) or no word from the loader: no trial.
        std::fs::remove_file(
            d.path()
                .join("efi/loader/entries/5f3c-6.1.0-50-rt-amd64.conf"),
        )
        .unwrap();
        assert!(
            plan(&h, &[])
                .unwrap_err()
                .0
                .contains("no loader entry file")
        );
        std::fs::remove_file(d.path().join(ENTRY_SELECTED.trim_start_matches('/'))).unwrap();
        assert!(plan(&h, &[]).unwrap_err().0.contains("LoaderEntrySelected"));
        assert_eq!(efi_string(&[7, 0]), None);
        assert_eq!(efi_string(&[7, 0, 0, 0]), Some(String::new()));
    }
}
