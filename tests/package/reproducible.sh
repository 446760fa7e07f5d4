#!/usr/bin/env bash
# Run by tests/package/run.sh: the amd64 package reproduces. DEB is the suite's own build of this tree
# (debian/build-debs.sh); this builds the same tree again, elsewhere and otherwise, and fails unless the two .deb
# files are byte for byte the same; diffoscope (tests/install-deps.sh) then names what differs.
#   tests/package/reproducible.sh DEB WORK
# The second build differs from the first in everything that must not matter: the source tree's path (another
# depth and length, so that a path debian/rules does not remap shows), cargo's target dir, the time zone, the
# locale and the umask. Its tree and target dir stay in target/reproducible/ at fixed paths, so that the next run
# recompiles only what changed (RUSTFLAGS, which name the paths, are part of cargo's fingerprint).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEB=$1
WORK=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$WORK"
other="$ROOT/target/reproducible/another/place/for/the/source"
rm -rf "$other"
mkdir -p "$other"
if [ "$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$ROOT" && pwd -P)" ]; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$other" -xf -
    # The copy is no git checkout: the date debian/build-debs.sh gives the first build (the commit's), unless the
    # caller set one for both (tests/package/run.sh does, in case a commit comes between the two builds).
    SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct)}
    export SOURCE_DATE_EPOCH
else
    tar -C "$ROOT" --exclude=./target --exclude=./.git -cf - . | tar -C "$other" -xf -
fi
echo "second build in $other (SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-from debian/changelog})"
(umask 0002 && cd "$other" && TZ=Pacific/Chatham LC_ALL=C.UTF-8 LANG=C.UTF-8 ARCHS=amd64 \
    CARGO_TARGET_DIR="$ROOT/target/reproducible/cargo" debian/build-debs.sh "$WORK/second") \
    >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; fail "the second build"; }
second="$WORK/second/$(basename "$DEB")"
if cmp -s "$DEB" "$second"; then
    echo "reproducible: the two builds of $(basename "$DEB") are identical ($(sha256sum <"$DEB" | cut -c1-16)…)"
    exit 0
fi
echo "the two builds of $(basename "$DEB") differ; diffoscope says:" >&2
diffoscope --text - --timeout 300 --max-report-size 200000 "$DEB" "$second" >&2 || true
fail "$(basename "$DEB") does not reproduce (above: diffoscope, first build against the second)"
