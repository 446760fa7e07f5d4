"""A sysctl and IRQ affinities set by fix are back after a reboot (sysctl.d, the package's unit) and gone after
rollback + reboot. Only the runtime steps run, so the kernel command line cannot be what moved the IRQs."""
import os
import sys

from judgelib import Judge, cpulist

j = Judge(sys.argv[1])
CORE = 1


def affinities(boot):
    d = j.path(boot, "irq")
    if not os.path.isdir(d):
        return {}
    return {int(n): cpulist(open(os.path.join(d, n)).read()) for n in os.listdir(d)
            if open(os.path.join(d, n)).read().strip()}


def mask(boot):
    m = j.fact(boot, "default_smp_affinity")
    return None if m is None else int(m.replace(",", ""), 16)


def unit(boot):
    t = j.text(boot, "unit") or ""
    return dict(line.split("=", 1) for line in t.splitlines() if "=" in line)


j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
rt0 = j.fact(1, "sched_rt_runtime_us")
j.expect(rt0 not in (None, "-1"), f"the untuned guest has sched_rt_runtime_us={rt0}")
aff0, mask0 = affinities(1), mask(1)
j.expect(mask0 is not None and mask0 & (1 << CORE), f"default_smp_affinity before fix: {mask0}")
if j.command(1, "fix") is not None:
    # What fix did now, in this boot.
    j.expect(j.fact("1/after-fix", "sched_rt_runtime_us") == "-1", "fix did not set sched_rt_runtime_us=-1")
    aff1 = affinities("1/after-fix")
    moved = sorted(i for i, c in aff0.items() if CORE in c and i in aff1 and CORE not in aff1[i])
    j.expect(moved, f"fix moved no IRQ off CPU {CORE}: before {aff0}, after {aff1}")
    m1 = mask("1/after-fix")
    j.expect(m1 is not None and not m1 & (1 << CORE), f"default_smp_affinity after fix: {m1}")

    # Boot 2: the same values came back at boot.
    if j.expect(j.fact(2, "cmdline") is not None, "boot 2 recorded nothing (the guest did not come back)"):
        j.expect(j.fact(2, "cmdline") == j.fact(1, "cmdline"), "the runtime-only fix changed the kernel cmdline")
        j.expect(j.fact(2, "sched_rt_runtime_us") == "-1", "sched_rt_runtime_us=-1 did not survive the reboot")
        aff2 = affinities(2)
        lost = [i for i in moved if i in aff2 and CORE in aff2[i]]
        j.expect(not lost, f"IRQs {lost} are back on CPU {CORE} after the reboot (the unit did not re-apply)")
        m2 = mask(2)
        j.expect(m2 is not None and not m2 & (1 << CORE), f"default_smp_affinity after reboot: {m2}")
        u = unit(2)
        j.expect(u.get("ActiveState") == "active" and u.get("Result") == "success"
                 and u.get("ExecMainStatus") == "0", f"rmp-eval.service after reboot: {u}")
        if j.command(2, "rollback") is not None:
            j.expect(j.fact("2/after-rollback", "sched_rt_runtime_us") == rt0,
                     "rollback did not restore sched_rt_runtime_us at once")

    # Boot 3: everything as before fix, and the unit had nothing to do.
    if j.expect(j.fact(3, "cmdline") is not None, "boot 3 recorded nothing (the guest did not come back)"):
        j.expect(j.fact(3, "sched_rt_runtime_us") == rt0,
                 f"sched_rt_runtime_us={j.fact(3, 'sched_rt_runtime_us')} after rollback + reboot, was {rt0}")
        aff3 = affinities(3)
        stuck = [i for i in moved if i in aff3 and aff3[i] != aff0[i]]
        j.expect(not stuck, f"IRQs {stuck} keep fix's affinity after rollback + reboot")
        j.expect(mask(3) == mask0, f"default_smp_affinity {mask(3)} after rollback + reboot, was {mask0}")
        j.expect(j.text(3, "sysctl-files") == j.text(1, "sysctl-files"),
                 "/etc/sysctl.d differs from before fix after rollback")
        j.expect(unit(3).get("ConditionResult") == "no",
                 f"rmp-eval.service still has state to apply after rollback: {unit(3)}")
j.finish()
