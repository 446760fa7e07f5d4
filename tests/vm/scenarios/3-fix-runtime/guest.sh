# Runtime steps only (no kernel parameters, so nothing but the package's unit and sysctl.d can explain a value
# after reboot): fix → values now → reboot → values back → rollback → values restored → reboot → still restored.
. "$HOOK/common.sh"
case $BOOT in
1)
    install_package
    facts
    rec fix rmp-eval fix --core 1 --yes --no-measure --only sysctl,irq_affinity
    facts after-fix
    reboot_after_this_boot
    ;;
2)
    facts
    rec rollback rmp-eval rollback --yes
    facts after-rollback
    reboot_after_this_boot
    ;;
3)
    facts
    ;;
esac
