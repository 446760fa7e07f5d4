#!/usr/bin/env python3
"""Arrival jitter (the frame at the first SubDevice, by reflect's DC latch) against the sender's wakeup jitter, on a
veth pair, through AF_PACKET and AF_XDP, with and without --txq 0: alternating runs, ROUNDS of each.

Usage (root): bench/arrival_vs_wakeup.py [ROUNDS] [SECONDS]. Prints, per configuration, the medians over its runs of
the Sender's and the Arrival's p50/p99/max |deviation| (us), their ratios (Arrival / Sender), and the Pearson
correlation between the Sender's and the Arrival's per-second maximum deviations over every second of every run: how
much of the wire-level jitter the wakeup jitter explains (r^2).
In the PREEMPT_RT guest through qemu's igb: `RMP_VM_KEEP=1 tests/vm/run.sh b1-arrival-bench` (its guest runs the same
alternation), then bench/arrival_vs_wakeup.py --results WORKDIR/b1-arrival-bench/share/out/b1 reads its records
(bench-<config>-<round>.json).
"""
import json
import os
import statistics
import subprocess
import sys
import time

BIN = os.environ.get("RMP_EVAL", "target/release/rmp-eval")
NS, HOST, PEER = "arrbench", "arrA", "arrB"
CONFIGS = {
    "af_packet": [],
    "af_packet --txq 0": ["--txq", "0"],
    "af_xdp": ["--path", "af_xdp"],
    "af_xdp --txq 0": ["--path", "af_xdp", "--txq", "0"],
}


def sh(*a):
    subprocess.run(a, check=True)


def setup():
    subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
    subprocess.run(["ip", "link", "del", HOST], stderr=subprocess.DEVNULL)
    sh("ip", "netns", "add", NS)
    sh("ip", "link", "add", HOST, "type", "veth", "peer", "name", PEER)
    sh("ip", "link", "set", PEER, "netns", NS)
    sh("ip", "link", "set", HOST, "up")
    sh("ip", "netns", "exec", NS, "ip", "link", "set", PEER, "up")
    time.sleep(1)
    return subprocess.Popen(["ip", "netns", "exec", NS, BIN, "reflect", "--nic", PEER],
                            stdout=subprocess.DEVNULL)


def series(r, label):
    return next(s for s in r["series"] if s["label"] == label)


def absdev(s):
    """The series' p50 and p99 as the result states them, and its largest |deviation|."""
    return (s["p50_us"], s["p99_us"], max(abs(s["max_us"]), abs(s["min_us"])))


def pearson(xs, ys):
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx and syy else float("nan")


def from_results(d):
    """The guest's records: bench-<config with - for ' --txq 0'>-<round>.json."""
    got = {c: [] for c in CONFIGS}
    for name in CONFIGS:
        stem = "bench-" + name.replace(" --txq 0", "-txq0") + "-"
        for f in sorted(os.listdir(d)):
            if f.startswith(stem) and f.endswith(".json") and f[len(stem):-5].isdigit():
                try:
                    with open(os.path.join(d, f)) as fh:
                        got[name].append(json.load(fh))
                except (OSError, ValueError) as e:
                    print(f"{f}: {e}", file=sys.stderr)
    return got


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--results":
        table(from_results(sys.argv[2]))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    secs = sys.argv[2] if len(sys.argv) > 2 else "5"
    refl = setup()
    got = {c: [] for c in CONFIGS}
    try:
        for _ in range(rounds):
            for name, extra in CONFIGS.items():
                o = subprocess.run([BIN, "run", "--nic", HOST, "--no-config", "--core", "1", "--duration", secs,
                                    "--json"] + extra, capture_output=True)
                try:
                    got[name].append(json.loads(o.stdout))
                except json.JSONDecodeError:
                    print(f"{name}: {o.stderr.decode().strip()[:200]}", file=sys.stderr)
    finally:
        refl.terminate()
        refl.wait()
        subprocess.run(["ip", "link", "del", HOST])
        subprocess.run(["ip", "netns", "del", NS])
    table(got)


def table(got):
    print("| path | runs | Sender p50 / p99 / max (us) | Arrival p50 / p99 / max (us) | Arrival / Sender p50, p99 "
          "| r (per-second max) | r² |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in got.items():
        runs = [r for r in runs if any(s["label"] == "Arrival" for s in r["series"])]
        if not runs:
            print(f"| {name} | 0 | | | | | |")
            continue
        med = lambda k, lab: statistics.median(absdev(series(r, lab))[k] for r in runs)
        xs, ys = [], []
        for r in runs:
            a = series(r, "Sender")["max_per_interval"]["max_us"]
            b = series(r, "Arrival")["max_per_interval"]["max_us"]
            n = min(len(a), len(b))
            xs += a[:n]
            ys += b[:n]
        r = pearson(xs, ys)
        ratio = lambda k: med(k, "Arrival") / med(k, "Sender") if med(k, "Sender") else float("nan")
        print(f"| {name} | {len(runs)} | {med(0,'Sender'):.1f} / {med(1,'Sender'):.1f} / {med(2,'Sender'):.0f} | "
              f"{med(0,'Arrival'):.1f} / {med(1,'Arrival'):.1f} / {med(2,'Arrival'):.0f} | "
              f"{ratio(0):.2f}, {ratio(1):.2f} | {r:.2f} | {r*r:.2f} |")


if __name__ == "__main__":
    main()
