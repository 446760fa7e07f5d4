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
for suite in tests/package/run.sh tests/vm/run.sh; do
    if [ -x "$suite" ]; then
        echo "== $suite"
        "$suite"
    fi
done
