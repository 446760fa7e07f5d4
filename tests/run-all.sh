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
# The VM suite installs the package the package suite built and checked, instead of building it a second time.
debs=$(mktemp -d /tmp/run-all-debs.XXXXXX)
trap 'rm -rf "$debs"' EXIT
echo "== tests/package/run.sh"
RMP_EVAL_PKG_KEEP=$debs tests/package/run.sh
echo "== tests/vm/run.sh"
deb=$(find "$debs" -name 'rmp-eval_*_amd64.deb')
[ -n "$deb" ] || { echo "tests/run-all.sh: the package suite left no amd64 package" >&2; exit 1; }
RMP_VM_DEB=$deb tests/vm/run.sh
