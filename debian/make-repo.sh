#!/usr/bin/env bash
# Builds the signed apt repository users install from (docs/guide.md, "Install and uninstall"), with
# reprepro: suite bookworm, component main, amd64 and arm64; Release and InRelease signed with KEYID.
#   debian/make-repo.sh OUTDIR KEYID PACKAGE.deb...
# OUTDIR gets dists/, pool/, rmp-eval.asc (the public key, ASCII-armoured, for the users' Signed-By) and sbom/ (each
# package's SPDX document, sbom/rmp-eval_VERSION_ARCH.spdx.json, as the package installs it); publish
# OUTDIR as it is. reprepro's own database stays in OUTDIR/.reprepro (not to be published). GNUPGHOME selects the
# keyring that holds KEYID's secret key. Idempotent: a package already in the repository is replaced.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: debian/make-repo.sh OUTDIR KEYID PACKAGE.deb..." >&2; exit 2; }
out=$(realpath -m "$1") key=$2
shift 2
base="$out/.reprepro"
mkdir -p "$base/conf"
cat >"$base/conf/distributions" <<EOF
Origin: rmp-eval
Label: rmp-eval
Codename: bookworm
Architectures: amd64 arm64
Components: main
Description: rmp-eval: check, measure and tune a Linux PC for real-time EtherCAT control
SignWith: $key
EOF
# Packages compressed as apt fetches them (.xz first), and a plain copy for people reading the repository.
echo "DebIndices: Packages Release . .gz .xz" >>"$base/conf/distributions"
for deb in "$@"; do
    reprepro --basedir "$base" --outdir "$out" --silent includedeb bookworm "$deb"
done
reprepro --basedir "$base" --outdir "$out" --silent export bookworm
mkdir -p "$out/sbom"
for deb in "$@"; do
    name=$(dpkg-deb -f "$deb" Package)_$(dpkg-deb -f "$deb" Version)_$(dpkg-deb -f "$deb" Architecture)
    dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/rmp-eval/rmp-eval.spdx.json >"$out/sbom/$name.spdx.json"
done
gpg --batch --armor --export "$key" >"$out/rmp-eval.asc.new"
[ -s "$out/rmp-eval.asc.new" ] || { echo "debian/make-repo.sh: no public key $key in the keyring" >&2; exit 1; }
mv "$out/rmp-eval.asc.new" "$out/rmp-eval.asc"
reprepro --basedir "$base" --outdir "$out" list bookworm
