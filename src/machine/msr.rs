//! Model-specific registers through the kernel's msr driver (/dev/cpu/N/msr: a pread at the register's number),
//! read through `Host` so that a `--root` tree's sparse file answers for its machine. The one home of the MSR
//! numbers rmp-eval reads and of what their absence means.

use crate::host::{Host, HostError};

/// MSR_SMI_COUNT: System Management Interrupts since reset, bits 31:0 (Intel SDM vol. 4, since Nehalem).
pub(crate) const SMI_COUNT: u64 = 0x34;
/// IA32_APIC_BASE: bit 11 APIC global enable, bit 10 x2APIC mode enable (EXTD) (Intel SDM vol. 4 table 2-2 and
/// vol. 3A's APIC chapter; the same register on AMD, AMD64 APM vol. 2's APIC chapter).
pub(crate) const APIC_BASE: u64 = 0x1b;
/// MSR_PKG_CST_CONFIG_CONTROL: bits 2:0 (3:0 from Haswell on) the package C-state limit, bit 15 CFG Lock
/// (Intel SDM vol. 4, the model tables from Nehalem on; Intel only).
pub(crate) const PKG_CST_CONFIG_CONTROL: u64 = 0xe2;
/// IA32_MISC_ENABLE: bit 38 Turbo Mode Disable (IDA disable) (Intel SDM vol. 4 table 2-2, vol. 3B's opportunistic
/// processor operation section; Intel only).
pub(crate) const MISC_ENABLE: u64 = 0x1a0;
/// Where the msr driver shows whether it is loaded (module or built in).
pub(crate) const MSR_MODULE: &str = "/sys/module/msr";

/// Why a model-specific register cannot be read, in words fit for a result ("the msr driver is not loaded").
#[derive(Debug, thiserror::Error)]
pub(crate) enum MsrError {
    #[error("{arch} has no SMIs or MSRs to count them (an x86 mechanism)")]
    NotX86 { arch: String },
    #[error("AMD processors have no {name} (an Intel register)")]
    NotIntel { name: String },
    #[error("{path} missing: the msr driver is not loaded (`modprobe msr` loads it)")]
    NoDriver { path: String },
    #[error("{path} missing: this tree holds no MSRs (`snapshot` does not capture them)")]
    NotInTree { path: String },
    #[error("{path}: permission denied (reading MSRs takes root: CAP_SYS_RAWIO)")]
    NoPermission { path: String },
    #[error("the processor refused to read MSR {reg:#x} (EIO){}", if *.amd { " — AMD processors have no such register" } else { "" })]
    Refused { reg: u64, amd: bool },
    #[error(transparent)]
    Host(HostError),
}

pub(crate) fn dev(cpu: usize) -> String {
    format!("/dev/cpu/{cpu}/msr")
}

/// Why MSRs cannot be read on this kind of machine at all, before trying: they are an x86 thing.
pub(crate) fn not_x86(host: &Host) -> Option<MsrError> {
    let arch = super::machine(host).unwrap_or_default();
    let x86 = matches!(arch.as_str(), "x86_64" | "i686" | "i586" | "i386") || arch.is_empty();
    (!x86).then_some(MsrError::NotX86 { arch })
}

fn amd(host: &Host) -> bool {
    super::cpu_vendor(host).is_some_and(|v| v == "AuthenticAMD" || v == "HygonGenuine")
}

/// Why an Intel-only register (`name`, e.g. "MSR_SMI_COUNT") cannot be read here, before trying: not x86, or an
/// AMD/Hygon processor, which has no such register.
pub(crate) fn not_intel(host: &Host, name: &str) -> Option<MsrError> {
    if let Some(why) = not_x86(host) {
        return Some(why);
    }
    amd(host).then(|| MsrError::NotIntel { name: name.into() })
}

/// True when cpuinfo says this is a virtual machine (the `hypervisor` flag): its MSRs are the hypervisor's
/// emulation, not the firmware's, and SMIs of the host are not counted in it.
pub(crate) fn virtual_machine(host: &Host) -> bool {
    super::cpu_flags(host).is_ok_and(|f| f.iter().any(|f| f == "hypervisor"))
}

/// Reads register `reg` of `cpu`; the error says why.
pub(crate) fn read(host: &Host, cpu: usize, reg: u64) -> Result<u64, MsrError> {
    let path = dev(cpu);
    host.read_u64_at(&path, reg)
        .map_err(|e| why(host, path, reg, e))
}

/// Why `path` (register `reg`) could not be opened or read, from what `Host` said.
pub(crate) fn why(host: &Host, path: String, reg: u64, e: HostError) -> MsrError {
    match e {
        // check reads files only: it says what would load the driver rather than loading it.
        HostError::NotFound { .. } if host.is_live() => MsrError::NoDriver { path },
        HostError::NotFound { .. } => MsrError::NotInTree { path },
        HostError::PermissionDenied { .. } => MsrError::NoPermission { path },
        HostError::Io { ref source, .. } if source.raw_os_error() == Some(libc::EIO) => {
            MsrError::Refused {
                reg,
                amd: amd(host),
            }
        }
        other => MsrError::Host(other),
    }
}

/// The SMI count of `cpu` (the register's low 32 bits; the rest is reserved).
pub(crate) fn smi_count(host: &Host, cpu: usize) -> Result<u64, MsrError> {
    read(host, cpu, SMI_COUNT).map(|v| v & 0xffff_ffff)
}

/// SMIs between two readings of the 32-bit counter (it wraps).
pub(crate) fn smi_delta(before: u64, after: u64) -> u64 {
    after.wrapping_sub(before) & 0xffff_ffff
}

/// MSR_PKG_CST_CONFIG_CONTROL as far as it is model-independent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PkgCstConfig {
    /// The package C-state limit code, bits 3:0 (bit 3 is reserved, so 0, before Haswell). 0 is C0/C1 (no
    /// package C-state) on every model the SDM lists; what the other codes mean differs per model.
    pub(crate) limit: u8,
    /// CFG Lock, bit 15: bits 15:0 cannot be written until reset — only the firmware sets the limit.
    pub(crate) locked: bool,
}

impl PkgCstConfig {
    pub(crate) fn from_raw(v: u64) -> Self {
        PkgCstConfig {
            limit: (v & 0xf) as u8,
            locked: v & (1 << 15) != 0,
        }
    }
}

/// Intel's Atom cores: family 6 models named INTEL_ATOM_* in the kernel's arch/x86/include/asm/intel-family.h
/// (Silvermont 0x37, 0x4A, 0x4D, 0x5D; Airmont 0x4C, 0x5A, 0x75; Goldmont 0x5C, 0x5F; Goldmont Plus 0x7A; Tremont
/// 0x86, 0x96, 0x9C; Gracemont 0xBE; Crestmont 0xAF, 0xB6; Darkmont 0xDD). The SDM's MSR_PKG_CST_CONFIG_CONTROL
/// tables for Atom number the limit codes differently from the Core and Xeon tables, so code 0 is not known to
/// mean C0/C1 there.
const ATOM_MODELS: &[u32] = &[
    0x37, 0x4a, 0x4d, 0x5d, 0x4c, 0x5a, 0x75, 0x5c, 0x5f, 0x7a, 0x86, 0x96, 0x9c, 0xbe, 0xaf, 0xb6,
    0xdd,
];

/// True for an Intel Atom core (family 6, a model in ATOM_MODELS).
pub(crate) fn atom(family: u32, model: u32) -> bool {
    family == 6 && ATOM_MODELS.contains(&model)
}

/// IA32_MISC_ENABLE bit 38: the firmware turned turbo off (CPUID.06H:EAX[1] then reads 0).
pub(crate) fn turbo_disabled(misc_enable: u64) -> bool {
    misc_enable & (1 << 38) != 0
}

/// The local APIC's mode, from IA32_APIC_BASE bits 11 (enable) and 10 (x2APIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApicMode {
    Disabled,
    XApic,
    X2Apic,
    /// x2APIC set without the global enable: the SDM's x2APIC state transitions call it invalid.
    Invalid,
}

pub(crate) fn apic_mode(apic_base: u64) -> ApicMode {
    match (apic_base & (1 << 11) != 0, apic_base & (1 << 10) != 0) {
        (true, true) => ApicMode::X2Apic,
        (true, false) => ApicMode::XApic,
        (false, false) => ApicMode::Disabled,
        (false, true) => ApicMode::Invalid,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tree whose /dev/cpu/N/msr is a sparse file holding `value` at `reg`, as a `--root` tree carries it.
    pub(crate) fn tree_with(cpu: usize, reg: u64, value: u64) -> tempfile::TempDir {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(format!("dev/cpu/{cpu}"));
        std::fs::create_dir_all(&dir).unwrap();
        let f = std::fs::File::create(dir.join("msr")).unwrap();
        f.write_all_at(&value.to_le_bytes(), reg).unwrap();
        d
    }

    #[test]
    fn a_trees_sparse_file_is_read_at_the_register() {
        let d = tree_with(1, SMI_COUNT, 0xdead_0000_0000_0010 | 37_577);
        let h = Host::with_root(d.path());
        // The reserved upper half is dropped.
        assert_eq!(smi_count(&h, 1).unwrap(), 0x10 | 37_577);
        let e = smi_count(&h, 0).unwrap_err().to_string();
        assert!(e.contains("/dev/cpu/0/msr missing"), "{e}");
        // A file too short for the register: an error, never a zero.
        assert!(read(&h, 1, 0x1000).is_err());
    }

    #[test]
    fn a_device_node_in_a_tree_is_not_opened() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("dev/cpu/0")).unwrap();
        crate::sys::fs::mkfifo(&d.path().join("dev/cpu/0/msr"), 0o600).unwrap();
        let e = smi_count(&Host::with_root(d.path()), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file (FIFO)"), "{e}");
    }

    #[test]
    fn package_cstate_limit_and_lock() {
        // Values built from the SDM's layout (no Intel machine here to read one from): limit in bits 3:0, CFG Lock
        // bit 15; bits 28:25 (C-state auto-demotion/undemotion) and 10 (I/O MWAIT redirection) set as firmware
        // defaults often leave them, and ignored. Limit 7 is "no limit" on Skylake-class tables.
        assert_eq!(
            PkgCstConfig::from_raw(0x1e00_8407),
            PkgCstConfig {
                limit: 7,
                locked: true
            }
        );
        // A BIOS set to "Package C-State limit: C0/C1" with CFG Lock off.
        assert_eq!(
            PkgCstConfig::from_raw(0x1e00_0400),
            PkgCstConfig {
                limit: 0,
                locked: false
            }
        );
        // Haswell's 4-bit codes (C10 is 0b1000) are kept whole.
        assert_eq!(PkgCstConfig::from_raw(0x8008).limit, 8);
    }

    #[test]
    fn turbo_disable_is_bit_38_alone() {
        // Built from the SDM's layout: 0x850089 sets bits 0 (fast strings), 3, 7, 16, 18, 23 — other enables.
        assert!(!turbo_disabled(0x85_0089));
        assert!(turbo_disabled(0x40_0085_0089));
        assert!(!turbo_disabled(1 << 37 | 1 << 39));
    }

    #[test]
    fn atom_cores_by_family_and_model() {
        // Apollo Lake (Goldmont 0x5C) and Elkhart Lake (Tremont 0x96), common in industrial PCs; the seed's
        // i3-13100TE (Raptor Lake 0xB7 = 183) is not one, nor is family 15.
        assert!(atom(6, 0x5c) && atom(6, 0x96));
        assert!(!atom(6, 183));
        assert!(!atom(15, 0x5c));
    }

    #[test]
    fn apic_base_modes() {
        // 0xfee00900: the default base 0xfee00000, BSP (bit 8), enabled (bit 11), xAPIC; 0xfee00d00 with x2APIC.
        assert_eq!(apic_mode(0xfee0_0900), ApicMode::XApic);
        assert_eq!(apic_mode(0xfee0_0d00), ApicMode::X2Apic);
        assert_eq!(apic_mode(0xfee0_0000), ApicMode::Disabled);
        assert_eq!(apic_mode(0xfee0_0400), ApicMode::Invalid);
    }

    #[test]
    fn the_counter_wraps_at_32_bits() {
        assert_eq!(smi_delta(37_577, 37_777), 200);
        assert_eq!(smi_delta(0xffff_fffe, 3), 5);
    }

    #[test]
    fn arm64_says_why_before_trying() {
        let pi = Host::with_root(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rpi4-arm64"),
        );
        assert!(
            not_x86(&pi)
                .unwrap()
                .to_string()
                .starts_with("aarch64 has no SMIs")
        );
        let q = Host::with_root(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/debian12-rt-qemu-isolated"),
        );
        assert!(not_x86(&q).is_none());
    }
}
