# Runtime steps only (no kernel parameters, so nothing but the package's unit and sysctl.d can explain a value
# after reboot): fix → values now → reboot → values back → rollback → values restored → reboot → still restored.
. "$HOOK/common.sh"
case $BOOT in
1)
    install_package
    facts
    rec fix rmp-eval fix --core 1 --yes --no-measure --only sysctl,irq_affinity
    facts after-fix
    case $(cat "$B/fix.rc") in 0 | 1) reboot_after_this_boot ;; esac
    ;;
2)
    facts
    rec rollback rmp-eval rollback --yes
    facts after-rollback
    case $(cat "$B/rollback.rc") in 0 | 1) reboot_after_this_boot ;; esac
    ;;
3)
    facts
    ;;
esac
