"""run --nic in the guest against reflect on the host's tap: replies matched, WKC 1, nothing lost."""
import re
import sys

from judgelib import Judge

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.expect((j.text(1, "nic") or "").strip() != "", "the guest has no NIC")
# 0, 1 (latency outside Great or late replies are expected under TCG) or 3 (a clean 5 s run is too short to
# trust); 2 would mean no reply from the SubDevice.
doc = j.json_of(1, "run", ok_codes=(0, 1, 3))
if doc is not None:
    j.expect(doc.get("mode") == "ecat", f"mode {doc.get('mode')!r}, expected ecat (the default)")
    rtt = doc.get("rtt")
    if j.expect(isinstance(rtt, dict), f"rtt is {rtt!r} in NIC mode"):
        count = rtt.get("count") or 0
        # 5 s at 1 kHz; TCG may miss periods, but a run with a handful of replies did not work.
        j.expect(count >= 500, f"only {count} round trips matched in 5 s")
        # Independent evidence that the replies crossed the tap: the host's reflector counted what it answered
        # (a reply still in flight when the run ended may be answered but not counted by run).
        m = re.search(r"answered \d+ frames on \S+: (\d+) EtherCAT", j.text_at("host-reflect.log") or "")
        answered = int(m.group(1)) if m else None
        j.expect(answered is not None and count <= answered <= count + 5,
                 f"the host's reflect answered {answered} EtherCAT frames, the guest matched {count}")
        j.expect(rtt.get("lost") == 0, f"lost {rtt.get('lost')} frames")
        j.expect(rtt.get("wkc") == 1, f"working counter {rtt.get('wkc')!r}, expected 1 (one SubDevice)")
        j.expect(rtt.get("timestamps") in ("hardware", "software"), f"timestamps {rtt.get('timestamps')!r}")
        p = [rtt.get(k) for k in ("min_us", "p50_us", "p99_us", "max_us")]
        j.expect(all(isinstance(v, (int, float)) and v > 0 for v in p) and p == sorted(p),
                 f"round-trip times out of order or not positive: {p}")
j.finish()
