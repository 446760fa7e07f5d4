//! /proc/cpuinfo: the CPU model for the report header, per-CPU "cpu MHz", and the architecture when
//! /proc/sys/kernel/arch is missing. x86 has "model name"; arm64 has none, only "CPU implementer"/"CPU part"
//! (and on Raspberry Pi kernels "Hardware"/"Model").

/// Key/value blocks, one per processor (blank-line separated); trailing machine-wide lines form the last block.
fn blocks(text: &str) -> Vec<Vec<(&str, &str)>> {
    let mut out = vec![Vec::new()];
    for line in text.lines() {
        if line.trim().is_empty() {
            if out.last().is_some_and(|b| !b.is_empty()) {
                out.push(Vec::new());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':')
            && let Some(b) = out.last_mut()
        {
            b.push((k.trim(), v.trim()));
        }
    }
    out.retain(|b| !b.is_empty());
    out
}

fn first<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    blocks(text)
        .into_iter()
        .flatten()
        .find(|(k, v)| *k == key && !v.is_empty())
        .map(|(_, v)| v)
}

/// Arm's own core names by "CPU part" (implementer 0x41), from the Arm TRMs.
fn arm_part(part: &str) -> Option<&'static str> {
    Some(match part.to_ascii_lowercase().as_str() {
        "0xd03" => "Cortex-A53",
        "0xd04" => "Cortex-A35",
        "0xd05" => "Cortex-A55",
        "0xd07" => "Cortex-A57",
        "0xd08" => "Cortex-A72",
        "0xd09" => "Cortex-A73",
        "0xd0a" => "Cortex-A75",
        "0xd0b" => "Cortex-A76",
        "0xd0c" => "Neoverse-N1",
        "0xd0d" => "Cortex-A77",
        "0xd41" => "Cortex-A78",
        "0xd46" => "Cortex-A510",
        "0xd47" => "Cortex-A710",
        "0xd40" => "Neoverse-V1",
        "0xd49" => "Neoverse-N2",
        _ => return None,
    })
}

/// A human name for the CPU: "model name" (x86); else the board "Model" and the Arm core name
/// ("Raspberry Pi 4 Model B Rev 1.5 (Cortex-A72)"); else "Hardware"; else None.
pub fn model(text: &str) -> Option<String> {
    model_raw(text).map(|m| super::text::sanitize(&m, MODEL_MAX))
}

/// A model name longer than this is cut (a real one is under 64 characters): it is printed and put in JSON.
pub const MODEL_MAX: usize = 120;

fn model_raw(text: &str) -> Option<String> {
    if let Some(m) = first(text, "model name") {
        return Some(m.to_string());
    }
    let core = match (first(text, "CPU implementer"), first(text, "CPU part")) {
        (Some("0x41"), Some(p)) => arm_part(p).map(str::to_string),
        (Some(i), Some(p)) => Some(format!("implementer {i} part {p}")),
        _ => None,
    };
    let board = first(text, "Model").or_else(|| first(text, "Hardware"));
    match (board, core) {
        (Some(b), Some(c)) => Some(format!("{b} ({c})")),
        (Some(b), None) => Some(b.to_string()),
        (None, Some(c)) => Some(c),
        (None, None) => first(text, "cpu model").map(str::to_string),
    }
}

/// The number of "processor" entries.
pub fn processors(text: &str) -> usize {
    blocks(text)
        .iter()
        .filter(|b| b.iter().any(|(k, _)| *k == "processor"))
        .count()
}

/// "cpu MHz" of processor `cpu` (x86 only).
pub fn mhz(text: &str, cpu: usize) -> Option<f64> {
    let b = blocks(text).into_iter().find(|b| {
        b.iter()
            .any(|(k, v)| *k == "processor" && v.parse::<usize>().ok() == Some(cpu))
    })?;
    b.iter()
        .find(|(k, _)| *k == "cpu MHz")
        .and_then(|(_, v)| v.parse().ok())
}

/// The architecture as `uname -m` names it, guessed from cpuinfo's fields.
pub fn guess_arch(text: &str) -> Option<&'static str> {
    if let Some(flags) = first(text, "flags") {
        return Some(if flags.split_whitespace().any(|f| f == "lm") {
            "x86_64"
        } else {
            "i686"
        });
    }
    match first(text, "CPU architecture") {
        Some("8") | Some("AArch64") => Some("aarch64"),
        Some("7") => Some("armv7l"),
        _ => None,
    }
}

/// The first processor's "flags" (x86: what the CPU supports and the kernel did not turn off); None where the
/// file has no flags line (arm64 says "Features").
pub(crate) fn flags(text: &str) -> Option<Vec<&str>> {
    first(text, "flags").map(|f| f.split_whitespace().collect())
}

/// The first processor's "vendor_id" ("GenuineIntel", "AuthenticAMD"); None on arm64, which has none.
pub(crate) fn vendor(text: &str) -> Option<&str> {
    first(text, "vendor_id")
}

/// The first processor's "cpu family" and "model" (x86, decimal as the kernel prints them).
pub(crate) fn family_model(text: &str) -> Option<(u32, u32)> {
    Some((
        first(text, "cpu family")?.parse().ok()?,
        first(text, "model")?.parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const QEMU: &str = include_str!("../../tests/fixtures/samples/cpuinfo-debian12-rt-qemu.txt");
    const RPI4: &str = include_str!("../../tests/fixtures/samples/cpuinfo-rpi4-arm64-handmade.txt");

    #[test]
    fn x86_captured_guest() {
        // Captured from the Debian 12 RT guest (fixtures/debian12-rt-qemu-isolated).
        assert_eq!(model(QEMU).as_deref(), Some("QEMU TCG CPU version 2.5+"));
        assert_eq!(processors(QEMU), 2);
        assert_eq!(guess_arch(QEMU), Some("x86_64"));
        assert!(mhz(QEMU, 1).is_some());
        assert_eq!(mhz(QEMU, 7), None);
        // The captured guest runs on an AMD host under QEMU: x2apic and hypervisor, no invariant TSC.
        assert_eq!(vendor(QEMU), Some("AuthenticAMD"));
        assert_eq!(family_model(QEMU), Some((6, 6)));
        let f = flags(QEMU).unwrap();
        assert!(f.contains(&"x2apic") && f.contains(&"hypervisor"));
        assert!(!f.contains(&"nonstop_tsc"));
    }

    #[test]
    fn arm64_has_no_model_name() {
        // Hand-made in the layout of a Raspberry Pi OS arm64 kernel on a Pi 4 (seed 003's board).
        assert_eq!(
            model(RPI4).as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.5 (Cortex-A72)")
        );
        assert_eq!(processors(RPI4), 4);
        assert_eq!(guess_arch(RPI4), Some("aarch64"));
        assert_eq!(mhz(RPI4, 0), None);
        assert_eq!(flags(RPI4), None);
        assert_eq!(vendor(RPI4), None);
        assert_eq!(family_model(RPI4), None);
        // Debian's mainline arm64 kernel prints no Model/Hardware lines.
        let mainline =
            "processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd03\n";
        assert_eq!(model(mainline).as_deref(), Some("Cortex-A53"));
        assert_eq!(model("garbage\u{0}"), None);
    }
}
