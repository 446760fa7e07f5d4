#!/usr/bin/env bash
# The VM suite: every scenario under tests/vm/scenarios/ on a fresh qcow2 overlay of a cached Debian bookworm
# PREEMPT_RT image, booted through GRUB under qemu TCG, with the project's .deb installed offline in the guest.
# Prints one PASS/FAIL line per scenario and the total time; exits 1 if any scenario failed, 2 if the harness
# could not run at all.   tests/vm/run.sh [SCENARIO-NAME ...]   (default: all of the selected architectures, in order)
# A scenario's guest is amd64 unless its directory has a file `arch` saying arm64 (Debian arm64 on qemu's virt
# machine, UEFI + GRUB EFI; build-image-arm64.sh). Environment: RMP_VM_ARCH = amd64 (default), arm64 or all:
# the architectures whose scenarios run by default; RMP_VM_CACHE (default /var/cache/rmp-eval-vm),
# RMP_VM_BOOT_TIMEOUT (s per boot), RMP_VM_LIST=1 only prints the scenarios that would run (with their arch), RMP_VM_KEEP=1 keeps the work directory (console logs, the guest's records) for
# a post-mortem, RMP_VM_DEB=FILE / RMP_VM_DEB_ARM64=FILE install that package instead of building one from this tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
start=$SECONDS
work=""
cleanup() {
    nic_down
    [ -n "$work" ] || return 0
    if [ "${RMP_VM_KEEP:-0}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
# A CI timeout or Ctrl+C still runs cleanup (the tap's namespace, the reflector).
trap 'exit 130' INT TERM

scenario_arch() { cat "$VM_DIR/scenarios/$1/arch" 2>/dev/null || echo amd64; }
wanted=${RMP_VM_ARCH:-amd64}
[ "$wanted" = all ] && wanted="amd64 arm64"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for d in "$VM_DIR"/scenarios/*/; do
        n=$(basename "$d")
        # A scenario with a file `long` (many boots) runs by default only with RMP_VM_LONG=1; by name, always.
        [ -f "$d/long" ] && [ "${RMP_VM_LONG:-0}" != 1 ] && continue
        # A benchmark (a file `manual`) runs only when named.
        [ -f "$d/manual" ] && continue
        case " $wanted " in *" $(scenario_arch "$n") "*) names+=("$n") ;; esac
    done
fi
archs=""
for n in "${names[@]}"; do
    [ -f "$VM_DIR/scenarios/$n/guest.sh" ] || die "no scenario $n"
    case " $archs " in *" $(scenario_arch "$n") "*) ;; *) archs="$archs $(scenario_arch "$n")" ;; esac
done
archs=${archs# }
[ -n "$archs" ] || die "no scenario for RMP_VM_ARCH=$wanted"
if [ "${RMP_VM_LIST:-0}" = 1 ]; then
    for n in "${names[@]}"; do echo "$n $(scenario_arch "$n")"; done
    exit 0
fi
[ "$(id -u)" = 0 ] || die "run as root (qemu's tap, netns, debootstrap)"
work=$(mktemp -d /tmp/vm-run.XXXXXX)
"$VM_DIR/deps.sh" "$archs"
declare -A base deb
# One image build at a time: tests/run-all.sh runs a scenario beside the package suite and the others after it.
mkdir -p "$CACHE_DIR/images"
for a in $archs; do
    t0=$SECONDS
    if [ "$a" = arm64 ]; then
        base[$a]=$(flock "$CACHE_DIR/images/.build.lock" "$VM_DIR/build-image-arm64.sh")
    else
        base[$a]=$(flock "$CACHE_DIR/images/.build.lock" "$VM_DIR/build-image.sh")
    fi
    log "$a image: ${base[$a]} ($((SECONDS - t0)) s)"
done

# amd64 always: the host side of the NIC scenarios runs the packaged amd64 binary.
debarchs=amd64
case " $archs " in *" arm64 "*) debarchs="amd64 arm64" ;; esac
for a in $debarchs; do
    given=RMP_VM_DEB
    [ "$a" = arm64 ] && given=RMP_VM_DEB_ARM64
    if [ -n "${!given:-}" ]; then
        deb[$a]=$(realpath "${!given}")
    else
        log "building the $a package"
        ARCHS=$a "$REPO_DIR/debian/build-debs.sh" "$work/deb" >"$work/deb-$a.log" 2>&1 \
            || { tail -n 30 "$work/deb-$a.log" >&2; die "debian/build-debs.sh failed"; }
        deb[$a]=$(ls "$work"/deb/rmp-eval_*_"$a".deb)
    fi
done
dpkg-deb -x "${deb[amd64]}" "$work/debroot"
HOST_RMP=$work/debroot/usr/sbin/rmp-eval

failed=0 npass=0 nfail=0
for name in "${names[@]}"; do
    sdir=$VM_DIR/scenarios/$name
    VM_ARCH=$(scenario_arch "$name")
    t0=$SECONDS
    dir=$work/$name
    share=$dir/share
    mkdir -p "$share/pkg" "$share/out"
    cp "${deb[$VM_ARCH]}" "$share/pkg/"
    cp "$VM_DIR/guest/common.sh" "$sdir/guest.sh" "$share/"
    # What a scenario brings from the host (a tool the image lacks): its share.sh fills the share.
    if [ -f "$sdir/share.sh" ] && ! bash "$sdir/share.sh" "$share"; then
        echo "FAIL $name: its share.sh failed"
        failed=1 nfail=$((nfail + 1))
        continue
    fi
    # A scenario whose boot runs longer than the default timeout says how long one may take (file boot-timeout, s).
    BOOT_TIMEOUT=${RMP_VM_BOOT_TIMEOUT:-$(cat "$sdir/boot-timeout" 2>/dev/null || echo 900)}
    # A scenario that cuts the power (a file power-cut): the disk honours the guest's flushes (writeback, not
    # unsafe), so a qemu killed mid-boot loses what a real disk's cache would, and no more.
    VM_POWER_CUT="" VM_DISK_CACHE=unsafe
    [ -f "$sdir/power-cut" ] && VM_POWER_CUT=1 VM_DISK_CACHE=writeback
    # A scenario judged on what the guest's RT core measured (a file pin-vcpus): that vCPU gets a host CPU of its own.
    VM_PIN_VCPUS=""
    [ -f "$sdir/pin-vcpus" ] && VM_PIN_VCPUS=1
    qemu-img create -q -f qcow2 -b "${base[$VM_ARCH]}" -F qcow2 "$dir/disk.qcow2"
    log "scenario $name ($VM_ARCH)"
    # How the guest boots: amd64 from its disk (BIOS, GRUB); arm64 through the UEFI firmware and GRUB EFI, or, for
    # the Raspberry Pi path (a file pi-boot), the kernel with the line of the share's firmware/cmdline.txt.
    bootargs=()
    PI_BOOT=()
    if [ -f "$sdir/pi-boot" ]; then
        img=${base[$VM_ARCH]%.qcow2}
        mkdir -p "$share/firmware"
        # Debian's raspi-firmware writes this line (tests/fixtures/README.md), with this disk's root.
        echo "console=ttyAMA0,115200 $(cat "$img.root") rw fsck.repair=yes net.ifnames=0 rootwait" \
            >"$share/firmware/cmdline.txt"
        cp "$share/firmware/cmdline.txt" "$share/out/cmdline.txt.orig"
        PI_BOOT=("$img.vmlinuz" "$img.initrd" "$share/firmware/cmdline.txt")
    elif [ "$VM_ARCH" = arm64 ]; then
        bootargs=(-bios "$EFI_FIRMWARE")
    fi
    nicargs=(-nic none)
    QEMU_PREFIX=()
    if [ -f "$sdir/nic" ]; then
        nic_up "$dir" || {
            echo "FAIL $name: could not set up the tap in a namespace"
            failed=1 nfail=$((nfail + 1))
            nic_down
            continue
        }
        # The guest's NIC model: virtio, or the one a `model: NAME` line of the nic file names (igb: qemu's
        # emulated Intel 82576, the driver family of the i210/i350; e1000e).
        model=$(sed -n 's/^model: *\([a-z0-9-]*\)$/\1/p' "$sdir/nic")
        nicargs=(-netdev "tap,id=n0,ifname=$NIC_TAP,script=no,downscript=no" -device "${model:-virtio-net-pci},netdev=n0")
    fi
    verdict=""
    if ! run_boots "$dir/disk.qcow2" "$share" "$dir/logs" "$(cat "$sdir/boots")" "${nicargs[@]}" \
        ${bootargs[@]+"${bootargs[@]}"}; then
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
