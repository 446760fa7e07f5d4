# EtherCAT round trips from the guest's virtio NIC to `rmp-eval reflect` on the host's tap (in its namespace).
. "$HOOK/common.sh"
install_package
nic=""
for n in /sys/class/net/*; do
    n=${n##*/}
    [ "$n" = lo ] || { nic=$n; break; }
done
echo "$nic" >"$B/nic"
ip link set dev "$nic" up
# The tap's peer (qemu) is there from the start; give the link a few seconds to report carrier.
for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ "$(cat "/sys/class/net/$nic/carrier" 2>/dev/null)" = 1 ] && break
    sleep 1
done
facts
rec run rmp-eval run --nic "$nic" --duration 5 --json
# The receive path through a NIC with a real interrupt (a veth has none): the same run traced, and the guest's own
# count of each IRQ on each CPU around it for the host to check what the trace names.
cp /proc/interrupts "$B/interrupts-before"
rec traced rmp-eval run --nic "$nic" --duration 3 --trace --json
cp /proc/interrupts "$B/interrupts-after"
cp /var/lib/rmp-eval/results/*.trace.txt "$B/" 2>/dev/null || true
