#!/bin/bash
# Where `run --load` puts its load: 20 s runs at 10 kHz on the RT core (the last CPU), alternating without and with
# `--load cpu,io,vm,net,irq`; per run the busy/idle jiffies of every CPU from /proc/stat, the RT thread's own CPU
# time per cycle (its schedstat, sampled every 0.2 s) and the wakeup p50/p99. Run as root on a quiet machine:
#   bench/load_cpus.sh [BINARY] [DURATION] [ROUNDS]      (defaults: target/release/rmp-eval 20s 3)
# Not a test: what it shows depends on the machine and what else runs on it.
set -euo pipefail
B=${1:-$(dirname "$0")/../target/release/rmp-eval}; D=${2:-20s}; R=${3:-3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export RMP_EVAL_RESULTS_DIR=$T/results; mkdir -p "$RMP_EVAL_RESULTS_DIR"
# busy = user+nice+system+irq+softirq, idle = idle+iowait (steal left out: the host's share on a VM).
stat1() { awk '/^cpu[0-9]/{print $1, $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
for rep in $(seq 1 "$R"); do
  for load in none cpu,io,vm,net,irq; do
    a=$(stat1); l0=$(cut -d' ' -f1 /proc/loadavg)
    extra=(); [ "$load" = none ] || extra=(--load "$load")
    "$B" run --no-config --period-us 100 --duration "$D" --json --output "$T/l.json" "${extra[@]}" >/dev/null 2>"$T/l.err" &
    P=$!; rt=""; sleep 0.3
    while kill -0 $P 2>/dev/null; do
      for t in /proc/$P/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = rmp-eval-rt ] && rt=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null || true)
      done
      sleep 0.2
    done
    wait $P || [ $? -le 3 ] || { cat "$T/l.err" >&2; exit 1; }
    b=$(stat1)
    python3 - "$T/l.json" "${rt:-0}" "$rep" "$load" "$l0" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["series"][0]
ns = int(sys.argv[2])
print(f"rep={sys.argv[3]} load={sys.argv[4]} loadavg={sys.argv[5]} cycles={d['count']} wakeup_p50={d['wakeup']['p50_us']}"
      f" p99={d['wakeup']['p99_us']} maxdev={d['max_us']} rt_thread_ns_per_cycle={round(ns / d['count'], 1)}")
PY
    paste <(echo "$a") <(echo "$b") | awk '{printf "   %s busy %d idle %d jiffies\n", $1, $5-$2, $6-$3}'
  done
done
