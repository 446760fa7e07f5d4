# fix → reboot through GRUB → the kernel parameters are live → rollback → reboot → all as before.
# The guest reboots after fix and rollback whatever their exit status: the next boot shows what they left.
. "$HOOK/common.sh"
case $BOOT in
1)
    install_package
    facts
    rec check rmp-eval check --json --core 1
    rec fix rmp-eval fix --core 1 --yes --no-measure
    reboot_after_this_boot
    ;;
2)
    facts
    rec check rmp-eval check --json --core 1
    rec rollback rmp-eval rollback --yes
    reboot_after_this_boot
    ;;
3)
    facts
    rec check rmp-eval check --json --core 1
    ;;
esac
