"""run --core 1 --duration 5 --json: a complete result with the stable keys, counts that fit 5 s at 1 ms."""
import sys

from judgelib import Judge

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
# 0 = all within Great, 1 = some samples outside it, 3 = all Great but too short to trust (5 s): all complete runs
# (TCG latencies are meaningless).
VERDICT_RC = {"pass": 0, "fail": 1, "inconclusive": 3}
doc = j.json_of(1, "run", ok_codes=tuple(VERDICT_RC.values()))
if doc is not None:
    for key in ("period_us", "duration_s", "mode", "series", "rtt", "verdict"):
        j.expect(key in doc, f"run JSON lacks '{key}'")
    j.expect(doc.get("period_us") == 1000, f"period_us={doc.get('period_us')}, expected the default 1000")
    j.expect(doc.get("rtt") is None, "rtt must be null without --nic")
    j.expect(5.0 <= (doc.get("duration_s") or 0) < 6.0, f"duration_s {doc.get('duration_s')} for --duration 5")
    j.expect(doc.get("mode") == "cyclic", f"mode {doc.get('mode')!r} without --nic")
    j.expect(doc.get("verdict") in ("fail", "inconclusive"),
             f"verdict {doc.get('verdict')!r}: a 5 s run may fail or be inconclusive, never pass")
    series = doc.get("series") or []
    j.expect(len(series) >= 1, "no series in the result")
    for s in series:
        for key in ("label", "count", "min_us", "max_us", "max_index", "p50_us", "p99_us", "p999_us", "buckets"):
            j.expect(key in s, f"series {s.get('label')} lacks '{key}'")
        count = s.get("count") or 0
        # Under TCG most periods may be missed (the loop wakes late and skips them), but recorded + missed
        # periods must cover the run: a run that stopped early or ran on would not add up.
        periods = count + (s.get("missed") or 0)
        expected = (doc.get("duration_s") or 0) * 1e6 / (doc.get("period_us") or 1000)
        j.expect(count > 0 and 0.9 * expected <= periods <= 1.1 * expected,
                 f"series {s.get('label')}: {count} recorded + {s.get('missed')} missed periods in "
                 f"{doc.get('duration_s')} s at {doc.get('period_us')} us")
        b = s.get("buckets") or {}
        j.expect(set(b) >= {"great", "good", "poor", "bad", "pathetic"}, f"buckets keys {sorted(b)}")
        j.expect(sum(v for v in b.values() if isinstance(v, int)) == count,
                 f"series {s.get('label')}: buckets add up to {sum(b.values())}, count is {count}")
        p = [s.get(k) for k in ("p50_us", "p99_us", "p999_us", "max_us")]
        j.expect(all(isinstance(v, (int, float)) for v in p) and p == sorted(p),
                 f"series {s.get('label')}: p50 <= p99 <= p999 <= max does not hold: {p}")
        all_great = b.get("great") == count
        j.expect((doc.get("verdict") != "fail") == all_great,
                 f"verdict {doc.get('verdict')!r} with {count - (b.get('great') or 0)} samples outside Great")
    j.expect(j.rc(1, "run") == VERDICT_RC.get(doc.get("verdict")),
             f"run exited {j.rc(1, 'run')} with verdict {doc.get('verdict')!r}")
    saved = (j.text(1, "results") or "").split()
    j.expect(any(n.endswith("-run.json") for n in saved), f"no <time>-run.json under results/: {saved}")
j.finish()
