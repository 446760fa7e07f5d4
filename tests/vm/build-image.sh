#!/usr/bin/env bash
# Builds (once per content of the VM suite's image inputs) a Debian bookworm disk with linux-image-rt-amd64 that
# boots through GRUB, plus the test hook. Prints the base image path. Cached in $CACHE_DIR/images.
# First boot uses -kernel/-initrd to run grub-install + update-grub inside the guest (update-grub in a chroot on a
# loop file writes no menu entry); a second boot through GRUB proves the image before it is cached.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

base=$(base_image)
if [ -f "$base" ]; then
    echo "$base"
    exit 0
fi
mkdir -p "$CACHE_DIR/images" "$CACHE_DIR/debs"
work=$(mktemp -d /tmp/vm-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mirror=$(host_mirror)

log "debootstrap bookworm (RT kernel) from $mirror"
debootstrap --variant=minbase --cache-dir="$CACHE_DIR/debs" \
    --include=linux-image-rt-amd64,initramfs-tools,systemd-sysv,udev,kmod,procps,iproute2,grub-pc,ethtool \
    bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }

uuid=$(cat /proc/sys/kernel/random/uuid)
echo rmpvm > "$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 rmpvm\n' > "$root/etc/hosts"
echo "UUID=$uuid / ext4 errors=remount-ro 0 1" > "$root/etc/fstab"
cat > "$root/etc/default/grub" <<'GRUB'
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0,115200"
GRUB_TERMINAL=console
GRUB_DISABLE_OS_PROBER=true
GRUB_DISABLE_RECOVERY=true
GRUB
install -m 0755 "$VM_DIR/guest/rmp-hook" "$root/usr/local/sbin/rmp-hook"
install -m 0644 "$VM_DIR/guest/rmp-hook.service" "$root/etc/systemd/system/rmp-hook.service"
ln -sf /etc/systemd/system/rmp-hook.service "$root/etc/systemd/system/multi-user.target.wants/rmp-hook.service"
# Nothing waits for a login on the console; the hook ends every boot.
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
# Nor on tty2-6 (getty-static starts them when there is no logind), and no ext4 snapshot to reap: under TCG these
# two held multi-user.target, and with it every boot's script, back by about 5 s.
ln -sf /dev/null "$root/etc/systemd/system/getty-static.service"
ln -sf /dev/null "$root/etc/systemd/system/e2scrub_reap.service"
kernel=$(readlink -f "$root/vmlinuz"); initrd=$(readlink -f "$root/initrd.img")
cp "$kernel" "$work/vmlinuz"; cp "$initrd" "$work/initrd.img"
rm -rf "$root/var/cache/apt/archives/"*.deb

log "making the disk"
size_mb=3072
truncate -s "$((size_mb - 1))M" "$work/fs.img"
mkfs.ext4 -q -F -U "$uuid" -L rmproot -d "$root" "$work/fs.img"
truncate -s "${size_mb}M" "$work/disk.raw"
echo 'start=2048, type=83, bootable' | sfdisk -q "$work/disk.raw"
dd if="$work/fs.img" of="$work/disk.raw" bs=1M seek=1 conv=notrunc,sparse status=none
rm -f "$work/fs.img"
qemu-img convert -O qcow2 "$work/disk.raw" "$work/disk.qcow2"
rm -f "$work/disk.raw"

log "first boot: grub-install + update-grub inside the guest"
share=$work/share; mkdir -p "$share"
cat > "$share/guest.sh" <<'G'
set -e
grub-install --target=i386-pc /dev/vda
# The initramfs with the modules this disk's root needs (virtio_blk, ext4), found here in the guest, not on the
# build host: a third of the size of MODULES=most's, about 9 s less per boot under TCG. The NIC, 9p and the
# rest load from the root file system, as on a real machine.
echo MODULES=dep >/etc/initramfs-tools/conf.d/rmp-vm-modules
update-initramfs -u
update-grub
grep -c '^menuentry\|^[[:space:]]*menuentry' /boot/grub/grub.cfg
uname -a
G
run_boots "$work/disk.qcow2" "$share" "$work/logs" 1 -nic none \
    -kernel "$work/vmlinuz" -initrd "$work/initrd.img" \
    -append "root=UUID=$uuid ro console=ttyS0,115200" || die "first boot failed (logs in $work/logs)"
cat "$share/out/boot1.log" >&2
[ "$(cat "$share/out/boot1.rc")" = 0 ] || die "grub-install/update-grub failed in the guest"

log "second boot: through GRUB"
rm -rf "$share"; mkdir -p "$share"
echo 'cat /proc/cmdline; cat /sys/kernel/realtime' > "$share/guest.sh"
run_boots "$work/disk.qcow2" "$share" "$work/logs2" 1 -nic none || die "boot through GRUB failed"
cat "$share/out/boot1.log" >&2
grep -q BOOT_IMAGE= "$share/out/boot1.log" || die "the second boot did not come through GRUB"
[ "$(tail -n 1 "$share/out/boot1.log")" = 1 ] || die "the kernel is not PREEMPT_RT"

rm -f "$CACHE_DIR"/images/base-*.qcow2
mv "$work/disk.qcow2" "$base"
log "image ready: $base"
echo "$base"
