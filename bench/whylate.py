#!/usr/bin/env python3
"""What the interference counters and --trace cost: rmp-eval's cyclic run plain (--no-counters), with the
counters (the default), with --trace (the binary reader; trace_text: the text reader it replaced, kept as the
fallback), and Debian's cyclictest, side by side in rounds (the five in turn, same CPU, priority and interval).
Per run: median wakeup latency and CPU time per cycle (utime + stime, wait4's rusage). Prints every run, the
medians and the ratios to plain (goals: counters <= 1.02, --trace <= 1.10), to cyclictest, and raw to text.

Run as root from the repository:  bench/whylate.py [--rounds 5] [--seconds 10] [--cpu N]
Build first: cargo build --release.  Not a test: timing here depends on the machine and its load.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cyclic_vs_cyclictest import REPO, cyclictest, last_cpu, timed  # noqa: E402

VARIANTS = {"plain": ["--no-counters"], "counters": [], "trace": ["--trace"], "trace_text": ["--trace"]}
# trace_text: --trace with the text reader (trace_pipe, the fallback; the reader before the binary one).
ENV = {"trace_text": {"RMP_EVAL_TRACE_READER": "text"}}


def ours(args, extra, tmp, env=None):
    out = os.path.join(tmp, "ours.json")
    argv = [args.bin, "run", "--no-config", "--core", str(args.cpu), "--send-priority", str(args.prio),
            "--period-us", str(args.interval), "--duration", str(args.seconds), "--json"] + extra
    env_results = os.path.join(tmp, "results")
    os.makedirs(env_results, exist_ok=True)
    os.environ["RMP_EVAL_RESULTS_DIR"] = env_results
    os.environ.pop("RMP_EVAL_TRACE_READER", None)
    os.environ.update(env or {})
    code, cpu, _rss, err = timed(argv, out)
    os.environ.pop("RMP_EVAL_TRACE_READER", None)
    if code not in (0, 1):
        raise SystemExit(f"rmp-eval failed ({code}): {err}")
    doc = json.load(open(out))
    s = doc["series"][0]
    if "--trace" in extra:
        want = "raw" if not env else "text (RMP_EVAL_TRACE_READER=text)"
        if doc["trace"]["reader"] != want:
            raise SystemExit(f"--trace read {doc['trace']['reader']!r}, expected {want!r}")
    return {"median_us": s["wakeup"]["p50_us"], "cycles": s["count"], "cpu_s": cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--cpu", type=int, default=last_cpu())
    ap.add_argument("--prio", type=int, default=42)
    ap.add_argument("--interval", type=int, default=1000)
    ap.add_argument("--bin", default=os.path.join(REPO, "target/release/rmp-eval"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (SCHED_FIFO, mlockall, tracefs)")
    tmp = tempfile.mkdtemp(prefix="wl-bench-")
    runs = {k: [] for k in list(VARIANTS) + ["cyclictest"]}
    load0 = os.getloadavg()[0]
    for r in range(args.rounds):
        for name, extra in VARIANTS.items():
            x = ours(args, extra, tmp, ENV.get(name))
            runs[name].append(x)
            print(f"round {r} {name:10} median {x['median_us']:8.3f} us  cpu/cycle {1e6 * x['cpu_s'] / x['cycles']:7.3f} us",
                  flush=True)
        x = cyclictest(args, tmp)
        runs["cyclictest"].append(x)
        print(f"round {r} cyclictest median {x['median_us']:8.3f} us  cpu/cycle {1e6 * x['cpu_s'] / x['cycles']:7.3f} us",
              flush=True)
    print(f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    med = {k: statistics.median(x["median_us"] for x in v) for k, v in runs.items()}
    cpu = {k: statistics.median(1e6 * x["cpu_s"] / x["cycles"] for x in v) for k, v in runs.items()}
    for k in runs:
        print(f"{k:10} median wakeup {med[k]:8.3f} us ({med[k] / med['plain']:.3f} of plain, "
              f"{med[k] / med['cyclictest']:.3f} of cyclictest)  cpu/cycle {cpu[k]:7.3f} us "
              f"({cpu[k] / cpu['plain']:.3f} of plain)")
    # Within a round the runs are seconds apart and share the load of the moment: the median of those ratios too.
    for k in ("counters", "trace", "trace_text"):
        lat = statistics.median(a["median_us"] / b["median_us"] for a, b in zip(runs[k], runs["plain"]))
        c = statistics.median((a["cpu_s"] / a["cycles"]) / (b["cpu_s"] / b["cycles"]) for a, b in zip(runs[k], runs["plain"]))
        print(f"{k:10} median of round ratios to plain: latency {lat:.3f}, cpu {c:.3f}")
    lat = statistics.median(a["median_us"] / b["median_us"] for a, b in zip(runs["trace"], runs["trace_text"]))
    c = statistics.median((a["cpu_s"] / a["cycles"]) / (b["cpu_s"] / b["cycles"])
                          for a, b in zip(runs["trace"], runs["trace_text"]))
    print(f"trace (raw) / trace_text, median of round ratios: latency {lat:.3f}, cpu {c:.3f}")


if __name__ == "__main__":
    main()
