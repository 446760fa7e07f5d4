#!/usr/bin/env python3
"""The IPIs the RT core receives while it is measured: rmp-eval's cyclic `run` on the live machine against Debian's
cyclictest (with --smi where the CPU has Intel's SMI counter), alternating A B A B on the same CPU, priority and
interval. The RT core's CAL (function call), TLB (shootdown) and RES (reschedule) counts are read by this script
from /proc/interrupts before and after each run (not by the tools), per minute of the run's wall time, start-up
and exit included; beside them CPU time per cycle and peak RSS (as bench/cyclic_vs_cyclictest.py measures them).
Prints every run, then the medians and the ratios (ours / cyclictest's).

Run as root from the repository:  bench/ipis_vs_cyclictest.py [--pairs 5] [--seconds 20] [--cpu N]
Build first: cargo build --release.  Not a test: counts here depend on the machine and what else runs on it.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cyclic_vs_cyclictest import pair_args, timed  # noqa: E402

ROWS = ("CAL", "TLB", "RES")


def ipis(cpu):
    """The CAL, TLB and RES counts of `cpu` in /proc/interrupts."""
    lines = open("/proc/interrupts").read().splitlines()
    col = lines[0].split().index(f"CPU{cpu}")
    out = {}
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        name = name.strip()
        if name in ROWS:
            out[name] = int(rest.split()[col])
    return out


def counted(argv, out_path, cpu, env=None):
    """Runs argv; returns (exit status, CPU s, peak RSS kB, stderr, IPIs per row, wall s)."""
    before, t0 = ipis(cpu), time.monotonic()
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        code, cpu_s, rss, err = timed(argv, out_path)
    finally:
        os.environ.clear()
        os.environ.update(old)
    wall = time.monotonic() - t0
    after = ipis(cpu)
    return code, cpu_s, rss, err, {k: after[k] - before.get(k, 0) for k in after}, wall


def smi_capable(cpu):
    vendor = next((l.split(":")[1].strip() for l in open("/proc/cpuinfo") if l.startswith("vendor_id")), "")
    return vendor == "GenuineIntel" and os.path.exists(f"/dev/cpu/{cpu}/msr")


def ours(args, tmp):
    out = os.path.join(tmp, "ours.json")
    argv = [args.bin, "run", "--no-config", "--core", str(args.cpu), "--send-priority", str(args.prio),
            "--period-us", str(args.interval), "--duration", str(args.seconds), "--json"]
    code, cpu_s, rss, err, n, wall = counted(argv, out, args.cpu, {"RMP_EVAL_RESULTS_DIR": tmp})
    if code not in (0, 1, 3):
        raise SystemExit(f"rmp-eval failed ({code}): {err}")
    r = json.load(open(out))
    smi = ((r.get("interference") or {}).get("smi") or {})
    return {"cycles": r["series"][0]["count"], "cpu_s": cpu_s, "rss_kb": rss, "ipis": n, "wall": wall,
            "smi": "counted" if smi.get("total") is not None else f"not counted: {smi.get('not_counted')}",
            "argv": argv}


def cyclictest(args, tmp):
    # -h 1000 as in cyclic_vs_cyclictest.py; --smi where the counter exists (cyclictest refuses it elsewhere).
    argv = ["cyclictest", "-m", "-q", "-a", str(args.cpu), "-p", str(args.prio), "-i", str(args.interval),
            "-D", f"{args.seconds}", "-h", "1000", f"--histfile={os.path.join(tmp, 'hist.txt')}"]
    if args.smi:
        argv.append("--smi")
    code, cpu_s, rss, err, n, wall = counted(argv, os.path.join(tmp, "ct.out"), args.cpu)
    if code != 0:
        raise SystemExit(f"cyclictest failed ({code}): {err}")
    total = 0
    for line in open(os.path.join(tmp, "hist.txt")):
        if line[:1].isdigit():
            total += int(line.split()[1])
        elif line.startswith("# Histogram Overflows:"):
            total += int(line.split(":")[1].split()[0])
    return {"cycles": total, "cpu_s": cpu_s, "rss_kb": rss, "ipis": n, "wall": wall, "argv": argv}


def per_min(x, row):
    return x["ipis"].get(row, 0) / x["wall"] * 60


def main():
    args = pair_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (SCHED_FIFO, mlockall, /proc/interrupts of the run)")
    args.smi = smi_capable(args.cpu)
    tmp = tempfile.mkdtemp(prefix="ipi-bench-")
    try:
        print(f"load before: {open('/proc/loadavg').read().strip()}; cyclictest --smi: {args.smi}")
        rows = []
        for i in range(args.pairs):
            a, b = ours(args, tmp), cyclictest(args, tmp)
            rows.append((a, b))
            show = lambda x: " ".join(f"{k} {per_min(x, k):.1f}/min" for k in ROWS)
            print(f"pair {i + 1}: rmp-eval {show(a)}, {a['cpu_s'] / a['cycles'] * 1e6:.3f} us CPU/cycle, "
                  f"{a['rss_kb']} kB, SMIs {a['smi']} | cyclictest {show(b)}, "
                  f"{b['cpu_s'] / b['cycles'] * 1e6:.3f} us CPU/cycle, {b['rss_kb']} kB", flush=True)
        print(f"load after: {open('/proc/loadavg').read().strip()}")
        med = lambda f, side: statistics.median(f(r[side]) for r in rows)
        ratio = lambda a, b: f"{a / b:.3f}" if b else ("1.000" if a == 0 else "inf")
        print()
        print("| metric (RT core, per run) | rmp-eval (median) | cyclictest (median) | ratio | difference |")
        print("|---|---|---|---|---|")
        for k in ROWS:
            a, b = med(lambda x: per_min(x, k), 0), med(lambda x: per_min(x, k), 1)
            print(f"| {k} per minute | {a:.1f} | {b:.1f} | {ratio(a, b)} | {a - b:+.1f} |")
        a, b = (med(lambda x: sum(per_min(x, k) for k in ROWS), s) for s in (0, 1))
        print(f"| CAL+TLB+RES per minute | {a:.1f} | {b:.1f} | {ratio(a, b)} | {a - b:+.1f} |")
        a, b = (med(lambda x: x["cpu_s"] / x["cycles"] * 1e6, s) for s in (0, 1))
        print(f"| CPU time per cycle | {a:.3f} us | {b:.3f} us | {ratio(a, b)} | |")
        a, b = (med(lambda x: x["rss_kb"], s) for s in (0, 1))
        print(f"| peak RSS | {a:.0f} kB | {b:.0f} kB | {ratio(a, b)} | |")
        print()
        print("rmp-eval:   " + " ".join(rows[0][0]["argv"]))
        print("cyclictest: " + " ".join(rows[0][1]["argv"]).replace(tmp, "TMP"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
