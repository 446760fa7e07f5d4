#!/usr/bin/env bash
# Builds the Debian packages: rmp-eval_<version>_amd64.deb natively and rmp-eval_<version>_arm64.deb cross-compiled.
#   debian/build-debs.sh [OUTDIR]        (default OUTDIR: target/debian; prints the paths of the .deb files)
#   ARCHS="arm64" debian/build-debs.sh   (only some architectures)
# Needs what tests/install-deps.sh installs: debhelper, gcc-aarch64-linux-gnu, the rustup target
# aarch64-unknown-linux-gnu, and libc6:arm64 + libgcc-s1:arm64 (multiarch) so that dpkg-shlibdeps can compute the
# arm64 package's Depends.
# dpkg-buildpackage writes its results next to the source tree, so the tree's files (tracked and not ignored) are
# copied into target/debian-build/ and built there; cargo's target dir is target/package/ (CARGO_TARGET_DIR to
# change it), kept so that cargo stays incremental across runs. The package reproduces (debian/rules). -d: the
# build uses the Rust toolchain on PATH (rustup), which dpkg does not see; on a machine with Debian's cargo-web
# instead, plain `dpkg-buildpackage -us -uc -b` checks Build-Depends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/target/debian}")
archs=${ARCHS:-amd64 arm64}
build_arch=$(dpkg --print-architecture)
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
# A git checkout of its own (a copy of the tree inside another checkout's ignored target/ is not one).
in_git() { [ "$(git -C "$root" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$root" && pwd -P)" ]; }
# Reproducible (debian/rules remaps the paths): the package's dates are the commit's, so that a build of the same
# commit anywhere gives the same bytes; outside git, debian/changelog's (dpkg's default).
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && in_git; then
    SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct)
    export SOURCE_DATE_EPOCH
fi

work="$root/target/debian-build"
mkdir -p "$root/target"
# One build at a time in this tree (the package and VM suites both build): the build directory's path is fixed,
# because cargo recompiles the crate when its source path changes.
exec 9>"$root/target/.debian-build.lock"
flock 9
src="$work/rmp-eval-$version"
rm -rf "$work"
mkdir -p "$src" "$out"
# tar keeps symlinks as links (fixtures have dangling ones) and modification times (cargo compares them).
if in_git; then
    (cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$src" -xf -
else # an unpacked source tree without git
    tar -C "$root" --exclude=./target --exclude=./.git -cf - . | tar -C "$src" -xf -
fi

# A target dir of the package builds' own, kept between runs (incremental): debian/rules passes RUSTFLAGS that remap
# the build's paths, and cargo's fingerprint covers RUSTFLAGS, so sharing target/release with a plain
# `cargo build --release` would compile every crate again each time one alternates with the other.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/package}"
for arch in $archs; do
    echo "== rmp-eval $version for $arch"
    start=$SECONDS
    if [ "$arch" = "$build_arch" ]; then
        (cd "$src" && dpkg-buildpackage -us -uc -b -d)
    else
        # The packaged binary cannot run on the build machine (tests/package/run.sh runs it under qemu).
        (cd "$src" && DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b -d -a "$arch" -Pcross,nocheck)
    fi
    cp "$work/rmp-eval_${version}_$arch.deb" "$out/"
    echo "== built $out/rmp-eval_${version}_$arch.deb in $((SECONDS - start)) s"
done
# The -dbgsym packages and .buildinfo/.changes stay in $work for whoever needs them.
ls -1 "$out"/rmp-eval_"${version}"_*.deb
