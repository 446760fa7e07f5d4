#!/usr/bin/env bash
# NIC benchmark: round-trip time over a veth pair, rmp-eval (run --nic ↔ reflect) against a minimal C AF_PACKET
# ping/echo pair (bench/nic/ping.c, echo.c), alternating A B A B … on the same CPU at the same priority and period.
# Both RTTs compared are kernel software stamps (TX from the error queue, RX from SCM_TIMESTAMPING), as rmp-eval
# measures; the C ping's user-space RTT (send() to recvmsg() return) is shown beside it.
# Prints each run's p50 and the medians and their ratio (goal: ours ≤ 1.25× the C pair's). The AF_XDP path
# (run --path af_xdp; copy mode and generic or native XDP on a veth) has no kernel stamps: its RTT is user space to
# user space, the same points as the C ping's user-space RTT, against which it is set.
# Usage (root): bench/nic_rtt.sh [PAIRS=3] [SECONDS=20] [PERIOD_US=1000]
# With XDP_BEFORE=OTHER_BINARY: only the AF_XDP path, OTHER_BINARY's run then this tree's, alternating, PAIRS times;
# each run's p50, the medians, their ratio, and the verdict by compare's noise rule (report/noise.rs: two-sided
# Mann-Whitney U over the runs' p50s, p < 0.01 and a median shift over 10 % and 1 us, else "no clear change").
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-3}
SECS=${2:-20}
PERIOD=${3:-1000}
CPU=$(( $(nproc) - 1 ))
ID=$$
NS=nc-bench-$ID
A=ncbA$ID
B=ncbB$ID
WORK=$(mktemp -d /tmp/nc-bench-XXXXXX)
ECHO_PID=
cleanup() {
    [ -n "$ECHO_PID" ] && kill "$ECHO_PID" 2>/dev/null || true
    ip link del "$A" 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# RMP_EVAL_BIN: a binary already built (this tree's release build otherwise).
BIN=${RMP_EVAL_BIN:-target/release/rmp-eval}
[ -n "${RMP_EVAL_BIN:-}" ] || cargo build --release -q
gcc -O2 -Wall -o "$WORK/ping" bench/nic/ping.c
gcc -O2 -Wall -o "$WORK/echo" bench/nic/echo.c

ip netns add "$NS"
ip link add "$A" type veth peer name "$B"
ip link set "$B" netns "$NS"
ip link set "$A" up
ip -n "$NS" link set "$B" up
sleep 2

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# The AF_XDP path of two binaries, alternating (XDP_BEFORE, then ours).
xdp_ab() {
    local before=$1 i b p50
    : >"$WORK/ab"
    printf '%-4s %-8s %10s %10s %8s %8s\n' pair binary p50_us p99_us lost mode
    for i in $(seq 1 "$PAIRS"); do
        for b in before after; do
            local bin=$BIN
            [ "$b" = before ] && bin=$before
            ip netns exec "$NS" "$BIN" reflect --nic "$B" >/dev/null & ECHO_PID=$!
            sleep 0.5
            "$bin" run --nic "$A" --path af_xdp --no-config --json --duration "$SECS" --period-us "$PERIOD" \
                --core "$CPU" --send-priority 42 --receive-priority 45 >"$WORK/a.json" || true
            kill -INT "$ECHO_PID"; wait "$ECHO_PID" || true; ECHO_PID=
            read -r p50 p99 lost mode < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rtt"]; print(r["p50_us"], r["p99_us"], r["lost"], r["xdp"]["xdp_mode"])' "$WORK/a.json")
            printf '%-4s %-8s %10s %10s %8s %8s\n' "$i" "$b" "$p50" "$p99" "$lost" "$mode"
            echo "$b $p50 $p99" >>"$WORK/ab"
        done
    done
    python3 - "$WORK/ab" <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def pick(who, col): return [float(r[col]) for r in rows if r[0] == who]
def mann_whitney(a, b):
    # As report/noise.rs: normal approximation with tie and continuity corrections, two-sided.
    allv = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    n1, n2, n = len(a), len(b), len(allv)
    r1 = ties = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and allv[j + 1][0] == allv[i][0]:
            j += 1
        rank, t = (i + j) / 2 + 1, j - i + 1
        ties += t ** 3 - t
        r1 += sum(1 for k in range(i, j + 1) if allv[k][1] == 0) * rank
        i = j + 1
    u = r1 - n1 * (n1 + 1) / 2
    var = n1 * n2 / 12 * (n1 + n2 + 1 - ties / ((n1 + n2) * (n1 + n2 - 1)))
    return 1.0 if var <= 0 else math.erfc(max(abs(u - n1 * n2 / 2) - 0.5, 0) / math.sqrt(var) / math.sqrt(2))
for col, name in ((1, "p50"), (2, "p99")):
    b, a = pick("before", col), pick("after", col)
    mb, ma = statistics.median(b), statistics.median(a)
    p = mann_whitney(b, a)
    clear = p < 0.01 and abs(ma - mb) > max(0.1 * mb, 1.0)
    verdict = ("after better" if ma < mb else "after worse") if clear else "no clear change"
    print(f"median {name}: before {mb:.1f} us, after {ma:.1f} us, ratio after/before {ma / mb:.2f}; "
          f"Mann-Whitney p = {p:.3f}: {verdict}")
PY
}
if [ -n "${XDP_BEFORE:-}" ]; then
    echo "AF_XDP before ($XDP_BEFORE) vs after ($BIN, $(git describe --always --dirty 2>/dev/null || echo '?')), $(uname -r), CPU $CPU, period ${PERIOD}us, ${SECS}s per run"
    xdp_ab "$XDP_BEFORE"
    exit 0
fi

echo "rmp-eval $(git describe --always --dirty 2>/dev/null || echo '?'), $(uname -r), CPU $CPU, period ${PERIOD}us, ${SECS}s per run"
printf '%-4s %-28s %10s %10s %8s %14s\n' pair run p50_us p99_us lost user_p50_us
: >"$WORK/ours"
: >"$WORK/c"
: >"$WORK/xdp"
: >"$WORK/cuser"
for i in $(seq 1 "$PAIRS"); do
    # A: rmp-eval run --nic (EtherCAT frames, kernel software TX/RX timestamps) ↔ rmp-eval reflect
    ip netns exec "$NS" "$BIN" reflect --nic "$B" >/dev/null & ECHO_PID=$!
    sleep 0.5
    "$BIN" run --nic "$A" --no-config --json --duration "$SECS" --period-us "$PERIOD" --core "$CPU" \
        --send-priority 42 --receive-priority 45 >"$WORK/a.json" || true
    kill -INT "$ECHO_PID"; wait "$ECHO_PID" || true; ECHO_PID=
    read -r p50 p99 lost < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rtt"]; print(r["p50_us"], r["p99_us"], r["lost"])' "$WORK/a.json")
    printf '%-4s %-28s %10s %10s %8s %14s\n' "$i" "rmp-eval run ↔ reflect" "$p50" "$p99" "$lost" -
    echo "$p50" >>"$WORK/ours"
    # A'': rmp-eval run --path af_xdp (user-space stamps) ↔ rmp-eval reflect
    ip netns exec "$NS" "$BIN" reflect --nic "$B" >/dev/null & ECHO_PID=$!
    sleep 0.5
    "$BIN" run --nic "$A" --path af_xdp --no-config --json --duration "$SECS" --period-us "$PERIOD" --core "$CPU" \
        --send-priority 42 --receive-priority 45 >"$WORK/a.json" || true
    kill -INT "$ECHO_PID"; wait "$ECHO_PID" || true; ECHO_PID=
    read -r p50 p99 lost mode < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rtt"]; print(r["p50_us"], r["p99_us"], r["lost"], (r.get("xdp") or {}).get("xdp_mode"))' "$WORK/a.json")
    printf '%-4s %-28s %10s %10s %8s %14s\n' "$i" "rmp-eval af_xdp ($mode) ↔ reflect" "$p50" "$p99" "$lost" "$p50"
    echo "$p50" >>"$WORK/xdp"
    # A': rmp-eval run --mode raw ↔ the C echo (which side of the pair costs what)
    ip netns exec "$NS" "$WORK/echo" "$B" & ECHO_PID=$!
    sleep 0.5
    "$BIN" run --nic "$A" --mode raw --no-config --json --duration "$SECS" --period-us "$PERIOD" --core "$CPU" \
        --send-priority 42 --receive-priority 45 >"$WORK/a.json" || true
    kill "$ECHO_PID"; wait "$ECHO_PID" 2>/dev/null || true; ECHO_PID=
    read -r p50 p99 lost < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rtt"]; print(r["p50_us"], r["p99_us"], r["lost"])' "$WORK/a.json")
    printf '%-4s %-28s %10s %10s %8s %14s\n' "$i" "rmp-eval run raw ↔ C echo" "$p50" "$p99" "$lost" -
    # B: C ping (user-space send→recv time) ↔ C echo
    ip netns exec "$NS" "$WORK/echo" "$B" & ECHO_PID=$!
    sleep 0.5
    out=$("$WORK/ping" "$A" "$SECS" "$PERIOD" "$CPU" 42)
    kill "$ECHO_PID"; wait "$ECHO_PID" 2>/dev/null || true; ECHO_PID=
    p50=$(sed -n 's/.*kernel_p50_us=\([0-9.]*\).*/\1/p' <<<"$out")
    p99=$(sed -n 's/.*kernel_p99_us=\([0-9.]*\).*/\1/p' <<<"$out")
    lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$out")
    up50=$(sed -n 's/.* p50_us=\([0-9.]*\).*/\1/p' <<<"$out")
    printf '%-4s %-28s %10s %10s %8s %14s\n' "$i" "C ping ↔ C echo" "$p50" "$p99" "$lost" "$up50"
    echo "$p50" >>"$WORK/c"
    echo "$up50" >>"$WORK/cuser"
done
mo=$(median <"$WORK/ours")
mc=$(median <"$WORK/c")
echo "median p50: rmp-eval ${mo} us, C pair ${mc} us, ratio $(awk -v a="$mo" -v b="$mc" 'BEGIN {printf "%.2f", a/b}') (goal <= 1.25)"
mx=$(median <"$WORK/xdp")
mu=$(median <"$WORK/cuser")
echo "median p50: rmp-eval af_xdp ${mx} us (user space), af_packet ${mo} us (kernel stamps), ratio $(awk -v a="$mx" -v b="$mo" 'BEGIN {printf "%.2f", a/b}') (goal <= 0.8); C ping user space ${mu} us, af_xdp / that $(awk -v a="$mx" -v b="$mu" 'BEGIN {printf "%.2f", a/b}')"
