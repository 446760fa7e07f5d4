#!/usr/bin/env bash
# From a fresh clone to a working rmp-eval, in one command (README.md's first block):
#   ./install.sh               installs the build's Debian packages, builds the .deb for this machine's architecture
#                              and installs it with apt (man pages, completions, `apt purge rmp-eval` removes it)
#   ./install.sh --no-install  builds the binary only and runs `check` straight from target/release
# Run it as yourself or as root: the apt steps use sudo where you are not root. It needs a Rust toolchain of at least
# the version Cargo.toml's rust-version says (rustup's stable; Debian 12's own rustc is too old) and refuses with one
# line otherwise. Never run it with `sudo ./install.sh`: sudo's PATH does not have your rustup toolchain.
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "install.sh: $*" >&2; exit 2; }
say() { echo "== $*"; }

install=1
case "${1:-}" in
    "") ;;
    --no-install) install=0 ;;
    -h | --help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (use --no-install, or nothing)" ;;
esac
[ $# -le 1 ] || die "one argument at most (--no-install)"

[ -r /etc/debian_version ] && command -v apt-get >/dev/null ||
    die "this builds a Debian package: it needs Debian 12 or newer, or Ubuntu 22.04 or newer (apt-get)"

if [ "$(id -u)" = 0 ]; then
    as_root() { "$@"; }
elif command -v sudo >/dev/null; then
    as_root() { sudo "$@"; }
else
    die "the apt steps need root: run it as root, or install sudo"
fi

# The toolchain: the oldest rustc Cargo.toml accepts, compared field by field (1.88 < 1.100).
want=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
get_rust="install Rust $want or newer with rustup (https://rustup.rs: curl --proto '=https' -sSf https://sh.rustup.rs | sh), then open a new shell"
command -v cargo >/dev/null && command -v rustc >/dev/null || die "no Rust toolchain on PATH: $get_rust"
have=$(rustc --version | awk '{ print $2 }')
older() { # is version $1 older than $2 (major.minor[.patch], numerically)?
    local IFS=.
    # shellcheck disable=SC2206  # split on dots on purpose
    local a=($1) b=($2) i
    for i in 0 1 2; do
        [ "${a[i]:-0}" -lt "${b[i]:-0}" ] && return 0
        [ "${a[i]:-0}" -gt "${b[i]:-0}" ] && return 1
    done
    return 1
}
[[ $have =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || die "cannot read rustc's version from '$(rustc --version)': $get_rust"
! older "$have" "$want" || die "rustc $have is older than $want, which rmp-eval needs: $get_rust"

# What the build needs from Debian (debian/control's Build-Depends without the Rust toolchain, which rustup gives).
needs=(clang gcc libc6-dev)
[ $install = 1 ] && needs+=(debhelper dpkg-dev fakeroot python3)
missing=()
for p in "${needs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing what the build needs: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ $install = 0 ]; then
    say "building target/release/rmp-eval (cargo build --release --locked)"
    cargo build --release --locked
    say "rmp-eval check, straight from the build"
    rc=0
    as_root target/release/rmp-eval check || rc=$?
    echo
    echo "Next: read what failed above, then try a measurement:  sudo target/release/rmp-eval run --duration 60"
    # check's own exit status says what it found (README.md, "Exit status"); anything but 2 means the build works.
    [ $rc != 2 ] || exit 2
    exit 0
fi

arch=$(dpkg --print-architecture)
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
deb="target/debian/rmp-eval_${version}_$arch.deb"
say "building $deb (debian/build-debs.sh)"
ARCHS=$arch debian/build-debs.sh target/debian
say "installing it with apt"
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "./$deb"
# /usr/sbin: a root tool, not on a user's PATH (sudo's is).
installed=$(/usr/sbin/rmp-eval --version 2>/dev/null || true)
[ "$installed" = "rmp-eval $version" ] || die "apt installed $deb, but 'rmp-eval --version' says '$installed'"
echo
echo "$installed is installed (man rmp-eval; remove it with: sudo apt purge rmp-eval)."
echo "Next: sudo rmp-eval check"
