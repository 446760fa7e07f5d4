#!/usr/bin/env bash
# The whole test suite, as CI runs it: lint, unit + integration tests (root tests included when root),
# then the package and VM suites when present. Run tests/install-deps.sh once first on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
# As root, a root-gated test that cannot run fails instead of skipping (tests/common/mod.rs).
if [ "$(id -u)" = 0 ]; then export RMP_EVAL_REQUIRE_ROOT="${RMP_EVAL_REQUIRE_ROOT:-1}"; fi
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets -- --test-threads=2
# The VM suite installs the packages the package suite built and checked, instead of building them again. The
# scenarios in BESIDE (many boots, judged on states, files and command lines, never on timing) run next to the
# package suite as soon as the amd64 package is there; that suite runs at nice 10 meanwhile, so that its builds take
# what the guest leaves idle (a fat-LTO build spends its longest part on one core). The others, judged on what the
# guest measured too, run after both, on a quiet machine.
BESIDE=(15-qualify-power-loss 14-qualify-failed-trial 8-cpuset 6-fix-grub-layout 9-after-boot)
debs=$(mktemp -d /tmp/run-all-debs.XXXXXX)
beside_log=$debs/beside.log
pkg_pid="" vm_pid=""
stop() { for p in $pkg_pid $vm_pid; do pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; rm -rf "$debs"; }
trap stop EXIT
echo "== tests/package/run.sh, and tests/vm/run.sh ${BESIDE[*]} beside it"
RMP_EVAL_PKG_KEEP=$debs nice -n 10 tests/package/run.sh &
pkg_pid=$!
deb=""
while [ -z "$deb" ] && kill -0 "$pkg_pid" 2>/dev/null; do
    sleep 2
    deb=$(find "$debs" -name 'rmp-eval_*_amd64.deb')
done
if [ -n "$deb" ]; then
    RMP_VM_DEB=$deb tests/vm/run.sh "${BESIDE[@]}" >"$beside_log" 2>&1 &
    vm_pid=$!
fi
pkg_rc=0 vm_rc=0
wait "$pkg_pid" || pkg_rc=$?
pkg_pid=""
if [ -n "$vm_pid" ]; then
    wait "$vm_pid" || vm_rc=$?
    vm_pid=""
    echo "== tests/vm/run.sh ${BESIDE[*]} (beside the package suite)"
    cat "$beside_log"
fi
[ "$pkg_rc" = 0 ] || { echo "tests/run-all.sh: the package suite failed" >&2; exit 1; }
deb=$(find "$debs" -name 'rmp-eval_*_amd64.deb')
[ -n "$deb" ] || { echo "tests/run-all.sh: the package suite left no amd64 package" >&2; exit 1; }
echo "== tests/vm/run.sh (the other scenarios)"
mapfile -t rest < <(RMP_VM_LIST=1 tests/vm/run.sh | awk -v b=" ${BESIDE[*]} " 'index(b, " " $1 " ") == 0 { print $1 }')
RMP_VM_DEB=$deb tests/vm/run.sh "${rest[@]}" || vm_rc=1
exit "$vm_rc"
