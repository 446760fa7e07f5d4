#!/usr/bin/env bash
# Median wall time of `rmp-eval check` over N runs (default 30, after 3 warm-up runs), on this machine and on the
# seed-machine fixture root. Usage: bench/check.sh [N] [extra check args, e.g. --nic eth0]
# Prints one line per case: median, p90, min and max in milliseconds.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-30}
shift || true
cargo build --release --quiet
bin=target/release/rmp-eval

measure() {
    local label=$1; shift
    for _ in 1 2 3; do "$bin" "$@" >/dev/null || true; done
    local times=()
    for _ in $(seq "$n"); do
        local t0 t1
        t0=$(date +%s%N)
        "$bin" "$@" >/dev/null || true
        t1=$(date +%s%N)
        times+=($(( (t1 - t0) / 1000 )))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v label="$label" -v n="$n" '
        { v[NR] = $1 }
        END {
            med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
            p90 = v[int(n * 0.9 + 0.999)]
            printf "%-28s n=%d  median %.1f ms  p90 %.1f ms  min %.1f ms  max %.1f ms\n", label, n, med / 1000, p90 / 1000, v[1] / 1000, v[n] / 1000
        }'
}

measure "check (live)" check "$@"
measure "check --json (live)" check --json "$@"
measure "check (seed fixture root)" --root tests/fixtures/seed-i3-13100te check --nic enp2s0
