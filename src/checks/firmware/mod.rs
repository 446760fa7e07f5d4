//! The firmware family: what Linux can read of the BIOS's settings — SMIs at idle, the package C-state limit,
//! turbo disabled in firmware, the idle driver's source of C-states, x2APIC and the TSC. No step of `fix` can
//! change a BIOS setting, so each check names the setting to change by hand. The register bits are the Intel
//! SDM's (vol. 4 for the MSRs, vol. 3A/3B for the APIC and turbo); the menu names are those of vendors' manuals
//! (Supermicro's X11 UEFI BIOS manuals: "Package C State" with "C0/C1 State", "Enhanced Halt State (C1E)",
//! "Hardware P-States"; HPE's Gen10 RBSU: "Processor x2APIC Support") and Intel's TCC Tools tutorial ("Intel TCC
//! Mode", which turns power management off and reduces SMIs in one setting) — they vary by vendor, and the
//! advice says so. What cannot be read (AMD, arm64, no msr driver, not root, a virtual machine) is unknown with
//! the reason, never a pass.
//!
//! Facts other checks already judge are not judged twice: the depth of the C-states the core may enter is
//! `cstates`/`idle_states`, turbo as Linux sets it is `turbo`, SMT is `smt_sibling` (the firmware's "Hyper-
//! Threading" switch is one way of making it pass, isolating the sibling is the other), the clocksource's kind
//! is `clocksource`.

use std::time::Duration;

use super::{Assessment, Check, CheckId, Ctx, Eval, Section, Unknown, is_word, read, unknown};
use crate::host::Host;
use crate::machine::{self, msr};
use crate::parse::cmdline;

/// SMIs per second at idle from which `smi_rate` fails rather than warns: a periodic firmware source.
pub(crate) const SMI_FAIL_PER_S: f64 = 10.0;

pub(crate) const SMI_RATE: Check = Check {
    id: CheckId::SmiRate,
    section: Section::Firmware,
    title: "No SMIs at idle",
    doc: "A System Management Interrupt stops every core for the firmware's handler, typically for tens to hundreds \
          of microseconds, and the kernel cannot see it: only MSR_SMI_COUNT (0x34, Intel SDM vol. 4) counts it. \
          `check` reads the counter of every online CPU, waits `--smi-seconds` (default 1; 0 skips it) and reads \
          again: run it with the machine idle (no controller running), so that the count is the firmware's own. Passes at 0 SMIs in the window; any SMI is a warning with the rate (one window at idle cannot tell \
          a sporadic event — thermal, ACPI — from a periodic source); 10 or more per second fails (a periodic source \
          such as USB legacy emulation or BMC polling: at 1 kHz every 100th cycle or more meets one). Unknown on \
          AMD and arm64 (no such counter), in a virtual machine (the host's SMIs are not counted in a guest), \
          without root or the msr driver (`check` loads no module: `modprobe msr` does), and on a captured tree \
          (a rate needs two readings apart in time); it waits only where the counter could be read. Menu names: \
          Intel's TCC Tools tutorial (\"Intel TCC Mode\" reduces SMIs) and vendors' manuals; they vary by vendor.",
    remedy: None,
    by_hand: Some(
        "in the BIOS setup turn off what raises SMIs: \"USB Legacy Support\", \"Serial Port Console Redirection\", \
         BMC/IPMI sensor polling, power management kept by the firmware (leave P-states to the OS: \"Hardware P-States\" \
         or \"Speed Shift\" native/OS control); on boards with Intel TCC, \"Intel TCC Mode\": Enabled reduces SMIs; \
         update the BIOS. `rmp-eval run` counts SMIs during its measurement and names the late cycles they caused \
         (menu names vary by vendor)",
    ),
    evaluate: smi_rate,
};

fn smi_rate(host: &Host, ctx: &Ctx) -> Eval {
    let secs = match ctx.smi_seconds {
        None => {
            return Err(unknown(
                "not measured here: `rmp-eval check` counts SMIs at idle (--smi-seconds)",
            ));
        }
        Some(0) => return Err(unknown("not measured (--smi-seconds 0)")),
        Some(s) => s,
    };
    intel_register(host, "MSR_SMI_COUNT")?;
    if msr::virtual_machine(host) {
        return Err(unknown(
            "a virtual machine: the host's SMIs are not counted in a guest; check the host",
        ));
    }
    // The RT core first: its reading must succeed before anything waits.
    let first = msr::smi_count(host, ctx.core).map_err(unknown)?;
    if !host.is_live() {
        return match msr::smi_count(host, ctx.core) {
            Ok(again) if again != first => Ok(Assessment::warn(format!(
                "{} SMIs between two readings of the tree",
                msr::smi_delta(first, again)
            ))),
            _ => Err(unknown(format!(
                "a captured tree: MSR_SMI_COUNT {first} since reset; a rate needs two readings apart on the machine"
            ))),
        };
    }
    let mut before = vec![(ctx.core, first)];
    for cpu in machine::online_cpus(host).unwrap_or_default() {
        if cpu != ctx.core
            && let Ok(n) = msr::smi_count(host, cpu)
        {
            before.push((cpu, n));
        }
    }
    std::thread::sleep(Duration::from_secs(secs));
    // SMIs are broadcast to every logical CPU on most platforms; the largest count is the one that stalled one.
    let most = before
        .iter()
        .filter_map(|&(cpu, b)| msr::smi_count(host, cpu).ok().map(|a| msr::smi_delta(b, a)))
        .max()
        .ok_or_else(|| unknown("the SMI counters could not be read a second time"))?;
    Ok(smi_verdict(most, secs, before.len()))
}

/// The verdict on `smis` counted in `secs` seconds over `cpus` CPUs.
pub(crate) fn smi_verdict(smis: u64, secs: u64, cpus: usize) -> Assessment {
    let per_s = smis as f64 / secs.max(1) as f64;
    // What the machine did in the window: idle when check is run on a quiet machine, as the doc asks.
    let d = format!("{smis} SMIs in {secs} s ({per_s:.1}/s; {cpus} CPUs read)");
    match smis {
        0 => Assessment::pass(d),
        _ if per_s >= SMI_FAIL_PER_S => Assessment::fail(d),
        _ => Assessment::warn(d),
    }
}

/// Why an Intel-only register cannot be read here: not x86, or an AMD processor.
fn intel_register(host: &Host, name: &str) -> Result<(), Unknown> {
    if let Some(why) = msr::not_intel(host, name) {
        return Err(unknown(why));
    }
    Ok(())
}

/// Why an Intel-only register cannot tell the firmware's setting here: as `intel_register`, or a virtual machine
/// (whose registers are the hypervisor's emulation).
fn firmware_register(host: &Host, name: &str) -> Result<(), Unknown> {
    intel_register(host, name)?;
    if msr::virtual_machine(host) {
        return Err(unknown(format!(
            "a virtual machine: {name} is the hypervisor's, not the firmware's"
        )));
    }
    Ok(())
}

pub(crate) const CSTATE_LIMIT: Check = Check {
    id: CheckId::CstateLimit,
    section: Section::Firmware,
    title: "Package C-states limited by BIOS",
    doc: "The firmware's limit on package C-states, MSR_PKG_CST_CONFIG_CONTROL (0xE2, Intel SDM vol. 4): bits 3:0 \
          the deepest package C-state allowed (bits 2:0 before Haswell), bit 15 CFG Lock (the limit cannot be \
          changed until reset). A package C-state is entered when every core idles, and leaving it costs tens of \
          microseconds more than a core C-state; the kernel's caps (`cstates`) keep the cores out of deep states, \
          the firmware's limit holds whatever the OS does. Passes at limit code 0 (C0/C1 in the SDM's Core and \
          Xeon tables); any other code is a warning with the code (what it means is model-specific: the SDM's \
          table for the model). On Atom cores, whose tables number the codes differently, the code is reported \
          unjudged (unknown). Unknown where the register cannot be read (AMD, arm64, a virtual machine, no msr driver, \
          not root). Menu names: Supermicro's X11 UEFI BIOS manuals (\"Package C State\": C0/C1 State … No Limit), \
          Intel's TCC Tools tutorial (\"Intel TCC Mode\").",
    remedy: None,
    by_hand: Some(
        "in the BIOS setup set \"Package C-State Limit\" (Supermicro: \"Package C State\") to C0/C1, or disable \"CPU \
         C-States\" altogether (Intel TCC boards: \"Intel TCC Mode\": Enabled); with \"CFG Lock\" enabled only the \
         firmware can change it (menu names vary by vendor)",
    ),
    evaluate: cstate_limit,
};

fn cstate_limit(host: &Host, ctx: &Ctx) -> Eval {
    firmware_register(host, "MSR_PKG_CST_CONFIG_CONTROL")?;
    let v = msr::read(host, ctx.core, msr::PKG_CST_CONFIG_CONTROL).map_err(unknown)?;
    let c = msr::PkgCstConfig::from_raw(v);
    if let Some((f, m)) = machine::cpu_family_model(host)
        && msr::atom(f, m)
    {
        return Err(unknown(format!(
            "limit code {} on an Atom core (model {m:#x}), whose codes the SDM numbers per model: not judged",
            c.limit
        )));
    }
    Ok(cstate_verdict(c))
}

pub(crate) fn cstate_verdict(c: msr::PkgCstConfig) -> Assessment {
    let lock = if c.locked {
        "CFG Lock on (only the BIOS changes it)"
    } else {
        "CFG Lock off"
    };
    if c.limit == 0 {
        Assessment::pass(format!("package C-state limit C0/C1 (code 0); {lock}"))
    } else {
        Assessment::warn(format!(
            "limit code {}: package C-states deeper than C0/C1 allowed (per model: SDM vol. 4); {lock}",
            c.limit
        ))
    }
}

pub(crate) const TURBO_FIRMWARE: Check = Check {
    id: CheckId::TurboFirmware,
    section: Section::Firmware,
    title: "Turbo disabled by firmware",
    doc: "IA32_MISC_ENABLE (0x1A0) bit 38, Turbo Mode Disable (Intel SDM vol. 4; vol. 3B, \"Discover Hardware \
          Support and Enabling of Opportunistic Processor Operation\": its power-on value 1 says the processor has \
          turbo, and the BIOS clears it to enable turbo or leaves it set to disable it). Set, turbo is off below \
          Linux, and intel_pstate's no_turbo reads 1 and cannot be written 0. Passes when the bit is set; \
          informational when it is clear (turbo, where the processor has it, is then Linux's to turn off: the \
          `turbo` check judges it and `fix --only turbo` sets it). Unknown where the register cannot be read (AMD, \
          arm64, a virtual machine, no msr driver, not root).",
    remedy: None,
    by_hand: Some(
        "nothing is needed while the `turbo` check passes; to turn turbo off below Linux, the BIOS setting \
         \"Intel Turbo Boost Technology\" (or \"Turbo Mode\"): Disabled",
    ),
    evaluate: turbo_firmware,
};

fn turbo_firmware(host: &Host, ctx: &Ctx) -> Eval {
    firmware_register(host, "IA32_MISC_ENABLE turbo bit")?;
    let v = msr::read(host, ctx.core, msr::MISC_ENABLE).map_err(unknown)?;
    Ok(if msr::turbo_disabled(v) {
        Assessment::pass("turbo off in firmware (IA32_MISC_ENABLE bit 38); no_turbo stays 1")
    } else {
        Assessment::info("firmware leaves turbo to Linux (bit 38 clear): the turbo check judges it")
    })
}

pub(crate) const IDLE_DRIVER: Check = Check {
    id: CheckId::IdleDriver,
    section: Section::Firmware,
    title: "Idle driver's C-state source",
    doc: "Whose C-states the kernel uses: intel_idle has a table per processor model, acpi_idle takes the \
          firmware's ACPI _CST table, whose entries the BIOS's C-state settings decide (intel_idle.max_cstate=0, \
          which `fix` sets, hands the CPU to acpi_idle). Passes for intel_idle, haltpoll or no driver; \
          informational for acpi_idle and others. How deep the states go is judged by `cstates` and \
          `idle_states`, from the same driver.",
    remedy: None,
    by_hand: Some(
        "under acpi_idle the C-states are the firmware's: in the BIOS setup \"CPU C-States\" (AMD: \"Global \
         C-state Control\") and \"Enhanced Halt State (C1E)\" decide which the _CST table offers (menu names vary \
         by vendor)",
    ),
    evaluate: idle_driver,
};

fn idle_driver(host: &Host, _: &Ctx) -> Eval {
    let d = read(host, machine::CPUIDLE_DRIVER)?;
    if !is_word(&d) {
        return Err(unknown(format!(
            "{}: unexpected value '{d}'",
            machine::CPUIDLE_DRIVER
        )));
    }
    Ok(match d.as_str() {
        "intel_idle" => Assessment::pass("intel_idle: the kernel's C-state table for this model"),
        "none" => Assessment::pass("no cpuidle driver: idle only halts"),
        "haltpoll" => Assessment::pass("haltpoll (a guest): poll, then halt"),
        "acpi_idle" => {
            let capped = machine::cmdline(host)
                .is_ok_and(|p| cmdline::get(&p, "intel_idle.max_cstate") == Some("0"));
            let why = if capped {
                " (intel_idle.max_cstate=0)"
            } else {
                ""
            };
            Assessment::info(format!(
                "acpi_idle{why}: C-states from the firmware's ACPI _CST; BIOS C-States/C1E decide them"
            ))
        }
        other => Assessment::info(format!("cpuidle driver {other}")),
    })
}

pub(crate) const X2APIC: Check = Check {
    id: CheckId::X2apic,
    section: Section::Firmware,
    title: "x2APIC mode",
    doc: "In x2APIC mode the local APIC is programmed through MSRs instead of memory-mapped registers: interrupt \
          acknowledgement and inter-processor interrupts cost less, and interrupt remapping needs it. The mode is \
          IA32_APIC_BASE (0x1B) bit 10, EXTD (Intel SDM vol. 3A, the APIC chapter's x2APIC states; the same \
          register on AMD). Passes in x2APIC mode; \
          a warning in xAPIC mode when the CPU offers x2APIC; informational without support (the cpuinfo flag \
          `x2apic` is missing: the CPU lacks it or the kernel was told nox2apic) and off x86. Where the register \
          cannot be read the flag tells support only, not the mode: unknown, saying so.",
    remedy: None,
    by_hand: Some(
        "in the BIOS setup enable x2APIC (HPE: \"Processor x2APIC Support\"; elsewhere \"X2APIC\" or \"x2APIC Mode\", \
         often under \"Intel VT for Directed I/O (VT-d)\" with \"Interrupt Remapping\", which Linux needs to keep \
         x2APIC on); menu names vary by vendor",
    ),
    evaluate: x2apic,
};

fn x2apic(host: &Host, ctx: &Ctx) -> Eval {
    if let Some(why) = msr::not_x86(host) {
        return Ok(Assessment::info(format!("no x2APIC: {why}")));
    }
    let flags = machine::cpu_flags(host).map_err(unknown)?;
    let supported = flags.iter().any(|f| f == "x2apic");
    let vm = flags.iter().any(|f| f == "hypervisor");
    let raw = msr::read(host, ctx.core, msr::APIC_BASE);
    Ok(match raw.map(|v| (v, msr::apic_mode(v))) {
        Ok((_, msr::ApicMode::X2Apic)) => Assessment::pass("x2APIC mode (IA32_APIC_BASE bit 10)"),
        Ok((_, msr::ApicMode::XApic)) if vm => {
            Assessment::info("xAPIC mode in a virtual machine: the hypervisor's CPU model decides")
        }
        Ok((_, msr::ApicMode::XApic)) if supported => {
            Assessment::warn("xAPIC mode, though the CPU offers x2APIC")
        }
        Ok((_, msr::ApicMode::XApic)) => Assessment::info("xAPIC mode; cpuinfo has no x2apic flag"),
        Ok((v, _)) => {
            return Err(unknown(format!(
                "IA32_APIC_BASE {v:#x}: APIC disabled or in an invalid state"
            )));
        }
        Err(why) if supported => {
            return Err(unknown(format!(
                "the CPU offers x2APIC (cpuinfo), the mode is unread: {why}"
            )));
        }
        Err(_) => Assessment::info("no x2apic flag in cpuinfo: not offered, or nox2apic"),
    })
}

pub(crate) const TSC_INVARIANT: Check = Check {
    id: CheckId::TscInvariant,
    section: Section::Firmware,
    title: "Invariant TSC in use",
    doc: "The TSC is the cheapest, finest clock on x86 when it ticks at one rate in every P- and C-state \
          (cpuinfo flags constant_tsc and nonstop_tsc: the invariant TSC) and is in step across CPUs, which \
          firmware must set up. Passes with both flags and the kernel keeping time with it (clocksource tsc); \
          a warning without them, or when the kernel chose another clocksource (it found the TSC unsynchronised \
          or unstable: see `dmesg | grep -i tsc`); informational in a virtual machine (the host decides) and \
          off x86. `clocksource` judges the clocksource's kind, `tsc_reliable` its watchdog.",
    remedy: None,
    by_hand: Some(
        "update the BIOS (TSC synchronisation across cores and sockets is the firmware's job, and vendors fix it \
         in updates); where a setup has them, leave \"TSC Sync\"/\"Invariant TSC\" enabled; a processor without \
         an invariant TSC needs other hardware",
    ),
    evaluate: tsc_invariant,
};

fn tsc_invariant(host: &Host, _: &Ctx) -> Eval {
    if let Some(why) = msr::not_x86(host) {
        return Ok(Assessment::info(format!("no TSC: {why}")));
    }
    let flags = machine::cpu_flags(host).map_err(unknown)?;
    let cs = read(host, machine::CURRENT_CLOCKSOURCE)?;
    if !is_word(&cs) {
        return Err(unknown("current_clocksource: unexpected value"));
    }
    let has = |f: &str| flags.iter().any(|x| x == f);
    Ok(tsc_verdict(
        has("constant_tsc"),
        has("nonstop_tsc"),
        has("hypervisor"),
        &cs,
    ))
}

pub(crate) fn tsc_verdict(constant: bool, nonstop: bool, vm: bool, cs: &str) -> Assessment {
    let missing: Vec<&str> = [(constant, "constant_tsc"), (nonstop, "nonstop_tsc")]
        .into_iter()
        .filter(|(has, _)| !has)
        .map(|(_, f)| f)
        .collect();
    match (missing.is_empty(), cs == "tsc") {
        (true, true) => {
            Assessment::pass("invariant TSC (constant_tsc, nonstop_tsc), clocksource tsc")
        }
        _ if vm => Assessment::info(format!(
            "a virtual machine (clocksource {cs}{}): the host decides",
            if missing.is_empty() {
                String::new()
            } else {
                format!(", no {}", missing.join(", "))
            }
        )),
        (true, false) => Assessment::warn(format!(
            "invariant TSC, but the kernel keeps time with {cs}: it found the TSC unusable"
        )),
        (false, _) => Assessment::warn(format!(
            "no {}: the TSC may stop or change rate when idle (clocksource {cs})",
            missing.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests;
