#!/usr/bin/env bash
# README.md's first block, run as it is written in a clean Debian 12 chroot: from a copy of this tree (what a clone
# holds) to an installed rmp-eval whose `check`, `man` and `apt purge` work. First the refusals: no Rust toolchain,
# and one older than Cargo.toml's rust-version, each one line and exit 2 before anything is installed.
# The chroot gets the machine's rustup toolchain (a user's ~/.cargo and ~/.rustup) and, to keep CI fast, cargo's
# target/ of this tree at the same path (so the release build is incremental); everything else comes from apt.
#   tests/package/from-clone.sh WORKDIR       (root; tests/package/run.sh calls it)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(realpath -m "$1")
CACHE=${RMP_EVAL_PKG_CACHE:-/var/cache/rmp-eval-test}
mkdir -p "$WORK"
# shellcheck source=tests/package/chroot.sh
. "$ROOT/tests/package/chroot.sh"
trap cleanup_work EXIT
fail() { echo "FAIL (from-clone): $*" >&2; exit 1; }
step() { echo "-- $*"; }
version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)

# The block after the marker line in README.md: it must be the first code block of the README.
block() { awk '/<!-- from-clone: tests\/package\/from-clone.sh -->/ { on = 1; next } on && /^```sh/ { inside = 1; next }
    inside && /^```/ { exit } inside { print }' "$1"; }
block "$ROOT/README.md" >"$WORK/block"
[ -s "$WORK/block" ] || fail "README.md has no block after the from-clone marker"
first=$(awk '/^```sh/ { inside = 1; next } inside && /^```/ { exit } inside { print }' "$ROOT/README.md")
[ "$first" = "$(cat "$WORK/block")" ] || fail "the from-clone block is not README.md's first code block"

make_chroot
# The machine's name resolution and apt's settings for reaching its mirror (a user's machine has its own).
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
grep -l '^Acquire::' /etc/apt/apt.conf.d/* 2>/dev/null | xargs -r cp -t "$CHROOT/etc/apt/apt.conf.d/"
src="$CHROOT$ROOT"
mkdir -p "$src"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$src" -xf -
mkdir -p "$src/target" "$ROOT/target" "$CACHE/apt-archives"
bind_mount_at() { mkdir -p "$CHROOT$2" && mount --bind "$1" "$CHROOT$2" && MOUNTS+=("$CHROOT$2"); }
bind_mount_at "$ROOT/target" "$ROOT/target"
bind_mount_at "$CACHE/apt-archives" /var/cache/apt/archives
bind_mount /proc
cargo_home=${CARGO_HOME:-$HOME/.cargo} rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
[ -x "$cargo_home/bin/cargo" ] || fail "no rustup toolchain in $cargo_home (tests/install-deps.sh)"
in_user() { # the user's shell in the clone: PATH as a login shell has it, with rustup's bin first when $1 says so
    local path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    [ "$1" = with-rust ] && path="/root/.cargo/bin:$path"
    [ "$1" = old-rust ] && path="/opt/old-rust:$path"
    shift
    chroot "$CHROOT" /usr/bin/env -i PATH="$path" HOME=/root LC_ALL=C.UTF-8 TERM=dumb \
        CARGO_HOME=/root/.cargo RUSTUP_HOME=/root/.rustup sh -c "cd '$ROOT' && $*"
}

step "no Rust toolchain: one line, exit 2, nothing installed"
set +e
in_user no-rust "$(cat "$WORK/block")" >"$WORK/norust.log" 2>&1
rc=$?
set -e
[ $rc = 2 ] || { cat "$WORK/norust.log"; fail "without Rust the block exited $rc, not 2"; }
[ "$(wc -l <"$WORK/norust.log")" = 1 ] && grep -q "rustup" "$WORK/norust.log" ||
    fail "without Rust it said: $(cat "$WORK/norust.log")"
step "a Rust older than rust-version: one line naming both versions, exit 2"
mkdir -p "$CHROOT/opt/old-rust"
printf '#!/bin/sh\necho "rustc 1.63.0"\n' >"$CHROOT/opt/old-rust/rustc"
printf '#!/bin/sh\necho "cargo 1.65.0"\n' >"$CHROOT/opt/old-rust/cargo"
chmod 755 "$CHROOT/opt/old-rust/rustc" "$CHROOT/opt/old-rust/cargo"
set +e
in_user old-rust "$(cat "$WORK/block")" >"$WORK/oldrust.log" 2>&1
rc=$?
set -e
want=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")
[ $rc = 2 ] && [ "$(wc -l <"$WORK/oldrust.log")" = 1 ] && grep -q "1.63.0 is older than $want" "$WORK/oldrust.log" ||
    { cat "$WORK/oldrust.log"; fail "with rustc 1.63 the block exited $rc"; }
in_chroot dpkg-query -W clang >/dev/null 2>&1 && fail "a refused run installed clang"

step "README.md's first block, as written, with rustup's toolchain (mounted from this machine)"
bind_mount_at "$cargo_home" /root/.cargo
bind_mount_at "$rustup_home" /root/.rustup
in_user with-rust "$(cat "$WORK/block")" </dev/null >"$WORK/install.log" 2>&1 ||
    { tail -40 "$WORK/install.log"; fail "README.md's first block failed"; }
[ "$(tail -n1 "$WORK/install.log")" = "Next: sudo rmp-eval check" ] ||
    fail "its output does not end with the next command: $(tail -n3 "$WORK/install.log")"
[ "$(in_chroot rmp-eval --version)" = "rmp-eval $version" ] || fail "rmp-eval is not installed"
in_chroot dpkg-query -W -f='${Status}' rmp-eval | grep -q 'install ok installed' || fail "dpkg does not know rmp-eval"
in_chroot man -w rmp-eval >/dev/null || fail "man rmp-eval"
bind_mount /sys
set +e
in_chroot rmp-eval check >"$WORK/check.log" 2>&1
rc=$?
set -e
case $rc in 0 | 1 | 4 | 5) ;; *) cat "$WORK/check.log"; fail "rmp-eval check exited $rc" ;; esac
grep -q '^Summary: ' "$WORK/check.log" || fail "check printed no summary"
in_chroot apt-get purge -y -qq rmp-eval >"$WORK/purge.log" 2>&1 || { cat "$WORK/purge.log"; fail "apt purge"; }
[ ! -e "$CHROOT/usr/sbin/rmp-eval" ] || fail "purge left the binary"
echo "from a clone: refused without Rust and with rustc 1.63, then built, installed ($version), checked (exit $rc), purged"
