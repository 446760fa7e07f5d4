#!/usr/bin/env bash
# Builds (once per content of its inputs, see IMAGE_INPUTS_ARM64 in lib.sh) the arm64 guest: Debian bookworm arm64
# with linux-image-rt-arm64 on a GPT disk (an EFI system partition and ext4 root), booted by qemu's virt machine
# with Debian's UEFI firmware (qemu-efi-aarch64) through GRUB EFI. Prints the base image path; the kernel and
# initrd are kept beside it (.vmlinuz, .initrd) for the Raspberry Pi boot path, which boots them with -kernel.
# debootstrap runs the arm64 packages' scripts through qemu-user (binfmt, see deps.sh). The first boot (-kernel)
# runs grub-install --removable (EFI/BOOT/BOOTAA64.EFI: no firmware variables needed) and update-grub inside the
# guest; a second boot through the firmware and GRUB proves the image before it is cached.
set -euo pipefail
VM_ARCH=arm64
. "$(dirname "$0")/lib.sh"

base=$(base_image)
if [ -f "$base" ]; then
    echo "$base"
    exit 0
fi
mkdir -p "$CACHE_DIR/images" "$CACHE_DIR/debs-arm64"
work=$(mktemp -d /tmp/vm-image-arm64.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mirror=$(host_mirror)

# The debootstrapped tree is kept as a tarball (debootstrap under qemu-user took 1109 s here and needs no VM lock:
# RMP_VM_ROOTFS_ONLY=1 makes just that part, e.g. while another VM run holds the lock). Its cache key is what goes
# into it (the lines below), not this whole script, so that a change to the disk or boot steps reuses it.
# Under qemu-user every process costs a lot: mkinitramfs with MODULES=most (hundreds of modules, several processes
# each) ran for over 35 minutes here. The initramfs needs only what mounts the root on qemu's virt machine; the
# rest loads from the root file system.
includes=linux-image-rt-arm64,initramfs-tools,systemd-sysv,udev,kmod,procps,iproute2,grub-efi-arm64-bin,grub2-common,ethtool
initrd_modules="virtio_pci virtio_mmio virtio_blk ext4 crc32c_generic"
rootfs_key=$(printf 'bookworm arm64 minbase %s MODULES=list %s\n' "$includes" "$initrd_modules" | sha256sum | cut -c1-16)
rootfs=$CACHE_DIR/images/arm64-rootfs-$rootfs_key.tar
t0=$SECONDS
if [ ! -f "$rootfs" ]; then
    log "debootstrap bookworm arm64 (RT kernel) from $mirror, its scripts under qemu-user"
    debootstrap --foreign --arch=arm64 --variant=minbase --cache-dir="$CACHE_DIR/debs-arm64" --include="$includes" \
        bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
    mkdir -p "$root/etc/initramfs-tools/conf.d" "$root/usr/share/initramfs-tools/modules.d"
    echo MODULES=list >"$root/etc/initramfs-tools/conf.d/rmp-vm.conf"
    printf '%s\n' $initrd_modules >"$root/usr/share/initramfs-tools/modules.d/rmp-vm"
    log "debootstrap second stage (package scripts under qemu-user)"
    chroot "$root" /debootstrap/debootstrap --second-stage >>"$work/debootstrap.log" 2>&1 ||
        { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap --second-stage failed"; }
    rm -rf "$root/var/cache/apt/archives/"*.deb
    tar -C "$root" -cf "$rootfs.new" . && mv "$rootfs.new" "$rootfs"
    log "debootstrap took $((SECONDS - t0)) s"
else
    mkdir -p "$root"
    tar -C "$root" -xf "$rootfs"
fi
[ "${RMP_VM_ROOTFS_ONLY:-0}" = 1 ] && { log "rootfs ready: $rootfs"; exit 0; }

uuid=$(cat /proc/sys/kernel/random/uuid)
esp_id=$(printf '%08X' $((RANDOM * 65536 + RANDOM)))
esp_uuid="${esp_id:0:4}-${esp_id:4:4}"
echo rmpvm-arm64 >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 rmpvm-arm64\n' >"$root/etc/hosts"
printf 'UUID=%s / ext4 errors=remount-ro 0 1\nUUID=%s /boot/efi vfat umask=0077 0 2\n' "$uuid" "$esp_uuid" >"$root/etc/fstab"
mkdir -p "$root/boot/efi"
cat >"$root/etc/default/grub" <<'GRUB'
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyAMA0,115200"
GRUB_TERMINAL=console
GRUB_DISABLE_OS_PROBER=true
GRUB_DISABLE_RECOVERY=true
GRUB
install -m 0755 "$VM_DIR/guest/rmp-hook" "$root/usr/local/sbin/rmp-hook"
install -m 0644 "$VM_DIR/guest/rmp-hook.service" "$root/etc/systemd/system/rmp-hook.service"
ln -sf /etc/systemd/system/rmp-hook.service "$root/etc/systemd/system/multi-user.target.wants/rmp-hook.service"
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyAMA0.service"
ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
kernel=$(readlink -f "$root/vmlinuz")
initrd=$(readlink -f "$root/initrd.img")
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"
rm -rf "$root/var/cache/apt/archives/"*.deb

log "making the disk (GPT: EFI system partition, ext4 root)"
size_mb=3072 esp_mb=64
truncate -s "$((size_mb - esp_mb - 2))M" "$work/fs.img"
mkfs.ext4 -q -F -U "$uuid" -L rmproot -d "$root" "$work/fs.img"
mkfs.vfat -C -i "$esp_id" -n ESP "$work/esp.img" $((esp_mb * 1024)) >/dev/null
truncate -s "${size_mb}M" "$work/disk.raw"
printf 'label: gpt\nstart=2048, size=%d, type=U\nstart=%d, type=L\n' $((esp_mb * 2048)) $((2048 + esp_mb * 2048)) |
    sfdisk -q "$work/disk.raw"
dd if="$work/esp.img" of="$work/disk.raw" bs=1M seek=1 conv=notrunc status=none
dd if="$work/fs.img" of="$work/disk.raw" bs=1M seek=$((1 + esp_mb)) conv=notrunc,sparse status=none
rm -f "$work/fs.img" "$work/esp.img"
qemu-img convert -O qcow2 "$work/disk.raw" "$work/disk.qcow2"
rm -f "$work/disk.raw"

log "first boot (-kernel): grub-install --removable + update-grub inside the guest"
share=$work/share
mkdir -p "$share"
cat >"$share/guest.sh" <<'G'
set -e
mountpoint /boot/efi
grub-install --target=arm64-efi --efi-directory=/boot/efi --removable --no-nvram
update-grub
grep -c '^menuentry\|^[[:space:]]*menuentry' /boot/grub/grub.cfg
uname -a
G
run_boots "$work/disk.qcow2" "$share" "$work/logs" 1 -nic none \
    -kernel "$work/vmlinuz" -initrd "$work/initrd.img" \
    -append "root=UUID=$uuid ro console=ttyAMA0,115200" || die "first boot failed (logs in $work/logs)"
cat "$share/out/boot1.log" >&2
[ "$(cat "$share/out/boot1.rc")" = 0 ] || die "grub-install/update-grub failed in the guest"

log "second boot: UEFI firmware → GRUB EFI → kernel"
rm -rf "$share"
mkdir -p "$share"
echo 'cat /proc/cmdline; cat /sys/kernel/realtime' >"$share/guest.sh"
run_boots "$work/disk.qcow2" "$share" "$work/logs2" 1 -nic none -bios "$EFI_FIRMWARE" || die "boot through GRUB failed"
cat "$share/out/boot1.log" >&2
grep -q BOOT_IMAGE= "$share/out/boot1.log" || die "the second boot did not come through GRUB"
[ "$(tail -n 1 "$share/out/boot1.log")" = 1 ] || die "the kernel is not PREEMPT_RT"

find "$CACHE_DIR/images" -name 'arm64-*' ! -name "${rootfs##*/}" -delete
cp "$work/vmlinuz" "${base%.qcow2}.vmlinuz"
cp "$work/initrd.img" "${base%.qcow2}.initrd"
echo "root=UUID=$uuid" >"${base%.qcow2}.root"
mv "$work/disk.qcow2" "$base"
log "image ready: $base ($((SECONDS - t0)) s)"
echo "$base"
