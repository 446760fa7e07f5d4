#!/usr/bin/env bash
# NIC benchmark: round-trip time over a veth pair, rmp-eval (run --nic ↔ reflect) against a minimal C AF_PACKET
# ping/echo pair (bench/nic/ping.c, echo.c), alternating A B A B … on the same CPU at the same priority and period.
# Both RTTs compared are kernel software stamps (TX from the error queue, RX from SCM_TIMESTAMPING), as rmp-eval
# measures; the C ping's user-space RTT (send() to recvmsg() return) is shown beside it.
# Prints each run's p50 and the medians and their ratio (goal: ours ≤ 1.25× the C pair's). The AF_XDP path
# (run --path af_xdp; copy mode and generic or native XDP on a veth) has no kernel stamps: its RTT is user space to
# user space, the same points as the C ping's user-space RTT, against which it is set.
# Usage (root): bench/nic_rtt.sh [PAIRS=3] [SECONDS=20] [PERIOD_US=1000]
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

cargo build --release -q
BIN=target/release/rmp-eval
gcc -O2 -Wall -o "$WORK/ping" bench/nic/ping.c
gcc -O2 -Wall -o "$WORK/echo" bench/nic/echo.c

ip netns add "$NS"
ip link add "$A" type veth peer name "$B"
ip link set "$B" netns "$NS"
ip link set "$A" up
ip -n "$NS" link set "$B" up
sleep 2

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

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
