# run --trace on the RT kernel with CPU 1 in nohz_full: boot 1 puts isolcpus/nohz_full/rcu_nocbs on the command
# line (fix --only cmdline), boot 2 runs twice — on the quiet core (tick truth), and with a SCHED_FIFO 90 shell
# spinning on it (the trace must name it) — and records what the judge compares them with.
. "$HOOK/common.sh"
case $BOOT in
1)
    install_package
    facts
    rec fix rmp-eval fix --core 1 --only cmdline --yes --no-measure
    reboot_after_this_boot
    ;;
2)
    facts
    grep tracefs /proc/mounts >"$B/mounts-before"
    cp /proc/interrupts "$B/interrupts-before"
    rec quiet rmp-eval run --core 1 --duration 5 --trace --json
    cp /proc/interrupts "$B/interrupts-after"
    grep tracefs /proc/mounts >"$B/mounts-after"
    # A FIFO 90 shell on CPU 1: 0.3 s of busy loop (by the clock: a count of iterations took 1.5–5 s under TCG
    # on a loaded host, and the run's last wakeup waits for the burst), then a 0.1 s sleep, over and over.
    chrt -f 90 taskset -c 1 bash -c 'while :; do s=${EPOCHREALTIME/./}; while ((${EPOCHREALTIME/./} - s < 300000)); do :; done; sleep 0.1; done' &
    spinner=$!
    echo "$spinner" >"$B/spinner.pid"
    # --break-us: the windows of every cycle later than 10 ms are kept (the worst 20), so the spinner's are judged
    # even when a host stall under TCG is the run's worst cycle.
    rec spun rmp-eval run --core 1 --duration 5 --trace --break-us 10000 --json
    kill "$spinner"
    ls /var/lib/rmp-eval/results >"$B/results" 2>&1
    mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
    cat /sys/kernel/tracing/available_tracers >"$B/available_tracers" 2>&1
    ;;
esac
