//! Which board and firmware this is: the SMBIOS identity the kernel exports in /sys/class/dmi/id (x86, and arm64
//! machines with UEFI), else the device tree's model (a Raspberry Pi, most arm64 boards). The one home of these
//! paths; the check header, every result, the metrics and compare take it from here.

use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::machine::DT_MODEL;
use crate::parse::dmi;
use crate::parse::text::sanitize;

pub(crate) const DMI_DIR: &str = "/sys/class/dmi/id";
/// Each field is one SMBIOS string (at most 64 bytes in practice): bounded as a finding's detail is.
const MAX: usize = 120;

/// The SMBIOS strings that name the machine and its firmware (never a serial number or UUID: those are
/// root-only and say who owns it, not what it is). A field the firmware left empty or as a placeholder is None.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct Firmware {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) system_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) product_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) board_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) board: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) board_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bios_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bios_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bios_date: Option<String>,
    /// The device tree's model, where there is no SMBIOS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dt_model: Option<String>,
    /// Why nothing names the machine, when nothing does: a reader of the result sees a reason, not `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unknown: Option<String>,
}

/// Reads the identity through `host` (a `--root` tree or snapshot gives its own machine's).
pub(crate) fn read(host: &Host) -> Firmware {
    let f = |name: &str| {
        host.read(&format!("{DMI_DIR}/{name}"))
            .ok()
            .and_then(|t| dmi::value(&t))
            .map(|v| sanitize(&v, MAX))
    };
    let mut fw = Firmware {
        system_vendor: f("sys_vendor"),
        product: f("product_name"),
        product_version: f("product_version"),
        board_vendor: f("board_vendor"),
        board: f("board_name"),
        board_version: f("board_version"),
        bios_vendor: f("bios_vendor"),
        bios_version: f("bios_version"),
        bios_date: f("bios_date"),
        dt_model: None,
        unknown: None,
    };
    if fw.machine_key().is_empty() {
        fw.dt_model = board_model(host).map(|v| sanitize(&v, MAX));
    }
    if fw.machine_key().is_empty() {
        fw.unknown = Some(unknown_reason(host.exists(DMI_DIR)).into());
    }
    fw
}

/// Why no identity was found: no SMBIOS at all (a VM without it, most arm64 boards) or only empty strings.
fn unknown_reason(has_dmi: bool) -> &'static str {
    if has_dmi {
        "no SMBIOS or device-tree identity: the SMBIOS strings are empty or placeholders and there is no device-tree model"
    } else {
        "no SMBIOS or device-tree identity: the kernel exports no SMBIOS table (/sys/class/dmi/id) and there is no device-tree model"
    }
}

/// The board's model: the device tree's, else /proc/cpuinfo's "Model" (Raspberry Pi kernels print it).
pub(crate) fn board_model(host: &Host) -> Option<String> {
    if let Some(m) = host.read(DT_MODEL).ok().and_then(|t| dmi::dt_model(&t)) {
        return Some(m);
    }
    let info = host.read(crate::machine::PROC_CPUINFO).ok()?;
    info.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == "Model")
        .and_then(|(_, v)| dmi::value(v))
}

fn join(parts: &[&Option<String>]) -> String {
    let v: Vec<&str> = parts.iter().filter_map(|p| p.as_deref()).collect();
    v.join(" ")
}

impl Firmware {
    /// What names the machine: system and board, or the device-tree model. Empty when nothing is known.
    pub(crate) fn machine_key(&self) -> String {
        let sys = join(&[&self.system_vendor, &self.product, &self.product_version]);
        let board = join(&[&self.board_vendor, &self.board, &self.board_version]);
        let dt = self.dt_model.clone().unwrap_or_default();
        [sys, board, dt]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// The firmware's vendor, version and date. Empty when none is known.
    pub(crate) fn bios_key(&self) -> String {
        let mut s = join(&[&self.bios_vendor, &self.bios_version]);
        if let Some(d) = &self.bios_date {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(&format!("({d})"));
        }
        s
    }

    /// "Advantech UNO-127 (board Advantech UNO-127)", or the device-tree model, or what says why it is unknown.
    pub(crate) fn machine_line(&self) -> String {
        let sys = join(&[&self.system_vendor, &self.product, &self.product_version]);
        let board = join(&[&self.board_vendor, &self.board, &self.board_version]);
        match (sys.is_empty(), board.is_empty(), &self.dt_model) {
            (false, false, _) => format!("{sys} (board {board})"),
            (false, true, _) => sys,
            (true, false, _) => format!("board {board}"),
            (true, true, Some(m)) => format!("{m} (board model)"),
            (true, true, None) => format!(
                "unknown ({})",
                self.unknown
                    .as_deref()
                    .unwrap_or("no SMBIOS or device-tree identity")
            ),
        }
    }

    /// "American Megatrends International, LLC. V1.13 (08/01/2023)", or "unknown".
    pub(crate) fn bios_line(&self) -> String {
        let s = self.bios_key();
        if s.is_empty() { "unknown".into() } else { s }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> Host {
        Host::with_root(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/samples/dmi")
                .join(name),
        )
    }

    /// A real industrial PC's identity (tests/fixtures/samples/dmi/README.md names the source).
    #[test]
    fn an_advantech_uno_127_reads_as_itself() {
        let fw = read(&sample("advantech-uno-127"));
        assert_eq!(fw.system_vendor.as_deref(), Some("Advantech"));
        assert_eq!(fw.product.as_deref(), Some("UNO-127"));
        // "Default string" in SMBIOS: no version.
        assert_eq!(fw.product_version, None);
        assert_eq!(fw.bios_version.as_deref(), Some("V1.13"));
        assert_eq!(
            fw.machine_line(),
            "Advantech UNO-127 (board Advantech UNO-127)"
        );
        assert_eq!(
            fw.bios_line(),
            "American Megatrends International, LLC. V1.13 (08/01/2023)"
        );
        assert_eq!(fw.dt_model, None);
    }

    #[test]
    fn the_pi_by_its_device_tree_and_an_empty_tree() {
        let pi = read(&Host::with_root(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rpi4-arm64"),
        ));
        assert_eq!(
            pi.machine_line(),
            "Raspberry Pi 4 Model B Rev 1.5 (board model)"
        );
        assert_eq!(pi.bios_line(), "unknown");
        let d = tempfile::tempdir().unwrap();
        let none = read(&Host::with_root(d.path()));
        assert!(none.machine_key().is_empty());
        assert!(none.machine_line().starts_with("unknown"));
        assert_eq!(pi.unknown, None);
    }

    #[test]
    fn a_result_says_why_no_identity_was_found() {
        let d = tempfile::tempdir().unwrap();
        let none = read(&Host::with_root(d.path()));
        let json = serde_json::to_value(&none).unwrap();
        assert!(
            json["unknown"]
                .as_str()
                .unwrap()
                .contains("exports no SMBIOS table"),
            "{json}"
        );
        let dmi = d.path().join("sys/class/dmi/id");
        std::fs::create_dir_all(&dmi).unwrap();
        for f in ["sys_vendor", "product_name", "board_name"] {
            std::fs::write(dmi.join(f), "To Be Filled By O.E.M.\n").unwrap();
        }
        let placeholders = read(&Host::with_root(d.path()));
        assert!(
            placeholders
                .machine_line()
                .contains("empty or placeholders"),
            "{}",
            placeholders.machine_line()
        );
    }

    #[test]
    fn hostile_values_are_escaped_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("sys/class/dmi/id");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("sys_vendor"), "Evil\x1b[2J\n").unwrap();
        std::fs::write(dir.join("product_name"), "x".repeat(5000)).unwrap();
        let fw = read(&Host::with_root(d.path()));
        assert_eq!(fw.system_vendor.as_deref(), Some("Evil\\u{1b}[2J"));
        assert!(fw.product.unwrap().chars().count() <= MAX + 1);
    }
}
