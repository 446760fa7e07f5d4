"""run --core 1 --duration 5 --json: a complete result with the stable keys, counts that fit 5 s at 1 ms."""
import sys

from judgelib import Judge, judge_cyclic

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
judge_cyclic(j, 1, "run")
j.finish()
