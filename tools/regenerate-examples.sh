#!/usr/bin/env bash
# Rewrites every marked example in README.md and docs/ from the binary built from this tree (tests/docs/examples.rs
# says how a block is marked). As root: the live examples measure this machine and the manual ones create veth
# pairs, a netns and a bridge, and apply and roll back a fix here. Without root only the fixture examples.
set -euo pipefail
cd "$(dirname "$0")/.."
RMP_EVAL_BLESS=1 cargo test -q --test it docs::examples -- --test-threads=1
git --no-pager diff --stat -- README.md docs
