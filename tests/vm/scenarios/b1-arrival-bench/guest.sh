# Benchmark (not in CI): arrival jitter at reflect's SubDevice (its DC latch) against the sender's wakeup jitter,
# through qemu's igb in the PREEMPT_RT guest: AF_PACKET and AF_XDP, each without and with --txq 0, alternating,
# ROUNDS rounds of 5 s runs. bench/arrival_vs_wakeup.py --results reads the records.
. "$HOOK/common.sh"
first_nic_up
nic=$NIC
install_package
for round in 1 2 3; do
    for cfg in af_packet af_packet-txq0 af_xdp af_xdp-txq0; do
        extra=""
        case $cfg in
        af_packet-txq0) extra="--txq 0" ;;
        af_xdp) extra="--path af_xdp" ;;
        af_xdp-txq0) extra="--path af_xdp --txq 0" ;;
        esac
        # shellcheck disable=SC2086
        rec "bench-$cfg-$round.json" rmp-eval run --nic "$nic" --core 1 --duration 5 --json $extra
    done
done
