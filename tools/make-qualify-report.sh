#!/usr/bin/env bash
# Makes target/examples/qualify-report.html, the page of a real qualify in the PREEMPT_RT guest: the VM scenario
# 13-qualify (tests/vm/scenarios/13-qualify: the untuned guest, a trial boot of the command line, one step at a
# time under a load the command line removes), run with RMP_VM_KEEP=1, and the page qualify wrote there copied
# as it is (generated, not committed). Root, qemu and the VM image as tests/vm/run.sh needs them; RMP_VM_DEB as
# run.sh takes it.
#   tools/make-qualify-report.sh            (runs the scenario; serialize with: flock /work/vm.lock …)
#   tools/make-qualify-report.sh KEPT_DIR   (a work directory a kept run.sh left, /tmp/vm-run.XXXXXX)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-}
if [ -z "$work" ]; then
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    RMP_VM_KEEP=1 "$root/tests/vm/run.sh" 13-qualify 2>&1 | tee "$log" >&2
    grep -q '^PASS 13-qualify' "$log" || { echo "13-qualify did not pass: no page from it" >&2; exit 1; }
    work=$(sed -n 's/.*kept \(\/tmp\/vm-run\.[A-Za-z0-9]*\)$/\1/p' "$log" | tail -n 1)
fi
pages=("$work"/13-qualify/share/out/b2/qualification/*.html)
[ -f "${pages[0]}" ] && [ ${#pages[@]} -eq 1 ] || { echo "no one qualification page under $work" >&2; exit 1; }
mkdir -p "$root/target/examples"
cp "${pages[0]}" "$root/target/examples/qualify-report.html"
echo "target/examples/qualify-report.html <- ${pages[0]}"
