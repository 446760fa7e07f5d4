# The Raspberry Pi boot path: the kernel command line is the one line of /boot/firmware/cmdline.txt, which the
# firmware reads at every boot. Here the host is the firmware: it boots the kernel with -kernel/-initrd/-append
# "<cmdline.txt>", reading the file from the share's firmware/ directory, which the guest bind-mounts at
# /boot/firmware (a Pi's boot partition is the firmware's too). GRUB's configuration is moved away, as on a Pi,
# while the package's own GRUB drop-in stays: fix must still choose cmdline.txt.
. "$HOOK/common.sh"
mkdir -p /boot/firmware
mount --bind "$HOOK/firmware" /boot/firmware
case $BOOT in
1)
    install_package
    mkdir -p /root/no-grub
    for f in /etc/default/grub /etc/default/grub.d/*.cfg; do
        [ "${f##*/}" = 99-rmp-eval.cfg ] || mv "$f" /root/no-grub/
    done
    ls /etc/default/grub.d >"$B/grub.d"
    facts
    cp /boot/firmware/cmdline.txt "$B/cmdline.txt"
    rec check rmp-eval check --json --core 1
    rec fix rmp-eval fix --core 1 --only cmdline --yes --no-measure
    cp /boot/firmware/cmdline.txt "$B/cmdline.txt.after-fix"
    reboot_after_this_boot
    ;;
2)
    facts
    cp /boot/firmware/cmdline.txt "$B/cmdline.txt"
    rec check rmp-eval check --json --core 1
    rec rollback rmp-eval rollback --yes
    reboot_after_this_boot
    ;;
3)
    facts
    cp /boot/firmware/cmdline.txt "$B/cmdline.txt"
    ;;
esac
sync
umount /boot/firmware
