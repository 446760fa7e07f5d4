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
cp /proc/interrupts "$B/interrupts-before"
rec traced rmp-eval run --nic "$nic" --duration 3 --trace --json
cp /proc/interrupts "$B/interrupts-after"
cp /var/lib/rmp-eval/results/*.trace.txt "$B/" 2>/dev/null || true
