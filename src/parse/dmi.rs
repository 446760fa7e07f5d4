//! SMBIOS strings as the kernel gives them (one file per field in /sys/class/dmi/id, a line each) and the
//! device tree's model (a NUL-terminated string). Board makers leave fields they do not fill with a placeholder
//! ("Default string", "To Be Filled By O.E.M."): such a value names no machine, so it reads as absent.

/// Placeholders the AMI/Insyde/Phoenix templates ship (compared without case).
const PLACEHOLDERS: &[&str] = &[
    "default string",
    "to be filled by o.e.m.",
    "not specified",
    "not applicable",
    "system product name",
    "system manufacturer",
    "system version",
    "base board product name",
    "none",
    "n/a",
];

/// One dmi/id file's value: trimmed; None when empty or a placeholder.
pub(crate) fn value(text: &str) -> Option<String> {
    let v = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    let placeholder = PLACEHOLDERS.iter().any(|p| v.eq_ignore_ascii_case(p));
    (!v.is_empty() && !placeholder).then(|| v.to_string())
}

/// The device tree's `model` property: the string before its NUL.
pub(crate) fn dt_model(text: &str) -> Option<String> {
    value(text.split('\0').next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of a real Advantech UNO-127 (Atom x6413E) as its dmidecode 3.0 dump gives them (linuxhw/DMI,
    /// Desktop/Advantech/UNO/UNO-127/FA80C8E84C2C); the kernel's dmi/id files hold the same SMBIOS strings, each
    /// with a newline.
    #[test]
    fn real_values_kept_placeholders_dropped() {
        assert_eq!(
            value("American Megatrends International, LLC.\n").as_deref(),
            Some("American Megatrends International, LLC.")
        );
        assert_eq!(value("V1.13\n").as_deref(), Some("V1.13"));
        assert_eq!(value("08/01/2023\n").as_deref(), Some("08/01/2023"));
        assert_eq!(value("Default string\n"), None);
        assert_eq!(value("To Be Filled By O.E.M.\n"), None);
        assert_eq!(value("   \n"), None);
        assert_eq!(value(""), None);
    }

    /// The rpi4-arm64 fixture's model (the device-tree string of a Pi 4 Model B Rev 1.5, seed 003).
    #[test]
    fn device_tree_model_stops_at_its_nul() {
        assert_eq!(
            dt_model("Raspberry Pi 4 Model B Rev 1.5\0").as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.5")
        );
        assert_eq!(dt_model("\0garbage"), None);
    }
}
