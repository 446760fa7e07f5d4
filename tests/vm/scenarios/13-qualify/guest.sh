# qualify end to end from the untuned guest, one step at a time, with a load the tuning removes: it measures the
# machine, applies the runtime steps, arms a trial boot of the kernel command line and reboots by itself (boot 1);
# its unit judges the trial boot, makes the line permanent, measures each step and the cycle-time sweep and
# writes the report (boot 2); rollback, then boot 3 has every file of /etc and /boot as before (hashes).
# The load: a SCHED_FIFO 99 task that runs in bursts on the last CPU it may run on. Untuned that is the RT core;
# once the command line isolates CPU 1 it inherits init's housekeeping CPUs, so the cmdline step removes it.
. "$HOOK/common.sh"
R=/var/lib/rmp-eval

# Everything qualify and rollback may touch, as hashes (the files) and link targets.
hashes() {
    find /etc /boot -xdev -type f -print0 | sort -z | xargs -0 sha256sum >"$B/hashes"
    find /etc /boot -xdev -type l -printf '%p -> %l\n' | sort >"$B/links"
}

# The values the runtime steps set, read from /proc and /sys directly.
tunables() {
    d=$B/tunables${1:+-$1}
    mkdir -p "$d"
    cat /sys/kernel/mm/transparent_hugepage/enabled >"$d/thp" 2>&1
    cat /sys/kernel/mm/ksm/run >"$d/ksm" 2>&1
    cat /sys/devices/virtual/workqueue/cpumask >"$d/workqueue" 2>&1
    for k in sched_rt_runtime_us timer_migration numa_balancing; do cat /proc/sys/kernel/$k >"$d/$k" 2>&1; done
    cat /proc/sys/vm/stat_interval >"$d/stat_interval" 2>&1
    cat /run/rmp-test-hog.cpu >"$d/hog-cpu" 2>&1
}

# until rmp-eval-qualify.service is no longer running (10 min at most, within the host's boot timeout)
wait_qualify() {
    wait_started rmp-eval-qualify.service 600
}

install_load() {
    cat >/usr/local/sbin/rmp-test-hog <<'HOG'
#!/bin/sh
# Test load: bursts of SCHED_FIFO 99 on the last CPU of the affinity this process inherited.
last=$(taskset -pc $$ | sed 's/.*: //' | tr ',-' '\n\n' | tail -n 1)
echo "$last" >/run/rmp-test-hog.cpu
exec taskset -c "$last" chrt -f 99 sh -c 'while :; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 0.3; done'
HOG
    chmod 0755 /usr/local/sbin/rmp-test-hog
    cat >/etc/systemd/system/rmp-test-hog.service <<'UNIT'
[Unit]
Description=VM test load for the qualify scenario
Before=rmp-eval-qualify.service
[Service]
ExecStart=/usr/local/sbin/rmp-test-hog
[Install]
WantedBy=multi-user.target
UNIT
    systemctl enable --now rmp-test-hog.service >"$B/hog-enable" 2>&1
}

# Kernel same-page merging running at every boot, before rmp-eval's units (as a machine whose tuning switched it
# on; this PREEMPT_RT kernel has no transparent huge pages at all): the ksm step is then planned, and it is the step
# that cannot touch the load or the RT core here (no program asks for merging, and ksmd runs off the isolated
# core), judged "no clear change".
install_ksm_on() {
    cat >/etc/systemd/system/rmp-test-ksm.service <<'UNIT'
[Unit]
Description=VM test: kernel same-page merging on
Before=rmp-eval.service rmp-eval-qualify.service
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo 1 >/sys/kernel/mm/ksm/run'
[Install]
WantedBy=multi-user.target
UNIT
    systemctl enable --now rmp-test-ksm.service >"$B/ksm-enable" 2>&1
}

case $BOOT in
1)
    install_package
    # A persistent journal: qualify's own output in every boot, read back at the end.
    mkdir -p /var/log/journal && systemctl restart systemd-journald
    install_load
    install_ksm_on
    sleep 1
    facts
    hashes
    tunables
    rec check rmp-eval check --json --core 1
    may_reboot_by_itself
    reboot_after_this_boot
    date +%s >"$B/qualify-start"
    rec qualify rmp-eval qualify --core 1 --seconds 10 --periods 1000,500 --one-at-a-time --yes
    ;;
2)
    facts
    date +%s >"$B/resumed"
    wait_qualify
    date +%s >"$B/qualify-end"
    facts after
    tunables
    journalctl -u rmp-eval-qualify.service --no-pager -o cat >"$B/qualify-journal" 2>&1
    # What else ran in this boot while qualify measured (the guest's own jobs share the host's cores).
    journalctl -b --no-pager -o short-monotonic >"$B/boot-journal" 2>&1
    systemctl list-timers --all --no-pager >"$B/timers" 2>&1
    cp $R/qualify.json "$B/state.json" 2>/dev/null
    rec status rmp-eval qualify --status
    mkdir -p "$B/qualification" "$B/results"
    cp $R/qualification/* "$B/qualification/" 2>/dev/null
    cp $R/results/*.json "$B/results/" 2>/dev/null
    ls -A /boot/grub >"$B/boot-grub"
    cat /boot/grub/grubenv >"$B/grubenv" 2>/dev/null
    rec check rmp-eval check --json --core 1
    rec rollback rmp-eval rollback --yes
    reboot_after_this_boot
    ;;
3)
    facts
    hashes
    tunables
    ls -A /boot/grub >"$B/boot-grub"
    ls -A $R >"$B/state-files"
    ;;
esac
