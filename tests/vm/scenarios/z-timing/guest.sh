. "$HOOK/common.sh"
cat /proc/uptime > $OUT/uptime-start
systemd-analyze > $OUT/analyze 2>&1
systemd-analyze blame > $OUT/blame 2>&1
systemd-analyze critical-chain > $OUT/chain 2>&1
dmesg > $OUT/dmesg
ls -la /boot > $OUT/boot-ls
lsmod > $OUT/lsmod
cat /proc/uptime > $OUT/uptime-end
