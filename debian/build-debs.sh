#!/usr/bin/env bash
# Builds the Debian packages: rmp-eval_<version>_amd64.deb natively and rmp-eval_<version>_arm64.deb cross-compiled.
#   debian/build-debs.sh [OUTDIR]        (default OUTDIR: target/debian; prints the paths of the .deb files)
#   ARCHS="arm64" debian/build-debs.sh   (only some architectures)
# Needs what tests/install-deps.sh installs: debhelper, gcc-aarch64-linux-gnu, the rustup target
# aarch64-unknown-linux-gnu, and libc6:arm64 + libgcc-s1:arm64 (multiarch) so that dpkg-shlibdeps can compute the
# arm64 package's Depends.
# dpkg-buildpackage writes its results next to the source tree, so the tree's files (tracked and not ignored) are
# copied into target/debian-build/ and built there; CARGO_TARGET_DIR points at this tree's target/ so that cargo
# stays incremental across runs. -d: the build uses the Rust toolchain on PATH (rustup), which dpkg does not see;
# on a machine with Debian's cargo-web instead, plain `dpkg-buildpackage -us -uc -b` checks Build-Depends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/target/debian}")
archs=${ARCHS:-amd64 arm64}
build_arch=$(dpkg --print-architecture)
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)

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
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$src" -xf -
else # an unpacked source tree without git
    tar -C "$root" --exclude=./target --exclude=./.git -cf - . | tar -C "$src" -xf -
fi

# tests/package/lifecycle.sh builds a changed copy of the tree with the same CARGO_TARGET_DIR (only the crate recompiles).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
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
