#!/usr/bin/env bash
# Optional, not in tests/run-all.sh (a full release build, ~8 min here): builds the amd64 package in a clean bookworm
# chroot with Debian's own Rust toolchain (cargo-web/rustc-web 1.96 from bookworm-security) and plain
# `dpkg-buildpackage -us -uc -b`, i.e. with Build-Depends checked (no -d), from `git archive HEAD`; then lints it.
# Shows that debian/control's Build-Depends are satisfiable and sufficient. Needs root and crates.io.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${RMP_EVAL_PKG_CACHE:-/var/cache/rmp-eval-test}
WORK=$(mktemp -d /tmp/pk-toolchain.XXXXXX)
# shellcheck source=tests/package/chroot.sh
. "$ROOT/tests/package/chroot.sh"
trap cleanup_work EXIT
trap 'exit 130' INT TERM

make_chroot
mirror=$(host_mirror)
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$mirror" "$mirror" "${mirror%/debian/}/debian-security/" >"$CHROOT/etc/apt/sources.list"
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
in_chroot apt-get update -qq
in_chroot apt-get install -y -qq --no-install-recommends debhelper cargo-web rustc-web build-essential clang \
    ca-certificates >"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; exit 1; }
# The host's CA bundle: a network that inspects TLS has its own CA, which cargo must trust to reach crates.io.
cp /etc/ssl/certs/ca-certificates.crt "$CHROOT/etc/ssl/certs/ca-certificates.crt"
in_chroot cargo --version
mkdir -p "$CHROOT/build"
git -C "$ROOT" archive --prefix=rmp-eval/ HEAD | tar -C "$CHROOT/build" -xf -
bind_mount /proc
start=$SECONDS
in_chroot sh -c 'cd /build/rmp-eval && dpkg-buildpackage -us -uc -b' >"$WORK/build.log" 2>&1 ||
    { tail -30 "$WORK/build.log"; exit 1; }
unmount_all
echo "dpkg-buildpackage with Debian's toolchain, Build-Depends checked: $((SECONDS - start)) s"
deb=$(ls "$CHROOT"/build/rmp-eval_*_amd64.deb)
lintian -EvIL +pedantic --fail-on error,warning "$deb"
dpkg-deb -f "$deb" Package Version Depends
