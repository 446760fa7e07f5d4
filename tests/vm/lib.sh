# Shared by the VM suite's scripts (sourced, not run). The base image is cached under a hash of IMAGE_INPUTS, the
# files whose content goes into the image: change one of them and the next run builds a new image.
VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$VM_DIR/../.." && pwd)
# Persists between CI runs on this machine: debootstrap debs, the private apt lists, the built base images.
CACHE_DIR=${RMP_VM_CACHE:-/var/cache/rmp-eval-vm}
IMAGE_INPUTS=(build-image.sh guest/rmp-hook.service guest/rmp-hook)
IMAGE_INPUTS_ARM64=(build-image-arm64.sh guest/rmp-hook.service guest/rmp-hook)
# The guest's architecture: amd64 (q35-less pc machine, BIOS GRUB) or arm64 (virt machine, UEFI GRUB). run.sh sets
# it per scenario from RMP_VM_ARCH; the image scripts set it before sourcing this file.
VM_ARCH=${VM_ARCH:-amd64}
# Debian's UEFI firmware for the virt machine (qemu-efi-aarch64).
EFI_FIRMWARE=/usr/share/qemu-efi-aarch64/QEMU_EFI.fd
# Seconds for one boot + script + shutdown under TCG. A boot takes 50-130 s on an idle 2-core host, but 10-monitor
# (three timer-driven passes) hit 480 s with two guests and a build sharing the cores: only a hung guest should fail.
BOOT_TIMEOUT=${RMP_VM_BOOT_TIMEOUT:-900}
VCPUS=2
MEM_MB=1024

log() { printf '[vm %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 2; }

# The Debian mirror this host already uses (deb822 .sources first, then one-line lists), so that a CI machine
# reaches the registry it is allowed to reach.
host_mirror() {
    local f uri
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
        [ -n "$uri" ] && { echo "${uri%/}"; return; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^(http|https|file):/) { print $i; exit } }' "$f")
        [ -n "$uri" ] && { echo "${uri%/}"; return; }
    done
    echo http://deb.debian.org/debian
}

image_key() {
    if [ "$VM_ARCH" = arm64 ]; then
        (cd "$VM_DIR" && cat "${IMAGE_INPUTS_ARM64[@]}") | sha256sum | cut -c1-16
    else
        (cd "$VM_DIR" && cat "${IMAGE_INPUTS[@]}") | sha256sum | cut -c1-16
    fi
}
base_image() {
    if [ "$VM_ARCH" = arm64 ]; then
        echo "$CACHE_DIR/images/arm64-$(image_key).qcow2"
    else
        echo "$CACHE_DIR/images/base-$(image_key).qcow2"
    fi
}

# A scratch dir for one suite run, removed by the caller's trap.
make_workdir() { mktemp -d "/tmp/vm-run.XXXXXX"; }

# One boot of a disk under TCG (never KVM: /dev/kvm here does not boot stock kernels), with the 9p share and a
# console log. -no-reboot turns a guest reboot into a qemu exit, so every boot gets its own timeout. amd64's
# -nodefaults: no VGA, floppy, CD-ROM or parallel port to probe at every boot; what a scenario uses is given.
qemu_boot() {
    local disk=$1 share=$2 console=$3; shift 3
    local rc=0 pin=()
    if [ -n "${VM_PIN_VCPUS:-}" ]; then
        pin=(-name "rmpvm,debug-threads=on")
        pin_vcpus "$console.pid" &
    fi
    # arm64: the virt machine with Cortex-A72 cores (a Raspberry Pi 4's), firmware or -kernel given by the caller.
    local machine=(qemu-system-x86_64 -cpu max -machine pc -nodefaults)
    [ "$VM_ARCH" = arm64 ] && machine=(qemu-system-aarch64 -cpu cortex-a72 -machine virt)
    ${QEMU_PREFIX[@]+"${QEMU_PREFIX[@]}"} timeout --kill-after=15 "$BOOT_TIMEOUT" "${machine[@]}" \
        -accel tcg,thread=multi -smp "$VCPUS" -m "$MEM_MB" \
        -display none -monitor none -no-reboot -serial "file:$console" \
        -drive "file=$disk,if=virtio,format=qcow2,cache=${VM_DISK_CACHE:-unsafe}" -pidfile "$console.pid" \
        -virtfs "local,path=$share,mount_tag=rmphook,security_model=none,id=hook" ${pin[@]+"${pin[@]}"} \
        "$@" </dev/null >>"$console.qemu" 2>&1 || rc=$?
    [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ ! -e "$console.cut" ]; } && log "boot timed out after ${BOOT_TIMEOUT}s ($console)"
    return "$rc"
}

# The guest's last vCPU (its RT core in the scenarios) alone on the host's last CPU, every other qemu thread on the
# others. The host's scheduler otherwise moves the busy threads between its CPUs every second or so, and a vCPU
# that shares a host CPU with another for a while measures several times worse for that while: a regime no tuning
# in the guest causes, which compare would credit to whatever step was measured then. Threads qemu makes later
# inherit the affinity of the thread that makes them. Without a second host CPU nothing is pinned.
pin_vcpus() {
    local pidfile=$1 pid="" t last host_last
    host_last=$(($(nproc) - 1))
    last="CPU $((VCPUS - 1))/TCG"
    [ "$host_last" -ge 1 ] || return 0
    for _ in $(seq 300); do
        [ -s "$pidfile" ] && pid=$(cat "$pidfile") && grep -qx "$last" /proc/"$pid"/task/*/comm 2>/dev/null && break
        sleep 0.1
    done
    [ -n "$pid" ] || return 0
    for t in /proc/"$pid"/task/*; do
        if [ "$(cat "$t/comm" 2>/dev/null)" = "$last" ]; then
            taskset -p -c "$host_last" "${t##*/}" >/dev/null 2>&1
        else
            taskset -p -c "0-$((host_last - 1))" "${t##*/}" >/dev/null 2>&1
        fi
    done
    return 0
}

# A power cut (a scenario with a file `power-cut`): qemu killed with SIGKILL, no shutdown, when the guest asks
# (it creates out/cut<N>) or once this boot's console matches the extended regex a previous boot left in
# out/cut-console<N> (the trial kernel printing its command line). Marks the boot out/cut<N>.done for the judge.
cut_watch() {
    local n=$1 share=$2 console=$3 bg=$4 pat=""
    while kill -0 "$bg" 2>/dev/null; do
        [ -f "$share/out/cut-console$n" ] && pat=$(cat "$share/out/cut-console$n")
        if [ -e "$share/out/cut$n" ] || { [ -n "$pat" ] && grep -Eq "$pat" "$console" 2>/dev/null; }; then
            : >"$console.cut"
            kill -KILL "$(cat "$console.pid")" 2>/dev/null
            : >"$share/out/cut$n.done"
            return
        fi
        sleep 0.2
    done
}

# Boots until the guest script stops asking for a reboot (at most $4 boots). Returns non-zero if a boot hung,
# crashed or did not run the script. Extra qemu args follow (a NIC, or -kernel for the image build).
# PI_BOOT=(KERNEL INITRD CMDLINE_TXT): every boot is -kernel/-initrd with -append read from CMDLINE_TXT at that
# boot, as the Raspberry Pi firmware reads cmdline.txt.
PI_BOOT=()
run_boots() {
    local disk=$1 share=$2 logdir=$3 max=$4; shift 4
    local n pi=()
    mkdir -p "$share/out" "$logdir"
    for ((n = 1; n <= max; n++)); do
        echo "$n" > "$share/boot"
        log "  boot $n"
        [ ${#PI_BOOT[@]} -eq 0 ] || pi=(-kernel "${PI_BOOT[0]}" -initrd "${PI_BOOT[1]}" -append "$(cat "${PI_BOOT[2]}")")
        local rc=0
        if [ -n "${VM_POWER_CUT:-}" ]; then
            qemu_boot "$disk" "$share" "$logdir/console$n.log" "$@" ${pi[@]+"${pi[@]}"} &
            local bg=$!
            cut_watch "$n" "$share" "$logdir/console$n.log" "$bg"
            wait "$bg" || rc=$?
            if [ -e "$logdir/console$n.log.cut" ]; then
                log "  boot $n ended by a power cut"
                continue
            fi
        else
            qemu_boot "$disk" "$share" "$logdir/console$n.log" "$@" ${pi[@]+"${pi[@]}"} || rc=$?
        fi
        if [ "$rc" -ne 0 ]; then
            log "boot $n failed; console tail:"; tail -n 30 "$logdir/console$n.log" >&2
            tail -n 5 "$logdir/console$n.log.qemu" >&2 2>/dev/null
            return 1
        fi
        # A boot in which the guest said the machine may reboot by itself (the program under test reboots it,
        # a trial kernel panics) may end before its script does: the next boot tells what it left.
        if [ ! -f "$share/out/boot$n.rc" ] && [ -e "$share/out/self-reboot$n" ]; then
            log "  boot $n ended by the guest's own reboot"
            continue
        fi
        if [ ! -f "$share/out/boot$n.rc" ]; then
            log "boot $n ran no script; console tail:"; tail -n 30 "$logdir/console$n.log" >&2
            return 1
        fi
        [ -e "$share/out/reboot$n" ] || return 0
    done
    log "guest still asked for a reboot after $max boots"
    return 1
}

# The NIC scenario: a tap inside a private network namespace (qemu runs in it, so the guest's virtio NIC is the
# tap's only peer) and `rmp-eval reflect` answering on the host side. Names carry the vm prefix and this run's pid.
NIC_NS="" NIC_TAP="" NIC_PID=""
QEMU_PREFIX=()
nic_up() {
    local dir=$1
    NIC_NS=vm-nic-$$
    NIC_TAP=vmtap$$
    ip netns add "$NIC_NS" || return 1
    ip -n "$NIC_NS" tuntap add dev "$NIC_TAP" mode tap || return 1
    ip -n "$NIC_NS" link set "$NIC_TAP" up || return 1
    QEMU_PREFIX=(ip netns exec "$NIC_NS")
    ip netns exec "$NIC_NS" "$HOST_RMP" reflect --nic "$NIC_TAP" >"$dir/share/out/host-reflect.log" 2>&1 &
    NIC_PID=$!
    echo "$NIC_TAP" >"$dir/share/host-nic"
}
nic_down() {
    if [ -n "$NIC_PID" ]; then
        kill "$NIC_PID" 2>/dev/null && wait "$NIC_PID" 2>/dev/null
        NIC_PID=""
    fi
    if [ -n "$NIC_NS" ]; then
        ip netns del "$NIC_NS" 2>/dev/null
        NIC_NS=""
    fi
    QEMU_PREFIX=()
    return 0
}
