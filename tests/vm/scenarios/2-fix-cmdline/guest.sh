# fix → reboot through GRUB → the kernel parameters are live → rollback → reboot → all as before.
. "$HOOK/common.sh"
case $BOOT in
1)
    install_package
    facts
    rec check rmp-eval check --json --core 1
    rec fix rmp-eval fix --core 1 --yes --no-measure
    # Reboot after a partial fix too (exit 1): rollback must still restore everything.
    case $(cat "$B/fix.rc") in 0 | 1) reboot_after_this_boot ;; esac
    ;;
2)
    facts
    rec check rmp-eval check --json --core 1
    rec rollback rmp-eval rollback --yes
    case $(cat "$B/rollback.rc") in 0 | 1) reboot_after_this_boot ;; esac
    ;;
3)
    facts
    rec check rmp-eval check --json --core 1
    ;;
esac
