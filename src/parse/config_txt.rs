//! The Raspberry Pi firmware's config.txt: `key=value` settings (a few directives are `key value`: `initramfs`,
//! `include`), `#` comments, and conditional sections: a `[filter]` line makes the settings after it apply only
//! when the filter matches, until the next filter; `[all]` ends them. Later settings override earlier ones.
//! Simplified: a filter replaces the previous one (the firmware ANDs filters of different kinds), which only makes
//! a setting look conditional where the firmware might not apply it either.

/// One setting and the filter it is under (None: unconditional).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    pub(crate) key: String,
    pub(crate) value: String,
    /// 1-based line number.
    pub(crate) line: usize,
    pub(crate) filter: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ConfigTxt {
    pub(crate) settings: Vec<Setting>,
    /// `include` directives (files next to config.txt), in order.
    pub(crate) includes: Vec<String>,
}

/// Whether a setting applies on this board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applies {
    Yes,
    No,
    /// Under a filter that depends on more than the model (a display, a GPIO, a serial number, tryboot).
    Maybe,
}

pub(crate) fn parse(text: &str) -> ConfigTxt {
    let mut out = ConfigTxt::default();
    let mut filter: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(f) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let f = f.trim().to_ascii_lowercase();
            filter = (f != "all").then_some(f);
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => match line.split_once(char::is_whitespace) {
                Some((k, v)) => (k.trim(), v.trim()),
                None => (line, ""),
            },
        };
        if key == "include" {
            out.includes.push(value.to_string());
            continue;
        }
        out.settings.push(Setting {
            key: key.to_string(),
            value: value.to_string(),
            line: i + 1,
            filter: filter.clone(),
        });
    }
    out
}

/// The model filters that match a board, from its device-tree model ("Raspberry Pi 4 Model B Rev 1.5").
pub(crate) fn model_filters(model: &str) -> Vec<&'static str> {
    let m = model.to_ascii_lowercase();
    let mut f = Vec::new();
    let has = |s: &str| m.contains(s);
    if has("raspberry pi 5") || has("raspberry pi 500") || has("compute module 5") {
        f.push("pi5");
    }
    if has("raspberry pi 500") {
        f.push("pi500");
    }
    if has("compute module 5") {
        f.push("cm5");
    }
    if has("raspberry pi 4") || has("raspberry pi 400") || has("compute module 4") {
        f.push("pi4");
    }
    if has("raspberry pi 400") {
        f.push("pi400");
    }
    if has("compute module 4") {
        f.push("cm4");
    }
    if has("raspberry pi 3") || has("compute module 3") {
        f.push("pi3");
    }
    if has("raspberry pi 3 model b plus") || has("raspberry pi 3 model a plus") {
        f.push("pi3+");
    }
    if has("raspberry pi zero 2") {
        f.push("pi02");
    }
    f
}

const MODEL_FILTERS: &[&str] = &[
    "pi0", "pi0w", "pi02", "pi1", "pi2", "pi3", "pi3+", "pi4", "pi400", "pi5", "pi500", "cm4",
    "cm4s", "cm5",
];

/// Whether a setting under `filter` applies on a board whose model filters are `models`.
pub(crate) fn applies(filter: Option<&str>, models: &[&str]) -> Applies {
    match filter {
        None => Applies::Yes,
        Some("none") => Applies::No,
        Some(f) if MODEL_FILTERS.contains(&f) => {
            if models.contains(&f) {
                Applies::Yes
            } else {
                Applies::No
            }
        }
        Some(_) => Applies::Maybe,
    }
}

impl ConfigTxt {
    /// The setting of `key` that wins on this board (the last one that applies or may apply).
    pub(crate) fn get(&self, key: &str, models: &[&str]) -> Option<(&Setting, Applies)> {
        self.settings
            .iter()
            .rev()
            .filter(|s| s.key == key)
            .map(|s| (s, applies(s.filter.as_deref(), models)))
            .find(|(_, a)| *a != Applies::No)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Written by Debian bookworm's raspi-firmware 1.20220830+ds-1 (its kernel hook z50-raspi-firmware, run for a
    // Pi 4 with linux-image-rt-arm64; see tests/fixtures/README.md), without and with
    // /etc/default/raspi-firmware-custom holding "force_turbo=1" and "arm_freq=1500".
    const DEBIAN: &str =
        include_str!("../../tests/fixtures/samples/rpi4-config-debian-raspi-firmware.txt");
    const DEBIAN_CUSTOM: &str =
        include_str!("../../tests/fixtures/samples/rpi4-config-debian-raspi-firmware-custom.txt");
    const SECTIONS: &str =
        include_str!("../../tests/fixtures/samples/rpi-config-sections-handmade.txt");
    const PI4: &str = "Raspberry Pi 4 Model B Rev 1.5";

    #[test]
    fn debian_raspi_firmware_files() {
        let m = model_filters(PI4);
        let c = parse(DEBIAN);
        assert_eq!(c.get("arm_64bit", &m).unwrap().0.value, "1");
        assert_eq!(
            c.get("kernel", &m).unwrap().0.value,
            "vmlinuz-6.1.0-28-rt-arm64"
        );
        // "initramfs FILE" is a directive without '='.
        assert_eq!(
            c.get("initramfs", &m).unwrap().0.value,
            "initrd.img-6.1.0-28-rt-arm64"
        );
        assert!(c.get("force_turbo", &m).is_none());
        let c = parse(DEBIAN_CUSTOM);
        let (s, a) = c.get("force_turbo", &m).unwrap();
        assert_eq!((s.value.as_str(), s.line, a), ("1", 22, Applies::Yes));
        assert_eq!(c.get("arm_freq", &m).unwrap().0.value, "1500");
    }

    #[test]
    fn sections_follow_the_board() {
        let c = parse(SECTIONS);
        assert_eq!(c.includes, ["extra.txt"]);
        let pi4 = model_filters(PI4);
        assert_eq!(pi4, ["pi4"]);
        assert_eq!(c.get("arm_freq", &pi4).unwrap().0.value, "1800");
        assert_eq!(c.get("arm_boost", &pi4).unwrap().1, Applies::Yes);
        // [cm4]'s force_turbo is not this board's; [HDMI:0]'s depends on a display.
        let (s, a) = c.get("force_turbo", &pi4).unwrap();
        assert_eq!((s.filter.as_deref(), a), (Some("hdmi:0"), Applies::Maybe));
        let cm4 = model_filters("Raspberry Pi Compute Module 4 Rev 1.0");
        assert_eq!(cm4, ["pi4", "cm4"]);
        assert_eq!(c.get("otg_mode", &cm4).unwrap().1, Applies::Yes);
        assert!(c.get("otg_mode", &pi4).is_none());
        let pi5 = model_filters("Raspberry Pi 5 Model B Rev 1.0");
        assert_eq!(c.get("arm_freq", &pi5).unwrap().0.value, "2400");
        assert!(c.get("arm_freq_min", &pi5).is_none());
        assert_eq!(
            model_filters("QEMU KVM Virtual Machine"),
            Vec::<&str>::new()
        );
        assert_eq!(applies(Some("none"), &pi4), Applies::No);
    }
}
