#!/usr/bin/env bash
# qualify's wall time with --nic (every measurement round trips through a veth to `rmp-eval reflect`) against the
# same plan measured cyclic: `qualify --root T --core 1 --seconds S --periods 1000,500 --one-at-a-time --yes` on a
# fresh copy of the untuned guest's tree each run (its NIC's files copied under the veth's name), N runs of each,
# alternating. Prints each run's seconds and the medians. Root; a built binary (BIN, default target/debug).
#   bench/qualify_nic.sh [N] [S]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/target/debug/rmp-eval}
n=${1:-3}
secs=${2:-10}
id=$$
host=qbA$id ns=qb-ns-$id
work=$(mktemp -d /tmp/qualify-nic-bench.XXXXXX)
cleanup() {
    [ -n "${refl:-}" ] && kill "$refl" 2>/dev/null || true
    ip link del "$host" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$ns"
ip link add "$host" type veth peer name qbB$id
ip link set qbB$id netns "$ns"
ip link set "$host" up
ip -n "$ns" link set qbB$id up
sleep 1
ip netns exec "$ns" chrt -f 50 "$bin" reflect --nic qbB$id >"$work/reflect.log" 2>&1 &
refl=$!
sleep 1

one() { # MODE: cyclic or nic; prints the wall seconds
    local t=$work/tree
    rm -rf "$t" && mkdir "$t"
    tar xzf "$root/tests/fixtures/debian12-rt-qemu-untuned.tar.gz" -C "$t"
    cp -a "$t/sys/class/net/enp0s2" "$t/sys/class/net/$host"
    local nic=()
    [ "$1" = nic ] && nic=(--nic "$host")
    local s e
    s=$(date +%s.%N)
    "$bin" qualify --root "$t" --core 1 "${nic[@]}" --seconds "$secs" --periods 1000,500 --one-at-a-time --yes \
        >"$work/out-$1" 2>&1 || { cat "$work/out-$1" >&2; exit 1; }
    e=$(date +%s.%N)
    echo "$e - $s" | bc
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: >"$work/cyclic"
: >"$work/nic"
for _ in $(seq "$n"); do
    one cyclic | tee -a "$work/cyclic"
    one nic | tee -a "$work/nic"
done
c=$(median <"$work/cyclic")
m=$(median <"$work/nic")
echo "cyclic: median $c s (runs: $(tr '\n' ' ' <"$work/cyclic"))"
echo "nic:    median $m s (runs: $(tr '\n' ' ' <"$work/nic"))"
echo "ratio nic/cyclic: $(echo "scale=3; $m / $c" | bc)"
