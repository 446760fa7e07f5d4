//! A Raspberry Pi's trial boot: tryboot.txt, which the firmware reads instead of config.txt for one boot after
//! `reboot '0 tryboot'` (the next boot reads config.txt again, whatever happened). It is config.txt with
//! `cmdline=` naming a trial copy of cmdline.txt. Judged on trees only: no Pi firmware here to boot it.

use super::pi::cmdline_txt;
use super::tokens::{split_first_line, tokens};
use super::trial::{NoTrial, Trial, trial_line};
use crate::fix::Change;
use crate::fix::kind::file::FileChange;
use crate::host::Host;

/// The trial's command-line file, beside cmdline.txt.
pub(crate) const TRIAL_CMDLINE: &str = "cmdline-rmp-eval-trial.txt";

pub(crate) fn plan(host: &Host, params: &[String]) -> Result<Trial, NoTrial> {
    let cmdline = cmdline_txt(host).ok_or_else(|| NoTrial("no cmdline.txt".into()))?;
    let dir = cmdline.rsplit_once('/').map_or("", |(d, _)| d);
    let read = |p: &str| host.read_bytes(p).map_err(|e| NoTrial(format!("{p}: {e}")));
    let now = read(cmdline)?;
    let (first, _) = split_first_line(&now);
    let line = trial_line(&tokens(&String::from_utf8_lossy(first)), params)?;
    let config_path = format!("{dir}/config.txt");
    let mut tryboot = read(&config_path)?;
    if !tryboot.is_empty() && !tryboot.ends_with(b"\n") {
        tryboot.push(b'\n');
    }
    // [all] so that no conditional section of config.txt keeps it from applying.
    tryboot.extend_from_slice(
        format!("\n# rmp-eval trial boot (booted once by reboot '0 tryboot')\n[all]\ncmdline={TRIAL_CMDLINE}\n")
            .as_bytes(),
    );
    let trial_path = format!("{dir}/{TRIAL_CMDLINE}");
    let tryboot_path = format!("{dir}/tryboot.txt");
    let file = |p: &str, after: Vec<u8>| {
        Change::File(FileChange::new(p, host.read_bytes(p).ok(), after, true))
    };
    Ok(Trial {
        changes: vec![
            file(&trial_path, format!("{}\n", line.join(" ")).into_bytes()),
            file(&tryboot_path, tryboot),
        ],
        cmdline: line,
        reboot: vec!["reboot".into(), "0 tryboot".into()],
        how: format!(
            "Raspberry Pi: {tryboot_path} (config.txt with cmdline={TRIAL_CMDLINE}), booted once by \
             `reboot '0 tryboot'`; config.txt and cmdline.txt are not touched"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// config.txt as Debian's raspi-firmware writes it (tests/fixtures/samples); cmdline.txt hand-made.
    const CONFIG: &str =
        include_str!("../../../../tests/fixtures/samples/rpi4-config-debian-raspi-firmware.txt");
    const CMDLINE: &str = "console=tty0 console=ttyS1,115200 root=LABEL=RASPIROOT rw fsck.repair=yes rootwait\n# a note\n";

    #[test]
    fn tryboot_names_a_trial_cmdline_and_config_and_cmdline_stay() {
        let d = tempfile::tempdir().unwrap();
        let put = |p: &str, b: &str| {
            let p = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b).unwrap();
        };
        put("/boot/firmware/config.txt", CONFIG);
        put("/boot/firmware/cmdline.txt", CMDLINE);
        put("/proc/device-tree/model", "Raspberry Pi 4 Model B Rev 1.5");
        let h = Host::with_root(d.path());
        let t =
            crate::tunable::cmdline::boot::trial(&h, &["isolcpus=3".into(), "nohz_full=3".into()])
                .unwrap();
        let files: Vec<(&str, String)> = t
            .changes
            .iter()
            .map(|c| match c {
                Change::File(f) => (
                    f.path.as_str(),
                    String::from_utf8(f.after.clone().unwrap()).unwrap(),
                ),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(files[0].0, "/boot/firmware/cmdline-rmp-eval-trial.txt");
        assert_eq!(
            files[0].1,
            "console=tty0 console=ttyS1,115200 root=LABEL=RASPIROOT rw fsck.repair=yes rootwait isolcpus=3 \
             nohz_full=3 panic=10\n"
        );
        assert_eq!(files[1].0, "/boot/firmware/tryboot.txt");
        assert!(files[1].1.starts_with(CONFIG));
        assert!(
            files[1]
                .1
                .ends_with("\n[all]\ncmdline=cmdline-rmp-eval-trial.txt\n"),
            "{}",
            files[1].1
        );
        assert_eq!(t.reboot, ["reboot", "0 tryboot"]);
        // config.txt as the firmware reads it for the trial: the cmdline= of [all] applies.
        use crate::parse::config_txt::{Applies, parse};
        let tryboot = parse(&files[1].1);
        let (s, applies) = tryboot.get("cmdline", &["pi4"]).unwrap();
        assert_eq!((s.value.as_str(), applies), (TRIAL_CMDLINE, Applies::Yes));
    }
}
