#!/usr/bin/env bash
# The scale benchmark: `check` and `snapshot` on generated machines of 2, 64, 256 and 1,024 CPUs (as many IRQs,
# 3,000 threads; tests/untrusted/machine_gen.rs via examples/gen_machine), and `compare` of two 10 MB results.
# Usage: bench/untrusted.sh [N runs per case, default 5]. Prints median and max wall time per case, the peak
# resident memory of compare (GNU time's %M), and the work per CPU so that growth can be read off directly.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
cargo build --release --quiet --example gen_machine
cargo build --release --quiet
bin=$PWD/target/release/rmp-eval
gen=$PWD/target/release/examples/gen_machine
work=$(mktemp -d /tmp/rmp-bench-untrusted.XXXXXX)
trap 'rm -rf "$work"' EXIT

# median and max of N runs of a command, in ms
timed() {
    local times=()
    for _ in $(seq "$n"); do
        local t0 t1
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        times+=($(( (t1 - t0) / 1000 )))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v n="$n" '
        { v[NR] = $1 }
        END { med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
              printf "%.0f %.0f\n", med / 1000, v[n] / 1000 }'
}

echo "cpus  irqs  threads  check_median_ms  check_max_ms  snapshot_median_ms  snapshot_max_ms  snapshot_files  snapshot_ms_per_cpu"
for cpus in 2 64 256 1024; do
    root=$work/m$cpus
    "$gen" "$root" "$cpus" "$cpus" 3000
    read -r cmed cmax < <(timed "$bin" --root "$root" check)
    i=0
    snap() { i=$((i + 1)); rm -rf "$work/s$cpus-$i"; "$bin" --root "$root" snapshot "$work/s$cpus-$i"; }
    read -r smed smax < <(timed snap)
    files=$(find "$work/s$cpus-1" -type f | wc -l)
    printf "%4d  %4d  %7d  %15s  %12s  %18s  %15s  %14s  %19s\n" "$cpus" "$cpus" 3000 "$cmed" "$cmax" "$smed" "$smax" \
        "$files" "$(awk -v s="$smed" -v c="$cpus" 'BEGIN { printf "%.2f", s / c }')"
    rm -rf "$work"/s$cpus-* "$root"
done

# Two 10 MB results: a real result's series (64, the most compare accepts) and 10 MB of data compare does not
# read (an unknown key: results from newer versions carry more).
python3 - "$work" <<'PY'
import json, sys, subprocess
work = sys.argv[1]
one = {"label": "Cyclic", "count": 10000, "min_us": 0.5, "max_us": 900.0, "max_index": 3, "p50_us": 2.0,
       "p99_us": 2.1, "p999_us": 900.0, "p9999_us": 900.0,
       "buckets": {"great": 9980, "good": 0, "poor": 0, "bad": 0, "pathetic": 20}}
for name, scale in (("a", 1.0), ("b", 0.5)):
    series = []
    for i in range(64):
        s = dict(one, label=f"S{i}", max_us=one["max_us"] * scale)
        series.append(s)
    doc = {"period_us": 1000, "duration_s": 10.0, "mode": "cyclic", "verdict": "fail", "rtt": None,
           "series": series, "padding": "x" * (10 * 1024 * 1024)}
    with open(f"{work}/{name}.json", "w") as f:
        json.dump(doc, f)
PY
ls -l "$work"/a.json "$work"/b.json | awk '{ printf "%s %d bytes\n", $NF, $5 }'
read -r med max < <(timed "$bin" compare "$work/a.json" "$work/b.json")
rss=$( { /usr/bin/time -f "%M" "$bin" compare "$work/a.json" "$work/b.json" >/dev/null; } 2>&1 | tail -1)
echo "compare two 10 MB results: median ${med} ms, max ${max} ms, peak RSS ${rss} kB (input 2 x $(( $(stat -c %s "$work/a.json") / 1024 )) kB)"
