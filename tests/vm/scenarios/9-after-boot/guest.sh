# The "after" measures itself after the reboot: fix (the kernel command line, so a reboot is pending) measures
# "before" and arms rmp-eval-after-boot.service; at the next boot the unit measures by itself, writes the report and
# disarms; `compare` without arguments shows the pair; a third boot measures nothing.
. "$HOOK/common.sh"
R=/var/lib/rmp-eval

# wait_done: until the after-boot unit has finished (at most 10 min under TCG).
wait_done() {
    for _ in $(seq 300); do
        st=$(systemctl show rmp-eval-after-boot.service -p ActiveState --value)
        res=$(systemctl show rmp-eval-after-boot.service -p Result --value)
        [ "$st" != activating ] && [ -e $R/after-boot-done.json -o "$res" != success ] && break
        sleep 2
    done
    systemctl show rmp-eval-after-boot.service -p ActiveState -p Result -p ExecMainStatus -p ConditionResult \
        >"$B/after-unit" 2>&1
}

case $BOOT in
1)
    install_package
    sed -i 's/^RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS=.*/RMP_EVAL_AFTER_BOOT_SETTLE_SECONDS=5/' /etc/default/rmp-eval
    rec fix rmp-eval fix --core 1 --yes --only cmdline --measure-seconds 2
    rec check rmp-eval check --core 1 --json
    ls $R >"$B/state"
    ls $R/results >"$B/results"
    reboot_after_this_boot
    ;;
2)
    wait_done
    ls $R >"$B/state"
    ls $R/results >"$B/results"
    rec compare rmp-eval compare --json
    rec check rmp-eval check --core 1 --json
    cp $R/after-boot-report.txt "$B/report" 2>/dev/null
    journalctl -u rmp-eval-after-boot.service --no-pager -o cat >"$B/journal" 2>&1
    reboot_after_this_boot
    ;;
3)
    # The unit starts once multi-user.target is reached, as this script does: wait until systemd has evaluated
    # its condition and the unit is not running (armed by mistake, it would have measured by then).
    for _ in $(seq 120); do
        ct=$(systemctl show rmp-eval-after-boot.service -p ConditionTimestampMonotonic --value)
        st=$(systemctl show rmp-eval-after-boot.service -p ActiveState --value)
        [ "${ct:-0}" != 0 ] && [ "$st" != activating ] && break
        sleep 0.5
    done
    systemctl show rmp-eval-after-boot.service -p ConditionResult -p ActiveState >"$B/after-unit" 2>&1
    ls $R/results >"$B/results"
    rec rollback rmp-eval rollback --yes
    ;;
esac
