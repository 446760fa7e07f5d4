# The monitor in the PREEMPT_RT guest, driven by its timer alone (nothing here starts it): fix's runtime steps on
# the guest's virtio NIC, rmp-eval-monitor.timer enabled with a drop-in that fires it every 10 s (15 min in the
# package). Three passes: clean → drift made by hand (an IRQ put back on the RT core, the NIC down and up),
# reported and left as it is (RMP_EVAL_MONITOR_REAPPLY=no) → re-applied (=yes), values back. The guest records the
# unit's state, its journal, the textfile and /proc/irq around each pass; the host judges.
. "$HOOK/common.sh"
PROM=/var/lib/prometheus/node-exporter
SVC=rmp-eval-monitor.service
T0=$(cut -d' ' -f1 /proc/uptime)

# uptime_us: now on CLOCK_BOOTTIME, never behind systemd's monotonic timestamps (no suspend in the guest).
uptime_us() { awk '{ printf "%d", $1 * 1000000 }' /proc/uptime; }

# pass NAME: waits (at most 150 s) for a monitor pass that the timer started after this moment and that has
# finished, then records the unit's and the timer's state, the pass's journal lines, the textfile and the IRQs.
pass() {
    mark=$(uptime_us)
    d=$B/$1
    mkdir -p "$d"
    echo "$mark" >"$d/mark"
    for _ in $(seq 300); do
        systemctl show $SVC -p ExecMainStartTimestampMonotonic -p ExecMainExitTimestampMonotonic \
            -p ActiveState -p ExecMainStatus -p InvocationID >"$d/monitor-unit"
        start=$(sed -n 's/^ExecMainStartTimestampMonotonic=//p' "$d/monitor-unit")
        end=$(sed -n 's/^ExecMainExitTimestampMonotonic=//p' "$d/monitor-unit")
        state=$(sed -n 's/^ActiveState=//p' "$d/monitor-unit")
        [ "${start:-0}" -gt "$mark" ] && [ "${end:-0}" -ge "$start" ] && [ "$state" != activating ] && break
        sleep 0.5
    done
    # When the timer last fired and when this pass started, both wall-clock to the microsecond (the guest has no
    # D-Bus daemon for busctl, and systemctl prints *USecMonotonic as a time span).
    systemctl show --timestamp=us+utc rmp-eval-monitor.timer -p LastTriggerUSec >"$d/timer"
    systemctl show --timestamp=us+utc $SVC -p ExecMainStartTimestamp >>"$d/timer"
    inv=$(sed -n 's/^InvocationID=//p' "$d/monitor-unit")
    journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID="$inv" >"$d/journal" 2>&1
    cp "$PROM/rmp_eval_monitor.prom" "$d/monitor.prom" 2>/dev/null
    facts "$1"
}

install_package
first_nic_up
rec fix rmp-eval fix --core 1 --nic "$NIC" --yes --no-measure --only irq_affinity,sysctl
facts after-fix
mkdir -p "$PROM"
# A short measurement per pass (the package's 10 s is for real machines), report-only to begin with.
sed -i -e 's/^RMP_EVAL_MONITOR_RUN_SECONDS=.*/RMP_EVAL_MONITOR_RUN_SECONDS=2/' \
    -e 's/^RMP_EVAL_MONITOR_REAPPLY=.*/RMP_EVAL_MONITOR_REAPPLY=no/' /etc/default/rmp-eval
# The interval as the timer's comment says to change it (a drop-in); OnBootSec= empty clears the package's list.
mkdir -p /etc/systemd/system/rmp-eval-monitor.timer.d
printf '[Timer]\nOnBootSec=\nOnActiveSec=1s\nOnUnitActiveSec=10s\nRandomizedDelaySec=0\nAccuracySec=1s\n' \
    >/etc/systemd/system/rmp-eval-monitor.timer.d/interval.conf
systemctl daemon-reload
rec enable systemctl enable --now rmp-eval-monitor.timer
pass clean

# Drift by hand: an IRQ that fix keeps off CPU 1 written onto it (as irqbalance would), the first that takes it.
for d in /proc/irq/[0-9]*; do
    [ "$(cat "$d/smp_affinity_list" 2>/dev/null)" = 0 ] || continue
    echo 1 >"$d/smp_affinity_list" 2>/dev/null || continue
    [ "$(cat "$d/smp_affinity_list")" = 1 ] && { echo "${d##*/}" >"$B/drift-irq"; break; }
done
ip link set dev "$NIC" down
ip link set dev "$NIC" up
for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ "$(cat "/sys/class/net/$NIC/carrier" 2>/dev/null)" = 1 ] && break
    sleep 1
done
cat "/sys/class/net/$NIC/operstate" >"$B/nic-operstate"
facts after-drift
pass reported

sed -i 's/^RMP_EVAL_MONITOR_REAPPLY=.*/RMP_EVAL_MONITOR_REAPPLY=yes/' /etc/default/rmp-eval
pass reapplied

systemctl disable --now rmp-eval-monitor.timer
journalctl --no-pager -o short-monotonic -u $SVC -u rmp-eval-monitor.timer >"$B/journal" 2>&1
echo "$T0 $(cut -d' ' -f1 /proc/uptime)" >"$B/span"
