#!/usr/bin/env bash
# The VM suite: every scenario under tests/vm/scenarios/ on a fresh qcow2 overlay of a cached Debian bookworm
# PREEMPT_RT image, booted through GRUB under qemu TCG, with the project's .deb installed offline in the guest.
# Prints one PASS/FAIL line per scenario and the total time; exits 1 if any scenario failed, 2 if the harness
# could not run at all.   tests/vm/run.sh [SCENARIO-NAME ...]   (default: all, in order)
# Environment: RMP_VM_CACHE (default /var/cache/rmp-eval-vm), RMP_VM_BOOT_TIMEOUT (s per boot), RMP_VM_KEEP=1
# keeps the work directory (console logs, the guest's records) for a post-mortem, RMP_VM_DEB=FILE installs that
# package instead of building one from this tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || die "run as root (qemu's tap, netns, debootstrap)"
start=$SECONDS
work=$(mktemp -d /tmp/vm-run.XXXXXX)
cleanup() {
    nic_down
    if [ "${RMP_VM_KEEP:-0}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
# A CI timeout or Ctrl+C still runs cleanup (the tap's namespace, the reflector).
trap 'exit 130' INT TERM

"$VM_DIR/deps.sh"
base=$("$VM_DIR/build-image.sh")

if [ -n "${RMP_VM_DEB:-}" ]; then
    deb=$(realpath "$RMP_VM_DEB")
else
    log "building the package"
    ARCHS=amd64 "$REPO_DIR/debian/build-debs.sh" "$work/deb" >"$work/deb.log" 2>&1 \
        || { tail -n 30 "$work/deb.log" >&2; die "debian/build-debs.sh failed"; }
    deb=$(ls "$work"/deb/rmp-eval_*_amd64.deb)
fi
# The host side of the NIC scenario runs the packaged binary too.
dpkg-deb -x "$deb" "$work/debroot"
HOST_RMP=$work/debroot/usr/sbin/rmp-eval

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for d in "$VM_DIR"/scenarios/*/; do names+=("$(basename "$d")"); done
fi
failed=0 npass=0 nfail=0
for name in "${names[@]}"; do
    sdir=$VM_DIR/scenarios/$name
    [ -f "$sdir/guest.sh" ] || die "no scenario $name"
    t0=$SECONDS
    dir=$work/$name
    share=$dir/share
    mkdir -p "$share/pkg" "$share/out"
    cp "$deb" "$share/pkg/"
    cp "$VM_DIR/guest/common.sh" "$sdir/guest.sh" "$share/"
    qemu-img create -q -f qcow2 -b "$base" -F qcow2 "$dir/disk.qcow2"
    log "scenario $name"
    nicargs=(-nic none)
    QEMU_PREFIX=()
    if [ -f "$sdir/nic" ]; then
        nic_up "$dir" || {
            echo "FAIL $name: could not set up the tap in a namespace"
            failed=1 nfail=$((nfail + 1))
            nic_down
            continue
        }
        nicargs=(-netdev "tap,id=n0,ifname=$NIC_TAP,script=no,downscript=no" -device virtio-net-pci,netdev=n0)
    fi
    verdict=""
    if ! run_boots "$dir/disk.qcow2" "$share" "$dir/logs" "$(cat "$sdir/boots")" "${nicargs[@]}"; then
        verdict="a boot failed or timed out (console logs: $dir/logs with RMP_VM_KEEP=1)"
    fi
    nic_down
    # The judge runs even after a failed boot: what the guest recorded before tells why.
    if reasons=$(PYTHONPATH=$VM_DIR python3 "$sdir/judge.py" "$share/out" 2>&1) && [ -z "$verdict" ]; then
        echo "PASS $name ($((SECONDS - t0)) s)"
        npass=$((npass + 1))
    else
        failed=1 nfail=$((nfail + 1))
        echo "FAIL $name ($((SECONDS - t0)) s): ${verdict:-}"
        [ -n "$reasons" ] && printf '%s\n' "$reasons" | sed 's/^/    /'
    fi
done
echo "VM suite: $((SECONDS - start)) s in all"
echo "vm: $npass passed, $nfail failed"
exit "$failed"
