# EtherCAT round trips from the guest's virtio NIC to `rmp-eval reflect` on the host's tap (in its namespace).
. "$HOOK/common.sh"
install_package
# The tap's peer (qemu) is there from the start: the link reports carrier within seconds.
first_nic_up
nic=$NIC
facts
rec run rmp-eval run --nic "$nic" --duration 5 --json
# The receive path through a NIC with a real interrupt (a veth has none): the same run traced, and the guest's own
# count of each IRQ on each CPU around it for the host to check what the trace names.
# A guest stall under TCG can hold the receiver until it reads several replies at once: the worst reply's IRQ then
# came before its window, and no explained path can name it. Up to three runs, the judge reads the last.
for attempt in 1 2 3; do
    cp /proc/interrupts "$B/interrupts-before"
    rec traced rmp-eval run --nic "$nic" --duration 3 --trace --json
    cp /proc/interrupts "$B/interrupts-after"
    echo "$attempt" >"$B/traced-attempts"
    grep -q '"irq": {' "$B/traced" && break
done
cp /var/lib/rmp-eval/results/*.trace.txt "$B/" 2>/dev/null || true
