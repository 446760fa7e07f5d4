"""The arrival benchmark in the guest: every run measured its arrivals (the figures are bench/arrival_vs_wakeup.py's,
from the kept records)."""
import sys

from judgelib import Judge

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
for cfg in ("af_packet", "af_packet-txq0", "af_xdp", "af_xdp-txq0"):
    for rnd in (1, 2, 3):
        r = j.json_of(1, f"bench-{cfg}-{rnd}.json", ok_codes=(0, 1, 3))
        if r is not None:
            a = (r.get("rtt") or {}).get("arrival") or {}
            j.expect(a.get("measured") is True, f"{cfg} round {rnd}: arrival not measured: {a}")
j.finish()
