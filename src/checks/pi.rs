//! The Raspberry Pi's own clock controls: `force_turbo`, `arm_freq`, `arm_freq_min` and `arm_boost` in the
//! firmware's config.txt. Reported, never edited: fix has no step for config.txt (a wrong arm_freq can stop the
//! board booting), so this check names the setting for the user to make.

use super::firmware_id::board_model;
use super::{Assessment, Check, CheckId, Ctx, Eval, Section};
use crate::host::Host;
use crate::parse::config_txt::{self, Applies};

/// Where the firmware reads it: Raspberry Pi OS bookworm and Debian's raspi-firmware mount the boot partition at
/// /boot/firmware; older Raspberry Pi OS at /boot.
const CONFIG_TXT: &[&str] = &["/boot/firmware/config.txt", "/boot/config.txt"];

pub(crate) const PI_CLOCK: Check = Check {
    id: CheckId::PiClock,
    section: Section::Core,
    title: "Raspberry Pi clock fixed (config.txt)",
    doc: "On a Raspberry Pi the firmware, not cpufreq alone, sets the ARM clock: without force_turbo=1 it scales \
          the clock between arm_freq_min and arm_freq (arm_boost raises arm_freq on a Pi 4), so cycle times follow \
          the load. Passes when config.txt sets force_turbo=1 or arm_freq_min equal to arm_freq for this board; \
          info when it does not (the governor check covers cpufreq) or the machine has no config.txt. rmp-eval \
          reports these settings and never edits config.txt.",
    remedy: None,
    by_hand: Some(
        "set force_turbo=1 in config.txt (with Debian's raspi-firmware, which rewrites config.txt: in \
         /etc/default/raspi-firmware-custom) and reboot",
    ),
    evaluate: pi_clock,
};

fn pi_clock(host: &Host, _: &Ctx) -> Eval {
    let Some((path, text)) = CONFIG_TXT
        .iter()
        .find_map(|p| host.read(p).ok().map(|t| (*p, t)))
    else {
        return Ok(Assessment::info(
            "no config.txt: not a Raspberry Pi booted by its firmware",
        ));
    };
    let models = config_txt::model_filters(&board_model(host).unwrap_or_default());
    let cfg = config_txt::parse(&text);
    let get = |k: &str| cfg.get(k, &models);
    let shown = |k: &str| match get(k) {
        Some((s, Applies::Yes)) => format!("{k}={}", s.value),
        Some((s, _)) => format!(
            "{k}={} under [{}]",
            s.value,
            s.filter.as_deref().unwrap_or("")
        ),
        None => format!("{k} unset"),
    };
    let sure = |k: &str| {
        get(k)
            .filter(|(_, a)| *a == Applies::Yes)
            .map(|(s, _)| s.value.as_str())
    };
    if sure("force_turbo") == Some("1") {
        return Ok(Assessment::pass(format!(
            "{path}: force_turbo=1, {}",
            shown("arm_freq")
        )));
    }
    if let (Some(max), Some(min)) = (sure("arm_freq"), sure("arm_freq_min"))
        && max == min
    {
        return Ok(Assessment::pass(format!(
            "{path}: arm_freq_min=arm_freq={max}"
        )));
    }
    Ok(Assessment::info(format!(
        "{path}: {}, {}, {}: the firmware scales the clock; force_turbo=1 fixes it",
        shown("force_turbo"),
        shown("arm_freq"),
        shown("arm_boost")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(files: &[(&str, &str)]) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let h = Host::with_root(d.path());
        for (p, t) in files {
            h.create_dir_all(&p[..p.rfind('/').unwrap()]).unwrap();
            h.write_atomic(p, t.as_bytes(), None).unwrap();
        }
        (d, h)
    }
    const DEBIAN: &str =
        include_str!("../../tests/fixtures/samples/rpi4-config-debian-raspi-firmware.txt");
    const DEBIAN_CUSTOM: &str =
        include_str!("../../tests/fixtures/samples/rpi4-config-debian-raspi-firmware-custom.txt");
    const SECTIONS: &str =
        include_str!("../../tests/fixtures/samples/rpi-config-sections-handmade.txt");
    const CTX: Ctx = Ctx {
        core: 3,
        nic: None,
        pid: None,
        smi_seconds: None,
    };
    const MODEL: (&str, &str) = (crate::machine::DT_MODEL, "Raspberry Pi 4 Model B Rev 1.5\0");

    #[test]
    fn verdicts_on_debian_and_sectioned_files() {
        let (_d, h) = root(&[("/boot/firmware/config.txt", DEBIAN), MODEL]);
        let v = pi_clock(&h, &CTX).unwrap();
        assert_eq!(v.status, super::super::Status::Info);
        assert_eq!(
            v.detail,
            "/boot/firmware/config.txt: force_turbo unset, arm_freq unset, arm_boost unset: the firmware scales \
             the clock; force_turbo=1 fixes it"
        );
        let (_d, h) = root(&[("/boot/firmware/config.txt", DEBIAN_CUSTOM), MODEL]);
        assert_eq!(
            pi_clock(&h, &CTX),
            Ok(Assessment::pass(
                "/boot/firmware/config.txt: force_turbo=1, arm_freq=1500"
            ))
        );
        // Older Raspberry Pi OS: /boot/config.txt. A Pi 4 takes [pi4]'s fixed 1800 MHz; a Pi 5 only arm_freq.
        let (_d, h) = root(&[("/boot/config.txt", SECTIONS), MODEL]);
        assert_eq!(
            pi_clock(&h, &CTX),
            Ok(Assessment::pass(
                "/boot/config.txt: arm_freq_min=arm_freq=1800"
            ))
        );
        let (_d, h) = root(&[
            ("/boot/config.txt", SECTIONS),
            (
                crate::machine::PROC_CPUINFO,
                "processor\t: 0\nModel\t\t: Raspberry Pi 5 Model B Rev 1.0\n",
            ),
        ]);
        let v = pi_clock(&h, &CTX).unwrap();
        assert_eq!(
            v.detail,
            "/boot/config.txt: force_turbo=1 under [hdmi:0], arm_freq=2400, arm_boost=1: the firmware scales the \
             clock; force_turbo=1 fixes it"
        );
        assert_eq!(v.status, super::super::Status::Info);
        let (_d, h) = root(&[MODEL]);
        assert_eq!(
            pi_clock(&h, &CTX).unwrap().status,
            super::super::Status::Info
        );
    }
}
