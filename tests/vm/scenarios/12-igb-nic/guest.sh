# A real NIC driver: qemu's igb (Intel 82576) in the PREEMPT_RT guest, `rmp-eval reflect` behind the host's tap.
# check --nic names the driver's per-queue IRQs; run --nic through AF_PACKET and through AF_XDP (native XDP on igb,
# copy mode: 6.1's igb has no AF_XDP zero-copy), each frame's arrival read from reflect's distributed clock and
# judged against a SYNC0 shift; --rxq 1 on a driver without ntuple filters is refused before
# anything changes; --txq 1 proven by the driver's per-queue counters; fix pins the NIC's IRQs to the RT core and
# sets coalescing through the driver; after a reboot, with the NIC brought up only after boot, the watcher
# (rmp-eval-nic@IF.service) pins the IRQs igb requests then; rollback puts both back.
. "$HOOK/common.sh"
case $BOOT in
1)
    first_nic_up
    nic=$NIC
    install_package
    readlink "/sys/class/net/$nic/device/driver" >"$B/driver" 2>&1
    facts
    ethtool -k "$nic" >"$B/features" 2>&1
    ethtool -T "$nic" >"$B/tstamp-caps" 2>&1
    ethtool -c "$nic" >"$B/coalesce-before" 2>&1
    rec check rmp-eval check --core 1 --nic "$nic" --json
    rec packet rmp-eval run --nic "$nic" --duration 5 --sync0-shift 2000 --json
    rec xdp rmp-eval run --nic "$nic" --path af_xdp --duration 5 --sync0-shift 2000 --json
    ip -d link show "$nic" >"$B/link-after-xdp" 2>&1
    rec txq rmp-eval run --nic "$nic" --txq 1 --duration 3 --json
    ethtool -n "$nic" >"$B/rules-before" 2>&1
    rec rxq rmp-eval run --nic "$nic" --rxq 1 --duration 3 --json
    ethtool -n "$nic" >"$B/rules-after" 2>&1
    rec fix rmp-eval fix --core 1 --nic "$nic" --only irq_affinity,nic_coalesce --yes --no-measure
    facts after-fix
    ethtool -c "$nic" >"$B/coalesce-after-fix" 2>&1
    reboot_after_this_boot
    ;;
2)
    # Nothing brings the NIC up at boot here (as on a machine whose MainDevice opens it later): igb has requested
    # no queue IRQ yet. The watcher the udev rule started must pin them when the NIC comes up.
    nic=$(cat "$OUT/b1/nic")
    echo "$nic" >"$B/nic"
    facts at-boot
    systemctl show "rmp-eval-nic@$nic.service" -p ActiveState -p SubState >"$B/watcher-at-boot" 2>&1
    first_nic_up
    # The watcher reacts to the kernel's notification asynchronously: until every queue IRQ is on CPU 1, 10 s at most.
    for _ in $(seq 50); do
        pinned=yes
        for irq in $(sed -n "s/^ *\([0-9]*\):.* $nic-.*/\1/p" /proc/interrupts); do
            [ "$(cat "/proc/irq/$irq/smp_affinity_list")" = 1 ] || pinned=no
        done
        [ $pinned = yes ] && break
        sleep 0.2
    done
    facts after-up
    ethtool -c "$nic" >"$B/coalesce-after-up" 2>&1
    journalctl -b -u "rmp-eval-nic@$nic.service" --no-pager >"$B/watcher-log" 2>&1
    rec rollback rmp-eval rollback --yes
    facts after-rollback
    ethtool -c "$nic" >"$B/coalesce-after-rollback" 2>&1
    ;;
esac
