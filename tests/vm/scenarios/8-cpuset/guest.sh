# The cpuset step on the real thing (Debian 12, PREEMPT_RT 6.1, systemd 252, unified cgroup v2): fix isolates CPU 1
# now as an isolated partition; two CPU-bound processes started afterwards with no affinity never run on it
# (their processor field, sampled); run measures inside the partition; after a reboot rmp-eval.service makes it
# again; rollback removes it and the core takes tasks again; a third boot has no partition.
. "$HOOK/common.sh"
CG=/sys/fs/cgroup
P=$CG/rmp_eval_rt.slice

# cgstate NAME: the partition's files as the kernel shows them, read directly (not through rmp-eval).
cgstate() {
    d=$B/$1
    mkdir -p "$d"
    cat $P/cpuset.cpus.partition >"$d/partition" 2>/dev/null || echo "<missing>" >"$d/partition"
    cat $P/cpuset.cpus.effective >"$d/effective" 2>/dev/null || echo "<missing>" >"$d/effective"
    cat $CG/cpuset.cpus.effective >"$d/root-effective" 2>/dev/null
    cat $CG/system.slice/cpuset.cpus.effective >"$d/system-effective" 2>/dev/null
    systemctl is-active rmp-eval-rt.service >"$d/holder" 2>&1
    cat $P/cgroup.subtree_control >"$d/subtree" 2>/dev/null
    cat $CG/cpuset.cpus.isolated >"$d/isolated" 2>/dev/null || echo "<missing>" >"$d/isolated"
    # Every user-space process and the CPUs it may run on (kernel threads, empty cmdline, left out: per-CPU ones
    # stay, as with isolcpus): "PID CPULIST CMDLINE".
    for s in /proc/[0-9]*; do
        c=$(tr '\0' ' ' <"$s/cmdline" 2>/dev/null | cut -c1-60)
        [ -n "$c" ] || continue
        printf '%s %s %s\n' "${s##*/}" "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$s/status")" "$c"
    done >"$d/tasks" 2>/dev/null
}

# hogs NAME: two busy loops started now with no affinity; 40 samples of their processor field, 0.1 s apart.
hogs() {
    sh -c 'while :; do :; done' & h1=$!
    sh -c 'while :; do :; done' & h2=$!
    : >"$B/$1.cpus"
    for _ in $(seq 40); do
        echo "$(cut -d' ' -f39 /proc/$h1/stat) $(cut -d' ' -f39 /proc/$h2/stat)" >>"$B/$1.cpus"
        sleep 0.1
    done
    kill $h1 $h2
    wait $h1 $h2 2>/dev/null
}

case $BOOT in
1)
    install_package
    cgstate before
    hogs hogs-before
    rec fix rmp-eval fix --core 1 --yes --no-measure --only cpuset
    cgstate after-fix
    rec check rmp-eval check --core 1 --json
    hogs hogs-after-fix
    # run places itself in the partition (the note on stderr); its threads' CPUs, sampled while it runs.
    rmp-eval run --core 1 --duration 3 --no-config >"$B/run" 2>"$B/run.err" &
    rp=$!
    sleep 1.5
    cat /proc/$rp/cgroup >"$B/run.cgroup" 2>/dev/null
    grep Cpus_allowed_list /proc/$rp/status >"$B/run.allowed" 2>/dev/null
    wait $rp
    echo $? >"$B/run.rc"
    cat /proc/self/cgroup >"$B/after-run.cgroup"
    reboot_after_this_boot
    ;;
2)
    cgstate at-boot
    systemctl show rmp-eval.service -p ActiveState -p Result >"$B/unit" 2>&1
    hogs hogs-at-boot
    rec rollback rmp-eval rollback --yes
    cgstate after-rollback
    hogs hogs-after-rollback
    ls /etc/systemd/system >"$B/units-after-rollback"
    reboot_after_this_boot
    ;;
3)
    cgstate third
    ;;
esac
