# arm64 end to end in one sequence of three boots (each TCG boot of an arm64 guest costs minutes): check on the RT
# kernel, a 5 s cyclic run, a NIC run against reflect on the host's tap, fix → reboot through UEFI + GRUB EFI →
# isolation live → rollback → reboot → as before.
. "$HOOK/common.sh"
case $BOOT in
1)
    install_package
    first_nic_up
    facts
    cat /proc/cpuinfo >"$B/cpuinfo"
    rec check rmp-eval check --json --core 1
    rec run rmp-eval run --core 1 --duration 5 --json
    ls /var/lib/rmp-eval/results >"$B/results" 2>&1
    rec run-nic rmp-eval run --nic "$NIC" --duration 5 --json
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
