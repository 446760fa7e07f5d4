use std::os::unix::fs::FileExt;
use std::time::Instant;

use super::*;
use crate::checks::Status;
use crate::machine::msr::tests::tree_with;
use crate::machine::msr::{APIC_BASE, MISC_ENABLE, PKG_CST_CONFIG_CONTROL, SMI_COUNT};

const CORE: usize = 1;

fn ctx(smi_seconds: Option<u64>) -> Ctx {
    Ctx {
        core: CORE,
        nic: None,
        pid: None,
        smi_seconds,
    }
}

/// A tree of an x86 machine (`vendor`, cpuinfo `flags`) whose CPU 1 has the registers `regs` in its sparse
/// /dev/cpu/1/msr, as `--root` trees carry them; no msr file at all when `regs` is empty.
fn tree(vendor: &str, flags: &str, regs: &[(u64, u64)]) -> tempfile::TempDir {
    let d = match regs.first() {
        Some(&(reg, v)) => tree_with(CORE, reg, v),
        None => tempfile::tempdir().unwrap(),
    };
    if regs.len() > 1 {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join(format!("dev/cpu/{CORE}/msr")))
            .unwrap();
        for &(reg, v) in &regs[1..] {
            f.write_all_at(&v.to_le_bytes(), reg).unwrap();
        }
    }
    let w = |p: &str, t: &str| {
        let p = d.path().join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    };
    w("proc/sys/kernel/arch", "x86_64\n");
    w(
        "proc/cpuinfo",
        &format!(
            "processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n\nprocessor\t: 1\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n\n"
        ),
    );
    w("sys/devices/system/cpu/online", "0-1\n");
    w(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "tsc\n",
    );
    d
}

const INTEL_FLAGS: &str = "fpu tsc msr apic constant_tsc nonstop_tsc x2apic";

fn eval(c: &Check, d: &tempfile::TempDir, ctx: &Ctx) -> Eval {
    (c.evaluate)(&Host::with_root(d.path()), ctx)
}

fn why(e: Eval) -> String {
    match e {
        Err(Unknown(w)) => w,
        Ok(a) => panic!("a verdict where none can be given: {a:?}"),
    }
}

#[test]
fn smi_thresholds() {
    assert_eq!(smi_verdict(0, 1, 4).status, Status::Pass);
    let w = smi_verdict(3, 1, 4);
    assert_eq!(w.status, Status::Warn);
    assert_eq!(w.detail, "3 SMIs in 1 s (3.0/s; 4 CPUs read)");
    assert_eq!(smi_verdict(10, 1, 4).status, Status::Fail);
    // The rate, not the count, decides: 15 in 2 s is 7.5/s.
    assert_eq!(smi_verdict(15, 2, 4).status, Status::Warn);
}

#[test]
fn deep_package_cstates_allowed_and_locked_warn() {
    // Limit code 7 ("no limit" on Skylake-class tables) with CFG Lock, as firmware defaults leave it.
    let d = tree(
        "GenuineIntel",
        INTEL_FLAGS,
        &[(PKG_CST_CONFIG_CONTROL, 0x1e00_8407)],
    );
    let a = eval(&CSTATE_LIMIT, &d, &ctx(Some(1))).unwrap();
    assert_eq!(a.status, Status::Warn, "{a:?}");
    assert!(a.detail.starts_with("limit code 7:"), "{}", a.detail);
    assert!(a.detail.contains("CFG Lock on"), "{}", a.detail);
    // Set to C0/C1 in the BIOS: a pass, the lock reported as it is.
    let d = tree(
        "GenuineIntel",
        INTEL_FLAGS,
        &[(PKG_CST_CONFIG_CONTROL, 0x0400)],
    );
    let a = eval(&CSTATE_LIMIT, &d, &ctx(Some(1))).unwrap();
    assert_eq!(a.status, Status::Pass);
    assert_eq!(
        a.detail,
        "package C-state limit C0/C1 (code 0); CFG Lock off"
    );
}

#[test]
fn an_atom_cores_limit_code_is_reported_unjudged() {
    let d = tree(
        "GenuineIntel",
        INTEL_FLAGS,
        &[(PKG_CST_CONFIG_CONTROL, 0x8000)],
    );
    let info = d.path().join("proc/cpuinfo");
    let t = std::fs::read_to_string(&info).unwrap();
    std::fs::write(
        &info,
        t.replace("vendor_id", "cpu family\t: 6\nmodel\t\t: 92\nvendor_id"),
    )
    .unwrap();
    let w = why(eval(&CSTATE_LIMIT, &d, &ctx(Some(1))));
    assert!(
        w.starts_with("limit code 0 on an Atom core (model 0x5c)"),
        "{w}"
    );
}

#[test]
fn turbo_disabled_by_firmware_passes_and_turbo_left_on_is_information() {
    let d = tree(
        "GenuineIntel",
        INTEL_FLAGS,
        &[(MISC_ENABLE, 0x40_0085_0089)],
    );
    assert_eq!(
        eval(&TURBO_FIRMWARE, &d, &ctx(Some(1))).unwrap().status,
        Status::Pass
    );
    let d = tree("GenuineIntel", INTEL_FLAGS, &[(MISC_ENABLE, 0x85_0089)]);
    assert_eq!(
        eval(&TURBO_FIRMWARE, &d, &ctx(Some(1))).unwrap().status,
        Status::Info
    );
}

#[test]
fn no_msr_file_is_unknown_with_the_reason() {
    let d = tree("GenuineIntel", INTEL_FLAGS, &[]);
    for c in [&CSTATE_LIMIT, &TURBO_FIRMWARE, &SMI_RATE] {
        let w = why(eval(c, &d, &ctx(Some(1))));
        assert!(
            w == "/dev/cpu/1/msr missing: this tree holds no MSRs (`snapshot` does not capture them)",
            "{}: {w}",
            c.id
        );
    }
    // x2APIC: the flag tells support, not the mode.
    let w = why(eval(&X2APIC, &d, &ctx(None)));
    assert!(
        w.starts_with("the CPU offers x2APIC (cpuinfo), the mode is unread"),
        "{w}"
    );
}

#[test]
fn a_register_past_the_files_end_or_a_fifo_is_unknown_never_a_zero() {
    // Only MSR_SMI_COUNT was captured: 0x1A0 and 0xE2 lie past the end of the file.
    let d = tree("GenuineIntel", INTEL_FLAGS, &[(SMI_COUNT, 5)]);
    for c in [&CSTATE_LIMIT, &TURBO_FIRMWARE] {
        assert!(eval(c, &d, &ctx(Some(1))).is_err(), "{}", c.id);
    }
    let d = tree("GenuineIntel", INTEL_FLAGS, &[]);
    std::fs::create_dir_all(d.path().join("dev/cpu/1")).unwrap();
    crate::sys::fs::mkfifo(&d.path().join("dev/cpu/1/msr"), 0o600).unwrap();
    let w = why(eval(&TURBO_FIRMWARE, &d, &ctx(Some(1))));
    assert!(w.contains("not a regular file (FIFO)"), "{w}");
}

#[test]
fn amd_has_no_such_registers_even_where_a_file_answers() {
    // A value in the file must not be taken for AMD's: the registers are Intel's.
    let d = tree(
        "AuthenticAMD",
        INTEL_FLAGS,
        &[
            (SMI_COUNT, 5),
            (PKG_CST_CONFIG_CONTROL, 0),
            (MISC_ENABLE, 1 << 38),
        ],
    );
    for (c, name) in [
        (&SMI_RATE, "MSR_SMI_COUNT"),
        (&CSTATE_LIMIT, "MSR_PKG_CST_CONFIG_CONTROL"),
        (&TURBO_FIRMWARE, "IA32_MISC_ENABLE"),
    ] {
        let w = why(eval(c, &d, &ctx(Some(1))));
        assert!(
            w.starts_with(&format!("AMD processors have no {name}")),
            "{w}"
        );
    }
}

#[test]
fn smi_rate_zero_seconds_and_tree_are_unknown_without_waiting() {
    let d = tree("GenuineIntel", INTEL_FLAGS, &[(SMI_COUNT, 37)]);
    assert_eq!(
        why(eval(&SMI_RATE, &d, &ctx(Some(0)))),
        "not measured (--smi-seconds 0)"
    );
    assert!(why(eval(&SMI_RATE, &d, &ctx(None))).starts_with("not measured here"));
    let t = Instant::now();
    let w = why(eval(&SMI_RATE, &d, &ctx(Some(5))));
    assert!(t.elapsed().as_secs() < 2, "waited on a tree");
    assert!(
        w.starts_with("a captured tree: MSR_SMI_COUNT 37 since reset"),
        "{w}"
    );
}

#[test]
fn a_virtual_machines_registers_are_not_the_firmwares() {
    let d = tree(
        "GenuineIntel",
        "fpu tsc msr constant_tsc x2apic hypervisor",
        &[(SMI_COUNT, 0), (PKG_CST_CONFIG_CONTROL, 0x8407)],
    );
    assert!(why(eval(&SMI_RATE, &d, &ctx(Some(1)))).starts_with("a virtual machine"));
    assert!(why(eval(&CSTATE_LIMIT, &d, &ctx(Some(1)))).starts_with("a virtual machine"));
    let t = eval(&TSC_INVARIANT, &d, &ctx(None)).unwrap();
    assert_eq!(t.status, Status::Info, "{t:?}");
}

#[test]
fn x2apic_mode_from_the_register() {
    let d = tree("GenuineIntel", INTEL_FLAGS, &[(APIC_BASE, 0xfee0_0d00)]);
    assert_eq!(eval(&X2APIC, &d, &ctx(None)).unwrap().status, Status::Pass);
    let d = tree("GenuineIntel", INTEL_FLAGS, &[(APIC_BASE, 0xfee0_0900)]);
    let a = eval(&X2APIC, &d, &ctx(None)).unwrap();
    assert_eq!(a.status, Status::Warn);
    assert_eq!(a.detail, "xAPIC mode, though the CPU offers x2APIC");
    // AMD has the same register: read, not refused.
    let d = tree("AuthenticAMD", INTEL_FLAGS, &[(APIC_BASE, 0xfee0_0d00)]);
    assert_eq!(eval(&X2APIC, &d, &ctx(None)).unwrap().status, Status::Pass);
}

#[test]
fn tsc_verdicts() {
    assert_eq!(tsc_verdict(true, true, false, "tsc").status, Status::Pass);
    let w = tsc_verdict(true, false, false, "tsc");
    assert_eq!(w.status, Status::Warn);
    assert!(w.detail.starts_with("no nonstop_tsc:"), "{}", w.detail);
    let h = tsc_verdict(true, true, false, "hpet");
    assert_eq!(h.status, Status::Warn);
    assert!(h.detail.contains("keeps time with hpet"));
    assert_eq!(
        tsc_verdict(false, false, true, "kvm-clock").status,
        Status::Info
    );
}

#[test]
fn idle_driver_names_the_source() {
    let d = tree("GenuineIntel", INTEL_FLAGS, &[]);
    let w = |t: &str| {
        let p = d.path().join("sys/devices/system/cpu/cpuidle");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("current_driver"), t).unwrap();
    };
    w("intel_idle\n");
    assert_eq!(
        eval(&IDLE_DRIVER, &d, &ctx(None)).unwrap().status,
        Status::Pass
    );
    w("acpi_idle\n");
    let a = eval(&IDLE_DRIVER, &d, &ctx(None)).unwrap();
    assert_eq!(a.status, Status::Info);
    assert!(a.detail.contains("firmware's ACPI _CST"), "{}", a.detail);
    std::fs::write(d.path().join("proc/cmdline"), "intel_idle.max_cstate=0\n").unwrap();
    let a = eval(&IDLE_DRIVER, &d, &ctx(None)).unwrap();
    assert!(
        a.detail.starts_with("acpi_idle (intel_idle.max_cstate=0)"),
        "{}",
        a.detail
    );
    w("bad value\n");
    assert!(eval(&IDLE_DRIVER, &d, &ctx(None)).is_err());
}

#[test]
fn arm64_has_nothing_to_read_and_says_so() {
    let pi = Host::with_root(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rpi4-arm64"),
    );
    let c = ctx(Some(1));
    for k in [&SMI_RATE, &CSTATE_LIMIT, &TURBO_FIRMWARE] {
        let w = why((k.evaluate)(&pi, &c));
        assert!(
            w.starts_with("aarch64 has no SMIs or MSRs"),
            "{}: {w}",
            k.id
        );
    }
    for k in [&X2APIC, &TSC_INVARIANT] {
        assert_eq!(
            (k.evaluate)(&pi, &c).unwrap().status,
            Status::Info,
            "{}",
            k.id
        );
    }
}

#[test]
fn on_this_machine_an_unreadable_counter_gives_unknown_at_once() {
    // The live machine: wherever MSR_SMI_COUNT cannot be read (this CI runner is an AMD EPYC guest: AMD, a
    // hypervisor, no msr driver loaded, and EIO for 0x34/0xE2 where it is), smi_rate is unknown without the
    // wait; where it can (root on Intel hardware), the count is taken, and nothing here asserts its value.
    let host = Host::live();
    let readable = msr::not_intel(&host, "x").is_none()
        && !msr::virtual_machine(&host)
        && msr::smi_count(&host, 0).is_ok();
    if readable {
        return;
    }
    let t = Instant::now();
    let e = smi_rate(
        &host,
        &Ctx {
            core: 0,
            nic: None,
            pid: None,
            smi_seconds: Some(30),
        },
    );
    assert!(t.elapsed().as_secs() < 5, "waited: {e:?}");
    assert!(e.is_err(), "{e:?}");
}
