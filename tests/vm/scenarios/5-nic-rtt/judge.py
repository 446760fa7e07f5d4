"""run --nic in the guest against reflect on the host's tap: replies matched, WKC 1, nothing lost; then the same
run with --trace: the receive path names the virtio NIC's interrupt, which the guest's /proc/interrupts shows firing
on that CPU during the run."""
import sys

from judgelib import Judge, judge_nic_run, judge_nic_irq_path

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
nic = (j.text(1, "nic") or "").strip()
j.expect(nic != "", "the guest has no NIC")
judge_nic_run(j, 1, "run", also=("traced",))
judge_nic_irq_path(j, 1, "traced", nic)
j.finish()
