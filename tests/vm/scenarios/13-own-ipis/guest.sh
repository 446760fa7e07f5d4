# The IPIs rmp-eval itself sends the RT core it measures, against cyclictest. Boot 1: the core isolated by fix
# (the command line, and every IRQ off it but the NIC's, which the NIC run's receive path needs there). Boot 2, the
# msr driver loaded: three alternating pairs of 60 s `rmp-eval run` and `cyclictest --smi` on CPU 1 (same priority
# and period), for a cyclic run, a thread set (--profile linuxcnc against cyclictest's two threads at its periods
# and priorities) and a NIC run against the host's reflector; /proc/interrupts copied around each run (read here,
# not by the tools) and the wall time of each. The judge counts CAL, TLB and RES on CPU 1.
. "$HOOK/common.sh"
T=$HOOK/tools
case $BOOT in
1)
    install_package
    first_nic_up
    facts
    rec fix rmp-eval fix --core 1 --only cmdline,irq_affinity --nic "$NIC" --yes --no-measure
    reboot_after_this_boot
    ;;
2)
    first_nic_up
    facts
    modprobe msr
    [ -e /dev/cpu/1/msr ] && echo loaded >"$B/msr" || echo absent >"$B/msr"
    ct() { LD_LIBRARY_PATH=$T "$T/cyclictest" "$@"; }
    SECS=60 PAIRS=3 TRACE=0 KINDS="cyclic threads nic"
    . "$T/knobs"
    cp "$T/knobs" "$B/knobs"
    wants() { case " $KINDS " in *" $1 "*) return 0 ;; esac; return 1; }
    # TRACE=1: each smp_call_function_many_cond whose mask has CPU 1 and each generic_exec_single to CPU 1, with
    # the sender and its kernel stack, from a tracefs instance of the scenario's own.
    tracing() {
        [ "$TRACE" = 1 ] || return 0
        mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
        K=/sys/kernel/tracing
        case $1 in
        on)
            echo 'p:ownipis/many smp_call_function_many_cond mask=+0(%di):x64 func=%si:symbol' >>$K/kprobe_events
            echo 'p:ownipis/single generic_exec_single cpu=%di:s32 func=%si:symbol' >>$K/kprobe_events
            mkdir -p $K/instances/ownipis
            echo 'mask & 2' >$K/instances/ownipis/events/ownipis/many/filter
            echo 'cpu == 1' >$K/instances/ownipis/events/ownipis/single/filter
            for e in many single; do
                echo stacktrace >$K/instances/ownipis/events/ownipis/$e/trigger
                echo 1 >$K/instances/ownipis/events/ownipis/$e/enable
            done
            ;;
        off)
            cat $K/instances/ownipis/trace >"$B/$2.trace"
            for e in many single; do
                echo 0 >$K/instances/ownipis/events/ownipis/$e/enable
                echo '!stacktrace' >$K/instances/ownipis/events/ownipis/$e/trigger
            done
            rmdir $K/instances/ownipis
            echo '-:ownipis/many' >>$K/kprobe_events
            echo '-:ownipis/single' >>$K/kprobe_events
            ;;
        esac
    }
    # --smi where cyclictest can count them here (it refuses CPUs it does not know): recorded for the judge.
    if ct -q -m -a 1 -t 1 -p 42 -i 1000 -D 1 --smi >"$B/smi-probe" 2>&1; then SMI=--smi; else SMI=""; fi
    echo "${SMI:-none}" >"$B/cyclictest-smi"
    # one KIND I CMD...: a run between two copies of /proc/interrupts and two clock readings.
    one() {
        kind=$1 i=$2
        shift 2
        tracing on
        cp /proc/interrupts "$B/$kind-$i.before"
        date +%s.%N >"$B/$kind-$i.t0"
        rec "$kind-$i" "$@"
        date +%s.%N >"$B/$kind-$i.t1"
        cp /proc/interrupts "$B/$kind-$i.after"
        tracing off "$kind-$i"
    }
    if wants cyclic; then
        for i in $(seq "$PAIRS"); do
            one cyclic-rmp "$i" rmp-eval run --core 1 --duration "$SECS" --json
            one cyclic-ct "$i" ct -q -m -a 1 -t 1 -p 42 -i 1000 -D "$SECS" $SMI
        done
    fi
    # latency-test's two threads: base 25 µs at FIFO 98, servo 1 ms at 97 (cyclictest --priospread: thread N at -p minus N,
    # interval -i plus N times -d).
    if wants threads; then
        for i in $(seq "$PAIRS"); do
            one threads-rmp "$i" rmp-eval run --core 1 --profile linuxcnc --duration "$SECS" --json
            one threads-ct "$i" ct -q -m -a 1 -t 2 -p 98 --priospread -i 25 -d 975 -D "$SECS" $SMI
        done
    fi
    if wants nic; then
        for i in $(seq "$PAIRS"); do
            one nic-rmp "$i" rmp-eval run --nic "$NIC" --core 1 --duration "$SECS" --json
            one nic-ct "$i" ct -q -m -a 1 -t 1 -p 42 -i 1000 -D "$SECS" $SMI
        done
    fi
    ;;
esac
