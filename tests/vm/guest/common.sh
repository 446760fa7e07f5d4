# Sourced in the guest by every scenario's guest.sh (copied into the 9p share by run.sh, not part of the image).
# Everything is recorded raw under $OUT/b<boot>/ and judged on the host, so that a guest without python or jq
# still reports everything and a failing scenario leaves all evidence behind.
set -u
B=$OUT/b$BOOT
mkdir -p "$B"
export NO_COLOR=1

# rec NAME CMD...: stdout → NAME, stderr → NAME.err, exit status → NAME.rc (under this boot's directory).
rec() {
    name=$1; shift
    "$@" >"$B/$name" 2>"$B/$name.err"
    echo $? >"$B/$name.rc"
}

# fact NAME PATH: a copy of one kernel or config file into $F, or the word <missing>.
fact() {
    mkdir -p "$F/facts"
    cat "$2" >"$F/facts/$1" 2>/dev/null || echo "<missing>" >"$F/facts/$1"
}

# The state every scenario's judge may look at, read directly from /proc, /sys and /etc (not through rmp-eval),
# into this boot's directory or into a named subdirectory of it (facts after-fix).
facts() {
    F=$B${1:+/$1}
    fact cmdline /proc/cmdline
    fact realtime /sys/kernel/realtime
    fact version /proc/sys/kernel/version
    fact swaps /proc/swaps
    fact isolated /sys/devices/system/cpu/isolated
    fact nohz_full /sys/devices/system/cpu/nohz_full
    fact online /sys/devices/system/cpu/online
    fact clocksource /sys/devices/system/clocksource/clocksource0/current_clocksource
    fact sched_rt_runtime_us /proc/sys/kernel/sched_rt_runtime_us
    fact timer_migration /proc/sys/kernel/timer_migration
    fact stat_interval /proc/sys/vm/stat_interval
    fact numa_balancing /proc/sys/kernel/numa_balancing
    fact default_smp_affinity /proc/irq/default_smp_affinity
    fact interrupts /proc/interrupts
    mkdir -p "$F/irq"
    for d in /proc/irq/[0-9]*; do
        cat "$d/smp_affinity_list" >"$F/irq/${d##*/}" 2>/dev/null
    done
    # Byte copies of the boot configuration that fix may change and rollback must restore.
    mkdir -p "$F/grub"
    cp -a /etc/default/grub "$F/grub/" 2>/dev/null
    [ -d /etc/default/grub.d ] && cp -a /etc/default/grub.d "$F/grub/"
    cp -a /boot/grub/grub.cfg "$F/grub/" 2>/dev/null
    ls -A /var/lib/rmp-eval >"$F/state-files" 2>/dev/null
    ls -A /etc/sysctl.d >"$F/sysctl-files" 2>/dev/null
    systemctl show rmp-eval.service -p ActiveState -p Result -p ExecMainStatus -p ConditionResult \
        >"$F/unit" 2>&1
}

install_package() {
    rec dpkg dpkg -i "$HOOK"/pkg/*.deb
}

# Ask the hook to reboot (the host boots the same disk again, through GRUB) instead of powering off.
reboot_after_this_boot() {
    : >"$OUT/reboot$BOOT"
}

# The guest's first network interface (the tap's peer), up and with carrier (a few seconds at most); its name
# in $NIC and in $B/nic.
first_nic_up() {
    NIC=""
    # The image's initramfs holds only the disk's modules: the NIC's driver is loaded from the root by udev, which
    # may not have finished when this boot's script starts.
    udevadm settle --timeout=60 || true
    for _ in $(seq 60); do
        for n in /sys/class/net/*; do
            n=${n##*/}
            [ "$n" = lo ] || { NIC=$n; break; }
        done
        [ -n "$NIC" ] && break
        sleep 1
    done
    echo "$NIC" >"$B/nic"
    ip link set dev "$NIC" up
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        [ "$(cat "/sys/class/net/$NIC/carrier" 2>/dev/null)" = 1 ] && break
        sleep 1
    done
}

# wait_started UNIT SECONDS: until UNIT (a oneshot) is no longer starting, SECONDS at most, then its state in
# $B/UNIT-state. Past the deadline what it is doing goes to $B/UNIT-stuck first (its processes, each thread's
# kernel stack, its log, rmp-eval's files): a hang is diagnosed from the records before the host's boot timeout.
wait_started() {
    for _ in $(seq $(($2 / 2))); do
        [ "$(systemctl show "$1" -p ActiveState --value)" = activating ] || break
        sleep 2
    done
    if [ "$(systemctl show "$1" -p ActiveState --value)" = activating ]; then
        {
            echo "== still starting after $2 s"
            systemctl status --no-pager -l "$1"
            for pid in $(cat "/sys/fs/cgroup/system.slice/$1/cgroup.procs" 2>/dev/null); do
                ps -L -o pid,tid,cls,rtprio,psr,stat,wchan:32,args -p "$pid"
                for t in /proc/"$pid"/task/*; do echo "== $t" && cat "$t/stack"; done
            done
            journalctl -b -u "$1" --no-pager -o short-monotonic
            ls -lR /var/lib/rmp-eval /run/rmp-eval 2>/dev/null
            cat /var/lib/rmp-eval/qualify.json 2>/dev/null
        } >"$B/$1-stuck" 2>&1
    fi
    systemctl show "$1" -p ActiveState -p Result -p ExecMainStatus -p ConditionResult >"$B/$1-state" 2>&1
}

# The machine may reboot by itself during this boot (the program under test reboots it): the host then goes on
# with the next boot even though this boot's script did not finish.
may_reboot_by_itself() {
    : >"$OUT/self-reboot$BOOT"
}
