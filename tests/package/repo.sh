#!/usr/bin/env bash
# The signed apt repository: a key generated here, debian/make-repo.sh (reprepro) with the amd64 and arm64 packages,
# served over HTTP on 127.0.0.1; a clean bookworm chroot (minbase + curl) runs docs/tasks/package.md's install
# block as it is written (REPO in the environment set to the local server; `sudo` a function: the chroot is root and
# has no sudo), and once without REPO, which must stop at its first line; apt must verify and install. Then a tampered Packages file and a tampered InRelease must be refused.
#   tests/package/repo.sh AMD64.deb ARM64.deb WORKDIR       (root; tests/package/run.sh calls it)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEB_AMD64=$1 DEB_ARM64=$2
WORK=$(realpath -m "$3")
CACHE=${RMP_EVAL_PKG_CACHE:-/var/cache/rmp-eval-test}
mkdir -p "$WORK"
# shellcheck source=tests/package/chroot.sh
. "$ROOT/tests/package/chroot.sh"
server=
stop() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    gpgconf --homedir "$WORK/gnupg" --kill all 2>/dev/null || true
    cleanup_work
}
trap stop EXIT
fail() { echo "FAIL (repo): $*" >&2; exit 1; }
step() { echo "-- $*"; }
version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)

step "a signing key made for this test, the repository made by debian/make-repo.sh"
export GNUPGHOME="$WORK/gnupg"
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key 'rmp-eval test repository <test@rmp-eval.invalid>' ed25519 sign 1d
fpr=$(gpg --batch --with-colons --list-keys | awk -F: '$1 == "fpr" { print $10; exit }')
repo="$WORK/repo"
"$ROOT/debian/make-repo.sh" "$repo" "$fpr" "$DEB_AMD64" "$DEB_ARM64" >"$WORK/make-repo.log" 2>&1 ||
    { cat "$WORK/make-repo.log"; fail "debian/make-repo.sh"; }
grep -q "bookworm|main|arm64: rmp-eval $version" "$WORK/make-repo.log" || fail "no arm64 package: $(cat "$WORK/make-repo.log")"
grep -q "bookworm|main|amd64: rmp-eval $version" "$WORK/make-repo.log" || fail "no amd64 package: $(cat "$WORK/make-repo.log")"
gpg --batch --quiet --verify "$repo/dists/bookworm/InRelease" 2>/dev/null || fail "InRelease is not signed by the key"
[ ! -e "$repo/dists/bookworm/main/binary-amd64/Packages" ] || [ -e "$repo/dists/bookworm/main/binary-amd64/Packages.xz" ] ||
    fail "no Packages.xz"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$repo" "$port" >"$WORK/http.log" 2>&1 &
server=$!
python3 - "http://127.0.0.1:$port/rmp-eval.asc" <<'EOF' || fail "the HTTP server did not come up"
import sys, time, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1).read()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
EOF

step "each package's SBOM is published beside the repository, as the package carries it, and is valid SPDX"
SPDX_VENV=${RMP_EVAL_SPDX_VENV:-/var/cache/rmp-eval-tests/spdx-venv}
for deb in "$DEB_AMD64" "$DEB_ARM64"; do
    arch=$(dpkg-deb -f "$deb" Architecture)
    python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())' \
        "http://127.0.0.1:$port/sbom/rmp-eval_${version}_$arch.spdx.json" >"$WORK/sbom-$arch.json" ||
        fail "no SBOM served for $arch"
    dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/rmp-eval/rmp-eval.spdx.json |
        cmp -s - "$WORK/sbom-$arch.json" || fail "the published $arch SBOM is not the one in the package"
    "$SPDX_VENV/bin/pyspdxtools" -i "$WORK/sbom-$arch.json" >"$WORK/spdx-$arch.log" 2>&1 ||
        { cat "$WORK/spdx-$arch.log"; fail "pyspdxtools refuses the published $arch SBOM"; }
done

step "a clean bookworm chroot adds the repository as docs/tasks/package.md says and installs rmp-eval"
# The block after the marker line in docs/tasks/package.md, run as it is written with REPO in the environment.
block() { awk '/<!-- apt-repository: tests\/package\/repo.sh -->/ { on = 1; next } on && /^```sh/ { inside = 1; next }
    inside && /^```/ { exit } inside { print }' "$1"; }
block "$ROOT/docs/tasks/package.md" >"$WORK/doc-block"
[ -s "$WORK/doc-block" ] || fail "docs/tasks/package.md has no install block after the marker"
grep -q 'REPO=https\?://[a-z]' "$WORK/doc-block" && fail "the block sets an address: the repository's address is the administrator's"
make_chroot
echo "# only the repository under test" >"$CHROOT/etc/apt/sources.list"
{
    echo 'set -e'
    echo 'sudo() { "$@"; }'
    cat "$WORK/doc-block"
} >"$CHROOT/root/install.sh"
# Without REPO: one line saying what to set, and nothing written.
if in_chroot sh /root/install.sh </dev/null >"$WORK/norepo.log" 2>&1; then fail "the block ran without REPO"; fi
grep -q "set REPO to the address" "$WORK/norepo.log" || fail "without REPO the block said: $(cat "$WORK/norepo.log")"
{ [ ! -e "$CHROOT/etc/apt/keyrings/rmp-eval.asc" ] && [ -z "$(ls "$CHROOT/etc/apt/sources.list.d/")" ]; } ||
    fail "the block without REPO changed the chroot"
in_chroot env REPO="http://127.0.0.1:$port" sh /root/install.sh </dev/null >"$WORK/install.log" 2>&1 ||
    { cat "$WORK/install.log"; fail "the documented block"; }
grep -q "cannot be authenticated\|NO_PUBKEY\|not signed" "$WORK/install.log" && { cat "$WORK/install.log"; fail "apt did not verify"; }
[ "$(in_chroot rmp-eval --version)" = "rmp-eval $version" ] || fail "rmp-eval is not installed: $(cat "$WORK/install.log")"
in_chroot apt-cache policy rmp-eval | grep -q "http://127.0.0.1:$port bookworm/main amd64 Packages" ||
    fail "apt-cache policy: $(in_chroot apt-cache policy rmp-eval)"
sources=$(ls "$CHROOT/etc/apt/sources.list.d/")
[ "$sources" = rmp-eval.sources ] || fail "sources.list.d holds '$sources', not one deb822 file"
# The arm64 package through the same signed indices (apt checks its SHA256 against them).
in_chroot dpkg --add-architecture arm64
in_chroot apt-get update -qq >"$WORK/update.log" 2>&1 || { cat "$WORK/update.log"; fail "apt-get update with arm64"; }
(cd "$CHROOT/root" && in_chroot sh -c 'cd /root && apt-get download -q rmp-eval:arm64' >"$WORK/download.log" 2>&1) ||
    { cat "$WORK/download.log"; fail "apt-get download rmp-eval:arm64"; }
cmp -s "$CHROOT/root/rmp-eval_${version}_arm64.deb" "$DEB_ARM64" || fail "the arm64 package fetched differs from the built one"

step "a tampered Packages file is refused"
rm -rf "$CHROOT/var/lib/apt/lists/"*127.0.0.1*
pk="$repo/dists/bookworm/main/binary-amd64"
cp -a "$pk" "$WORK/binary-amd64.good"
sed -i 's/^Maintainer: .*/Maintainer: someone else <evil@example.invalid>/' "$pk/Packages"
rm -f "$pk/Packages.gz" "$pk/Packages.xz"
gzip -9k "$pk/Packages" && xz -k "$pk/Packages"
set +e
in_chroot apt-get update >"$WORK/update.log" 2>&1
set -e
grep -q "Hash Sum mismatch\|unexpected size" "$WORK/update.log" || { cat "$WORK/update.log"; fail "apt took a tampered Packages"; }
grep -rq "evil@example.invalid" "$CHROOT/var/lib/apt/lists/" && fail "the tampered index reached apt's lists"
in_chroot apt-cache policy rmp-eval | grep -q "127.0.0.1" && fail "apt still offers rmp-eval from the tampered repository"

step "a tampered InRelease is refused"
rm -rf "$pk" && mv "$WORK/binary-amd64.good" "$pk"
sed -i 's/^Label: rmp-eval$/Label: rmp-evil/' "$repo/dists/bookworm/InRelease"
grep -q '^Label: rmp-evil$' "$repo/dists/bookworm/InRelease" || fail "could not tamper with InRelease"
set +e
in_chroot apt-get update >"$WORK/update.log" 2>&1
set -e
grep -q "BADSIG\|signatures were invalid\|not signed" "$WORK/update.log" || { cat "$WORK/update.log"; fail "apt took a tampered InRelease"; }
# (lists/partial/ keeps the rejected download; apt never reads it from there.)
grep -rq --exclude-dir=partial "rmp-evil" "$CHROOT/var/lib/apt/lists/" && fail "the tampered InRelease reached apt's lists"
echo "repository passed: signed by $fpr, installed as README.md says, tampered Packages and InRelease refused"
