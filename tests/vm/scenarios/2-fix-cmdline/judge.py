"""fix --core 1 → reboot → isolcpus/nohz_full/rcu_nocbs live and checked → rollback → reboot → byte-identical."""
import sys

from judgelib import Judge, judge_cmdline_cycle

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
judge_cmdline_cycle(j, (1, 2, 3), core=1)
j.finish()
