#!/usr/bin/env bash
# Installs what the VM suite needs on the host (root, Debian 12). Idempotent; run by run.sh before anything else.
# qemu-system-x86 comes from bookworm-backports: bookworm's 7.2 conflicts with the qemu-utils 10.x from backports
# that some machine images carry. The backports source is used for this one install only, through a private apt
# configuration, so the host's own sources are left alone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
export DEBIAN_FRONTEND=noninteractive

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v sfdisk >/dev/null || need+=(fdisk)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v ip >/dev/null || need+=(iproute2)
command -v qemu-img >/dev/null || need+=(qemu-utils)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! command -v qemu-system-x86_64 >/dev/null; then
    mirror=$(host_mirror)
    apt_dir="$CACHE_DIR/apt"
    mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial"
    cat > "$apt_dir/sources/debian.sources" <<SRC
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
          -o "Dir::State::Lists=$apt_dir/lists")
    log "installing qemu-system-x86 from bookworm-backports ($mirror)"
    apt-get -o DPkg::Lock::Timeout=600 "${opts[@]}" update -qq
    apt-get -o DPkg::Lock::Timeout=600 "${opts[@]}" install -y -qq --no-install-recommends -t bookworm-backports \
        qemu-system-x86 qemu-utils >/dev/null
fi
qemu-system-x86_64 --version | head -1 >&2
