#!/usr/bin/env python3
"""rmp-eval's `run --profile linuxcnc` against the same two threads in cyclictest, side by side: alternating A B A B
on the same CPU. LinuxCNC's latency-test runs a base thread (25 µs, the higher priority) and a servo thread (1 ms);
rmp-eval's profile gives them SCHED_FIFO 98 and 97. cyclictest cannot give its threads different intervals and
priorities while it keeps a histogram (with -h it ignores --distance and gives every thread the same priority), so
the B side is two cyclictest processes started together on the same CPU, one per thread:

    cyclictest -m -q -a CPU -p 98 -i 25   -D S -h 1000 --histfile=base.txt
    cyclictest -m -q -a CPU -p 97 -i 1000 -D S -h 1000 --histfile=servo.txt

Per run and thread: the median wakeup latency; per run: CPU time per cycle of all threads (utime + stime from
wait4's rusage, whole processes, both cyclictests summed) and peak RSS (VmHWM, both cyclictests summed). Prints
every run, then the medians and the ratios (ours / cyclictest's).

Run as root from the repository:  bench/threads_vs_cyclictest.py [--pairs 5] [--seconds 20] [--cpu N]
Build first: cargo build --release.  Not a test: timing here depends on the machine and its load.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cyclic_vs_cyclictest import REPO, hwm_kb, last_cpu, results_root, timed  # noqa: E402

THREADS = (("base", 25, 98), ("servo", 1000, 97))


def ours(args, root, tmp):
    out = os.path.join(tmp, "ours.json")
    argv = [args.bin, "run", "--root", root, "--no-config", "--core", str(args.cpu), "--profile", "linuxcnc",
            "--duration", str(args.seconds), "--json"]
    code, cpu, rss, err = timed(argv, out)
    if code not in (0, 1, 3):
        raise SystemExit(f"rmp-eval failed ({code}): {err}")
    r = json.load(open(out))
    results = os.path.join(root, "var/lib/rmp-eval/results")
    for f in os.listdir(results):
        os.remove(os.path.join(results, f))
    by = {s["label"]: s for s in r["series"]}
    cycles = sum(s["count"] for s in r["series"])
    return {"median_us": {n: by[n]["wakeup"]["p50_us"] for n, _, _ in THREADS},
            "max_us": {n: by[n]["wakeup"]["max_us"] for n, _, _ in THREADS},
            "cycles": cycles, "cpu_s": cpu, "rss_kb": rss, "argv": argv}


def hist_median(path):
    counts, overflow = {}, 0
    for line in open(path):
        if line.startswith("# Histogram Overflows:"):
            overflow = int(line.split(":")[1].split()[0])
        elif line[:1].isdigit():
            k, n = line.split()[:2]
            counts[int(k)] = int(n)
    total = sum(counts.values()) + overflow
    acc = 0
    for k in sorted(counts):
        acc += counts[k]
        if acc * 2 >= total:
            return k + 0.5, total  # cyclictest truncates to whole µs: the middle of bucket k
    return None, total


def cyclictests(args, tmp):
    procs = []
    for name, interval, prio in THREADS:
        hist = os.path.join(tmp, f"{name}.txt")
        argv = ["cyclictest", "-m", "-q", "-a", str(args.cpu), "-p", str(prio), "-i", str(interval),
                "-D", str(args.seconds), "-h", "1000", f"--histfile={hist}"]
        procs.append((name, hist, argv, subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
    peak, cpu, left = {}, 0.0, {p.pid: n for n, _, _, p in procs}
    while left:
        for pid in list(left):
            got, status, ru = os.wait4(pid, os.WNOHANG)
            if got:
                cpu += ru.ru_utime + ru.ru_stime
                if os.waitstatus_to_exitcode(status) != 0:
                    raise SystemExit(f"cyclictest {left[pid]} failed")
                del left[pid]
            else:
                peak[pid] = max(peak.get(pid, 0), hwm_kb(pid))
        time.sleep(0.02)
    med, cycles = {}, 0
    for name, hist, _, _ in procs:
        m, n = hist_median(hist)
        med[name] = m
        cycles += n
    return {"median_us": med, "cycles": cycles, "cpu_s": cpu, "rss_kb": sum(peak.values()),
            "argv": [" ".join(a) for _, _, a, _ in procs]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--cpu", type=int, default=last_cpu())
    ap.add_argument("--bin", default=os.path.join(REPO, "target/release/rmp-eval"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (SCHED_FIFO, mlockall)")
    tmp = tempfile.mkdtemp(prefix="th-bench-")
    try:
        root = results_root(tmp)
        print(f"load before: {open('/proc/loadavg').read().strip()}")
        rows = []
        for i in range(args.pairs):
            a = ours(args, root, tmp)
            b = cyclictests(args, tmp)
            rows.append((a, b))
            per = lambda x: " ".join(f"{n} {x['median_us'][n]}" for n, _, _ in THREADS)
            print(f"pair {i + 1}: rmp-eval medians {per(a)} us, {a['cpu_s'] / a['cycles'] * 1e6:.3f} us CPU/cycle, "
                  f"{a['rss_kb']} kB | cyclictest medians {per(b)} us, {b['cpu_s'] / b['cycles'] * 1e6:.3f} us "
                  f"CPU/cycle, {b['rss_kb']} kB", flush=True)
        print(f"load after: {open('/proc/loadavg').read().strip()}")
        med = lambda f, side: statistics.median(f(r[side]) for r in rows)
        pair = lambda f: statistics.median(f(r[0]) / f(r[1]) for r in rows)
        print()
        print("| metric | rmp-eval (median of runs) | cyclictest | ratio of medians | median of pair ratios | goal |")
        print("|---|---|---|---|---|---|")
        for n, interval, prio in THREADS:
            f = lambda x, n=n: x["median_us"][n]
            print(f"| median wakeup, {n} ({interval} us, FIFO {prio}) | {med(f, 0):.3f} us | {med(f, 1):.1f} us | "
                  f"{med(f, 0) / med(f, 1):.3f} | {pair(f):.3f} | <= 1.05 |")
        f = lambda x: x["cpu_s"] / x["cycles"] * 1e6
        print(f"| CPU time per cycle | {med(f, 0):.3f} us | {med(f, 1):.3f} us | {med(f, 0) / med(f, 1):.3f} | "
              f"{pair(f):.3f} | |")
        f = lambda x: x["rss_kb"]
        print(f"| peak RSS | {med(f, 0):.0f} kB | {med(f, 1):.0f} kB (both) | {med(f, 0) / med(f, 1):.3f} | "
              f"{pair(f):.3f} | |")
        print()
        print("rmp-eval:   " + " ".join(rows[0][0]["argv"]).replace(root, "ROOT"))
        for a in rows[0][1]["argv"]:
            print("cyclictest: " + a.replace(tmp, "TMP"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
