#!/usr/bin/env python3
"""Where the CPU of a cyclic run goes, per thread: rmp-eval's run and cyclictest, one after the other on the same
CPU, priority and interval. Each thread's time on the CPU comes from /proc/PID/task/TID/schedstat (ns, read 0.3 s
before the end: the threads are gone after it), the whole process's from wait4's rusage. The RT thread's share is
the per-cycle cost; the rest (setup, the collector, cyclictest's main loop) is what the process adds around it.

Run as root from the repository:  bench/cpu_per_thread.py [--seconds 16] [--cpu N] [--runs 3]
Build first: cargo build --release.  Not a test: timing here depends on the machine and its load.
"""

import argparse
import glob
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cyclic_vs_cyclictest import results_root  # noqa: E402  (the same root, one home)


def threads(pid):
    """{"TID:name": ns on the CPU so far} of every thread of pid."""
    out = {}
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            name = open(t + "/comm").read().strip()
            out[t.rsplit("/", 1)[1] + ":" + name] = int(open(t + "/schedstat").read().split()[0])
        except OSError:
            pass
    return out


def run(argv, seconds):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(max(seconds - 0.3, seconds * 0.7))
    per_thread = threads(p.pid)
    p.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return total, per_thread


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/rmp-eval")
    ap.add_argument("--seconds", type=int, default=16)
    ap.add_argument("--cpu", type=int, default=os.cpu_count() - 1)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rmp-cpu-")
    root = results_root(tmp)
    ours = [args.bin, "run", "--root", root, "--no-config", "--core", str(args.cpu), "--send-priority", "42",
            "--period-us", "1000", "--duration", str(args.seconds), "--json"]
    theirs = ["cyclictest", "-m", "-q", "-a", str(args.cpu), "-p", "42", "-i", "1000", "-D", str(args.seconds),
              "-h", "1000", f"--histfile={tmp}/hist.txt"]
    for i in range(args.runs):
        for name, argv in (("rmp-eval", ours), ("cyclictest", theirs)):
            total, per = run(argv, args.seconds)
            cells = ", ".join(f"{k} {v / 1e6:.1f} ms" for k, v in sorted(per.items()))
            print(f"run {i + 1} {name}: process {total * 1e3:.1f} ms ({total / args.seconds * 1e3:.2f} us per "
                  f"1 kHz cycle); threads so far: {cells}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
