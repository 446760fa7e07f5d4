//! Model-specific registers through the kernel's msr driver (/dev/cpu/N/msr: a pread at the register's number),
//! read through `Host` so that a `--root` tree's sparse file answers for its machine. The one home of the MSR
//! numbers rmp-eval reads and of what their absence means.

use crate::host::{Host, HostError};

/// MSR_SMI_COUNT: System Management Interrupts since reset, bits 31:0 (Intel SDM vol. 4, since Nehalem).
pub(crate) const SMI_COUNT: u64 = 0x34;
/// Where the msr driver shows whether it is loaded (module or built in).
pub(crate) const MSR_MODULE: &str = "/sys/module/msr";

pub(crate) fn dev(cpu: usize) -> String {
    format!("/dev/cpu/{cpu}/msr")
}

/// Why MSRs cannot be read on this kind of machine at all, before trying: they are an x86 thing.
pub(crate) fn not_x86(host: &Host) -> Option<String> {
    let arch = super::machine(host).unwrap_or_default();
    let x86 = matches!(arch.as_str(), "x86_64" | "i686" | "i586" | "i386") || arch.is_empty();
    (!x86).then(|| format!("{arch} has no SMIs or MSRs to count them (an x86 mechanism)"))
}

fn amd(host: &Host) -> bool {
    host.read(super::PROC_CPUINFO).is_ok_and(|t| {
        t.lines()
            .find(|l| l.starts_with("vendor_id"))
            .is_some_and(|l| l.contains("AuthenticAMD") || l.contains("HygonGenuine"))
    })
}

/// Reads register `reg` of `cpu`; the error says why in words fit for a result ("the msr driver is not loaded").
pub(crate) fn read(host: &Host, cpu: usize, reg: u64) -> Result<u64, String> {
    let path = dev(cpu);
    host.read_u64_at(&path, reg).map_err(|e| match e {
        HostError::NotFound { .. } => format!("{path} missing: the msr driver is not loaded"),
        HostError::PermissionDenied { .. } => {
            format!("{path}: permission denied (reading MSRs takes root: CAP_SYS_RAWIO)")
        }
        HostError::Io { ref source, .. } if source.raw_os_error() == Some(libc::EIO) => {
            let amd = if amd(host) {
                " — AMD processors have no such register"
            } else {
                ""
            };
            format!("the processor refused to read MSR {reg:#x} (EIO){amd}")
        }
        other => other.to_string(),
    })
}

/// The SMI count of `cpu` (the register's low 32 bits; the rest is reserved).
pub(crate) fn smi_count(host: &Host, cpu: usize) -> Result<u64, String> {
    read(host, cpu, SMI_COUNT).map(|v| v & 0xffff_ffff)
}

/// SMIs between two readings of the 32-bit counter (it wraps).
pub(crate) fn smi_delta(before: u64, after: u64) -> u64 {
    after.wrapping_sub(before) & 0xffff_ffff
}

#[cfg(test)]
mod tests {
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
        assert_eq!(smi_count(&h, 1), Ok(0x10 | 37_577));
        let e = smi_count(&h, 0).unwrap_err();
        assert!(e.contains("/dev/cpu/0/msr missing"), "{e}");
        // A file too short for the register: an error, never a zero.
        assert!(read(&h, 1, 0x1000).is_err());
    }

    #[test]
    fn a_device_node_in_a_tree_is_not_opened() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("dev/cpu/0")).unwrap();
        crate::sys::fs::mkfifo(&d.path().join("dev/cpu/0/msr"), 0o600).unwrap();
        let e = smi_count(&Host::with_root(d.path()), 0).unwrap_err();
        assert!(e.contains("not a regular file (FIFO)"), "{e}");
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
        assert!(not_x86(&pi).unwrap().starts_with("aarch64 has no SMIs"));
        let q = Host::with_root(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/debian12-rt-qemu-isolated"),
        );
        assert_eq!(not_x86(&q), None);
    }
}
