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
    # --smi where cyclictest can count them here (it refuses CPUs it does not know): recorded for the judge.
    if ct -q -m -a 1 -t 1 -p 42 -i 1000 -D 1 --smi >"$B/smi-probe" 2>&1; then SMI=--smi; else SMI=""; fi
    echo "${SMI:-none}" >"$B/cyclictest-smi"
    # one KIND I CMD...: a run between two copies of /proc/interrupts and two clock readings.
    one() {
        kind=$1 i=$2
        shift 2
        cp /proc/interrupts "$B/$kind-$i.before"
        date +%s.%N >"$B/$kind-$i.t0"
        rec "$kind-$i" "$@"
        date +%s.%N >"$B/$kind-$i.t1"
        cp /proc/interrupts "$B/$kind-$i.after"
    }
    for i in 1 2 3; do
        one cyclic-rmp "$i" rmp-eval run --core 1 --duration 60 --json
        one cyclic-ct "$i" ct -q -m -a 1 -t 1 -p 42 -i 1000 -D 60 $SMI
    done
    # latency-test's two threads: base 25 µs at FIFO 98, servo 1 ms at 97 (cyclictest --priospread: thread N at -p minus N,
    # interval -i plus N times -d).
    for i in 1 2 3; do
        one threads-rmp "$i" rmp-eval run --core 1 --profile linuxcnc --duration 60 --json
        one threads-ct "$i" ct -q -m -a 1 -t 2 -p 98 --priospread -i 25 -d 975 -D 60 $SMI
    done
    for i in 1 2 3; do
        one nic-rmp "$i" rmp-eval run --nic "$NIC" --core 1 --duration 60 --json
        one nic-ct "$i" ct -q -m -a 1 -t 1 -p 42 -i 1000 -D 60 $SMI
    done
    ;;
esac
