# SMIs raised on purpose, counted by run: a helper pinned to the RT CPU writes one byte to I/O port 0xB2 (the APM
# control port; qemu's pc machine raises an SMI on the writing CPU for each write, handled by SeaBIOS in SMM) a
# known number of times while `run` measures. First an unchanged run with nothing injected (the firmware's own SMI
# count, and the worst cycle must not be blamed on it when there are none), then the injected run, then
# `run --hwlat` with the tracer's settings recorded before and after.
. "$HOOK/common.sh"
install_package
facts
lsmod_msr() { [ -d /sys/module/msr ] && echo loaded || echo absent; }
lsmod_msr >"$B/msr-before"
rec idle rmp-eval run --core 1 --duration 10 --json
# Bursts of 20 writes (one dd each: one byte of /dev/zero at offset 0xB2 of /dev/port), 10 bursts 0.5 s apart,
# from a script of their own pinned to CPU 1 (guest.sh runs under sh: no functions handed to another shell).
cat >/tmp/inject.sh <<'INJECT'
# Start when the run says it measures: its RT thread (rmp-eval-rt) exists only once the whole setup is done, the
# SMI counters' first reading included; a fixed sleep raced a slow setup on a loaded host.
i=0
until grep -qsx rmp-eval-rt /proc/[0-9]*/task/*/comm; do
    i=$((i + 1))
    [ "$i" -lt 1200 ] || break
    sleep 0.05
done
n=0
for burst in 1 2 3 4 5 6 7 8 9 10; do
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        dd if=/dev/zero of=/dev/port bs=1 seek=178 count=1 conv=notrunc status=none && n=$((n + 1))
    done
    sleep 0.5
done
echo "$n" >"$1/injected"
INJECT
taskset -c 1 sh /tmp/inject.sh "$B" 2>"$B/inject.err" &
injector=$!
# Under TCG each SMI takes tens of ms in the firmware: the 200 took up to ~20 s, so a 20 s run could end before the
# last one. The run lasts twice that.
rec smi rmp-eval run --core 1 --duration 40 --json
wait "$injector"
lsmod_msr >"$B/msr-after"
# The hwlat tracer: its settings as found, the run, and the settings after.
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
T=/sys/kernel/tracing
settings() {
    for f in current_tracer tracing_thresh tracing_cpumask tracing_on hwlat_detector/width hwlat_detector/window \
        hwlat_detector/mode; do
        printf '%s=' "$f"; cat "$T/$f" 2>/dev/null || echo "<missing>"
    done
}
cat "$T/available_tracers" >"$B/available_tracers" 2>&1
settings >"$B/hwlat-settings-before"
rec hwlat rmp-eval run --hwlat --core 1 --duration 10 --json
settings >"$B/hwlat-settings-after"
ls /var/lib/rmp-eval/results >"$B/results" 2>&1
