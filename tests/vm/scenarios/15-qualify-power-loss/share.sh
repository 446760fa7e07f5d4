#!/usr/bin/env bash
# The share gets rmp-eval built with its test seams (the state write's pause), stripped: the tests' build
# (`cargo test` turns the feature on; tests/run-all.sh has built it before the VM suite), else built here.
# The packaged binary never has a seam (debian/rules refuses one), so the guest runs this one only where the
# scenario arms a seam: rmp-eval-qualify.service through a drop-in that the scenario removes again.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
bin=${CARGO_TARGET_DIR:-$repo/target}/debug/rmp-eval
if ! grep -qa RMP_EVAL_TEST_PAUSE_STATE "$bin" 2>/dev/null; then
    (cd "$repo" && nice cargo build --quiet --features test-seams --bin rmp-eval)
fi
grep -qa RMP_EVAL_TEST_PAUSE_STATE "$bin"
strip -o "$1/rmp-eval-seams" "$bin"
