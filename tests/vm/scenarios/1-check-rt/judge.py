"""check on the real RT kernel: preempt_rt passes and the verdicts agree with the guest's /sys and /proc."""
import sys

from judgelib import Judge, check_findings, cpulist

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
online = cpulist(j.fact(1, "online"))
j.expect(online == {0, 1}, f"guest has CPUs {sorted(online)}, expected 0-1")
got = check_findings(j, 1, "check", core=max(online or {1}))
if got:
    j.expect(got.get("preempt_rt") == "pass", f"preempt_rt is {got.get('preempt_rt')!r} on a PREEMPT_RT kernel")
    # The untuned guest must show failures: a check that passes everything proves nothing.
    j.expect(got.get("core_isolated") == "fail", "core_isolated passes on a guest booted without isolcpus")
j.finish()
