"""run --nic in the guest against reflect on the host's tap: replies matched, WKC 1, nothing lost."""
import sys

from judgelib import Judge, judge_nic_run

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.expect((j.text(1, "nic") or "").strip() != "", "the guest has no NIC")
judge_nic_run(j, 1, "run")
j.finish()
