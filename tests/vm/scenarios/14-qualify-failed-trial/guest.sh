# A trial boot that cannot come up, and power lost twice while qualify runs. The user's own parameter
# `root=/dev/nowhere rootdelay=3` (qualify --cmdline-extra) goes on the trial line with the tuning's:
#   boot 1  qualify starts; the power is cut (sysrq b: a reset without sync) while it measures the baseline
#   boot 2  its unit resumes: the baseline again, then the trial is armed and it reboots by itself
#   boot 3  the trial: no root device (the initramfs waits 3 s), it panics, panic=10 reboots; GRUB has cleared
#           next_entry
#   boot 4  the default entry, by itself: the unit records the failed trial, applies the other steps; the power is
#           cut again during the cycle-time sweep
#   boot 5  the unit resumes the sweep and finishes; then rollback
# GRUB's own files never change; every boot that comes up is on the first boot's command line.
. "$HOOK/common.sh"
R=/var/lib/rmp-eval

grub_hashes() {
    sha256sum /boot/grub/grub.cfg /boot/grub/grubenv /etc/default/grub /etc/default/grub.d/* >"$B/grub-hashes" 2>&1
}
hashes() {
    find /etc /boot -xdev -type f -print0 | sort -z | xargs -0 sha256sum >"$B/hashes${1:+-$1}"
}
phase() {
    sed -n 's/.*"phase": *"\([a-z_]*\)".*/\1/p' $R/qualify.json 2>/dev/null | head -n 1
}
# power_cut_in PHASE: once qualify's state is in PHASE and its RT thread runs (a measurement under way, not the
# wait for the boot to settle before it), a reset without sync.
power_cut_in() {
    for _ in $(seq 1200); do
        [ "$(phase)" = "$1" ] && break
        sleep 0.5
    done
    for _ in $(seq 600); do
        ps -eLo cls=,comm= | grep -Eq '^ *FF +rmp-eval' && break
        sleep 0.2
    done
    sleep 2
    phase >"$B/cut-in-phase"
    cp $R/qualify.json "$B/state-at-cut.json" 2>/dev/null
    echo b >/proc/sysrq-trigger
}
wait_qualify() {
    wait_started rmp-eval-qualify.service 600
}

case $BOOT in
1)
    install_package
    mkdir -p /var/log/journal && systemctl restart systemd-journald
    facts
    grub_hashes
    hashes
    echo 1 >/proc/sys/kernel/sysrq
    sync
    may_reboot_by_itself
    rmp-eval qualify --core 1 --seconds 10 --periods 1000 --cmdline-extra root=/dev/nowhere,rootdelay=3 --yes \
        >"$B/qualify" 2>&1 &
    power_cut_in baseline
    ;;
2)
    facts
    grub_hashes
    # This boot ends with qualify's own reboot into the trial, and the trial boot ends in a panic.
    may_reboot_by_itself
    : >"$OUT/self-reboot3"
    wait_qualify
    ;;
4)
    facts
    grub_hashes
    echo 1 >/proc/sys/kernel/sysrq
    may_reboot_by_itself
    power_cut_in sweep
    ;;
5)
    facts
    wait_qualify
    grub_hashes
    journalctl -u rmp-eval-qualify.service --no-pager -o short-monotonic >"$B/qualify-journal" 2>&1
    cp $R/qualify.json "$B/state.json" 2>/dev/null
    mkdir -p "$B/qualification"
    cp $R/qualification/*.json "$B/qualification/" 2>/dev/null
    ls -A $R/results >"$B/results" 2>/dev/null
    rec status rmp-eval qualify --status
    rec rollback rmp-eval rollback --yes
    hashes after-rollback
    ;;
esac
