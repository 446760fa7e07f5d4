# A 5 s cyclic run on the RT core: the result must be complete (latencies under TCG are not judged).
. "$HOOK/common.sh"
install_package
facts
rec run rmp-eval run --core 1 --duration 5 --json
ls /var/lib/rmp-eval/results >"$B/results" 2>&1
