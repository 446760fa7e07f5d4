#!/usr/bin/env python3
"""rmp-eval's cyclic run against Debian's cyclictest (rt-tests), side by side: alternating A B A B on the same CPU,
priority and interval. Per run: median wakeup latency, CPU time per cycle (utime + stime from wait4's rusage,
whole process), peak RSS (VmHWM). Prints every run, then the medians and the ratios (ours / cyclictest's).

Run as root from the repository:  bench/cyclic_vs_cyclictest.py [--pairs 5] [--seconds 20] [--cpu N]
Build first: cargo build --release.  Not a test: timing here depends on the machine and its load.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def last_cpu():
    return max(os.sched_getaffinity(0))


def hwm_kb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def timed(argv, stdout_path):
    """Runs argv to completion; returns (exit status, CPU seconds, peak RSS kB, stderr).

    CPU = utime + stime from wait4's rusage. Peak RSS = the process's VmHWM, polled every 20 ms until it exits:
    wait4's ru_maxrss would count this Python process too (the child's memory before exec is carried over).
    """
    with open(stdout_path, "wb") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        peak = 0
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, hwm_kb(p.pid))
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode(errors="replace").strip()
    return p.returncode, ru.ru_utime + ru.ru_stime, peak, err


def results_root(tmp):
    """A root tree for rmp-eval's results (kept out of /var/lib); the CPU list and the PM QoS device are the
    machine's own, so the run is set up exactly as on "/"."""
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, "sys/devices/system/cpu"))
    shutil.copy("/sys/devices/system/cpu/online", os.path.join(root, "sys/devices/system/cpu/online"))
    os.makedirs(os.path.join(root, "dev"))
    os.symlink("/dev/cpu_dma_latency", os.path.join(root, "dev/cpu_dma_latency"))
    return root


def ours(args, root, tmp):
    out = os.path.join(tmp, "ours.json")
    argv = [args.bin, "run", "--root", root, "--no-config", "--core", str(args.cpu),
            "--send-priority", str(args.prio), "--period-us", str(args.interval),
            "--duration", str(args.seconds), "--json"]
    code, cpu, rss, err = timed(argv, out)
    if code not in (0, 1):
        raise SystemExit(f"rmp-eval failed ({code}): {err}")
    r = json.load(open(out))
    s = r["series"][0]
    assert r["dma_latency_held"], "rmp-eval did not hold /dev/cpu_dma_latency"
    os.remove(os.path.join(root, "var/lib/rmp-eval/results", os.listdir(os.path.join(root, "var/lib/rmp-eval/results"))[0]))
    return {"median_us": s["wakeup"]["p50_us"], "cycles": s["count"], "cpu_s": cpu, "rss_kb": rss,
            "max_us": s["wakeup"]["max_us"], "argv": argv}


def cyclictest(args, tmp):
    hist = os.path.join(tmp, "hist.txt")
    # -h 1000: 1 µs buckets up to 1 ms (8 kB), the smallest histogram that still gives the median: favours
    # cyclictest's RSS. -m: mlockall, as rmp-eval does. /dev/cpu_dma_latency is held at 0 by cyclictest's default.
    argv = ["cyclictest", "-m", "-q", "-a", str(args.cpu), "-p", str(args.prio), "-i", str(args.interval),
            "-D", f"{args.seconds}", "-h", "1000", f"--histfile={hist}"]
    code, cpu, rss, err = timed(argv, os.path.join(tmp, "ct.out"))
    if code != 0:
        raise SystemExit(f"cyclictest failed ({code}): {err}")
    counts, overflow, mx = {}, 0, None
    for line in open(hist):
        if line.startswith("# Histogram Overflows:"):
            overflow = int(line.split(":")[1].split()[0])
        elif line.startswith("# Max Latencies:"):
            mx = int(line.split(":")[1].split()[0])
        elif line[:1].isdigit():
            k, n = line.split()[:2]
            counts[int(k)] = int(n)
    total = sum(counts.values()) + overflow
    acc, median = 0, None
    for k in sorted(counts):
        acc += counts[k]
        if acc * 2 >= total:
            # cyclictest truncates to whole µs: bucket k holds [k, k+1) µs; its middle is the estimate.
            median = k + 0.5
            break
    return {"median_us": median, "cycles": total, "cpu_s": cpu, "rss_kb": rss, "max_us": mx, "argv": argv}


def pair_args():
    """The options of an A B comparison with cyclictest: pairs, seconds, CPU, priority, interval, binary."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--cpu", type=int, default=last_cpu())
    ap.add_argument("--prio", type=int, default=42)
    ap.add_argument("--interval", type=int, default=1000)
    ap.add_argument("--bin", default=os.path.join(REPO, "target/release/rmp-eval"))
    return ap.parse_args()


def main():
    args = pair_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (SCHED_FIFO, mlockall)")
    tmp = tempfile.mkdtemp(prefix="cy-bench-")
    try:
        root = results_root(tmp)
        print(f"load before: {open('/proc/loadavg').read().strip()}")
        rows = []
        for i in range(args.pairs):
            a = ours(args, root, tmp)
            b = cyclictest(args, tmp)
            rows.append((a, b))
            print(f"pair {i + 1}: rmp-eval median {a['median_us']:.3f} us, {a['cpu_s'] / a['cycles'] * 1e6:.3f} us CPU/cycle, "
                  f"{a['rss_kb']} kB, max {a['max_us']} us | cyclictest median {b['median_us']} us, "
                  f"{b['cpu_s'] / b['cycles'] * 1e6:.3f} us CPU/cycle, {b['rss_kb']} kB, max {b['max_us']} us", flush=True)
        print(f"load after: {open('/proc/loadavg').read().strip()}")
        med = lambda f, side: statistics.median(f(r[side]) for r in rows)
        lat = (med(lambda x: x["median_us"], 0), med(lambda x: x["median_us"], 1))
        cpu = (med(lambda x: x["cpu_s"] / x["cycles"] * 1e6, 0), med(lambda x: x["cpu_s"] / x["cycles"] * 1e6, 1))
        rss = (med(lambda x: x["rss_kb"], 0), med(lambda x: x["rss_kb"], 1))
        # The ratio within each pair (A and B a few seconds apart) follows the machine's load better than the
        # ratio of the two medians when the load drifts.
        pair = lambda f: statistics.median(f(r[0]) / f(r[1]) for r in rows)
        plat = pair(lambda x: x["median_us"])
        pcpu = pair(lambda x: x["cpu_s"] / x["cycles"])
        prss = pair(lambda x: x["rss_kb"])
        print()
        print("| metric | rmp-eval (median of runs) | cyclictest | ratio of medians | median of pair ratios | goal |")
        print("|---|---|---|---|---|---|")
        print(f"| median wakeup latency | {lat[0]:.3f} us | {lat[1]:.1f} us | {lat[0] / lat[1]:.3f} | {plat:.3f} | <= 1.05 |")
        print(f"| CPU time per cycle | {cpu[0]:.3f} us | {cpu[1]:.3f} us | {cpu[0] / cpu[1]:.3f} | {pcpu:.3f} | <= 1 |")
        print(f"| peak RSS | {rss[0]:.0f} kB | {rss[1]:.0f} kB | {rss[0] / rss[1]:.3f} | {prss:.3f} | <= 2 |")
        print()
        print("rmp-eval:   " + " ".join(rows[0][0]["argv"]).replace(root, "ROOT"))
        print("cyclictest: " + " ".join(rows[0][1]["argv"]).replace(tmp, "TMP"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
