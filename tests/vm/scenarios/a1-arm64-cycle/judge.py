"""arm64: check on the RT kernel gives the arm64 verdicts (arch_sys_counter passes; no cpufreq, boost or x86 idle
knobs are unknown or info, never failures; the arch timer is per-CPU, not an offender), a cyclic and a NIC run
complete, and fix → reboot → rollback → reboot leaves the command line and GRUB's files byte-identical."""
import sys

from judgelib import Judge, judge_cmdline_cycle, judge_cyclic, judge_nic_run

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
cpuinfo = j.text(1, "cpuinfo") or ""
j.expect("CPU implementer\t: 0x41" in cpuinfo and "CPU part\t: 0xd08" in cpuinfo,
         "the guest's CPUs are not Arm Cortex-A72 (0x41/0xd08)")
j.expect(j.fact(1, "clocksource") == "arch_sys_counter",
         f"clocksource is {j.fact(1, 'clocksource')!r}, expected the Arm generic timer arch_sys_counter")
doc = j.json_of(1, "check", ok_codes=(0, 1, 4, 5))
if doc is not None:
    by_id = {c["id"]: c for c in doc.get("checks", [])}
    status = lambda cid: by_id.get(cid, {}).get("status")  # noqa: E731
    j.expect(status("preempt_rt") == "pass", f"preempt_rt is {status('preempt_rt')!r} on linux-image-rt-arm64")
    j.expect(status("clocksource") == "pass", f"clocksource: {by_id.get('clocksource')}")
    # No cpufreq, no boost, no intel_pstate/intel_idle under qemu's virt machine: unknown or info, not fail.
    for cid in ("governor", "turbo", "cpu_frequency", "tsc_reliable", "pi_clock"):
        j.expect(status(cid) in ("unknown", "info", "pass"), f"{cid} is {status(cid)!r} on arm64: {by_id.get(cid)}")
    ui = by_id.get("unrelated_irqs", {})
    j.expect("arch_timer" not in ui.get("detail", "").split("per-CPU")[0],
             f"unrelated_irqs counts the per-CPU arch timer as an offender: {ui}")
    interrupts = j.fact(1, "interrupts") or ""
    j.expect("arch_timer" in interrupts, "no arch_timer row in /proc/interrupts")
judge_cyclic(j, 1, "run")
judge_nic_run(j, 1, "run-nic")
judge_cmdline_cycle(j, (1, 2, 3), core=1)
j.finish()
