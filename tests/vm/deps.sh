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

# The architectures asked for (run.sh passes RMP_VM_ARCH): arm64 needs qemu-system-aarch64, the UEFI firmware, a FAT
# tool for the EFI partition, and qemu-user through binfmt_misc so that debootstrap can run arm64 package scripts.
archs=${1:-amd64}
qemu_pkgs=()
case " $archs " in *" amd64 "*) command -v qemu-system-x86_64 >/dev/null || qemu_pkgs+=(qemu-system-x86) ;; esac
case " $archs " in *" arm64 "*)
    command -v qemu-system-aarch64 >/dev/null || qemu_pkgs+=(qemu-system-arm)
    [ -f "$EFI_FIRMWARE" ] || qemu_pkgs+=(qemu-efi-aarch64)
    if ! command -v mkfs.vfat >/dev/null || ! command -v update-binfmts >/dev/null || [ ! -x /usr/bin/qemu-aarch64-static ]; then
        log "installing dosfstools, binfmt-support, qemu-user-static"
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends dosfstools binfmt-support \
            qemu-user-static >/dev/null
    fi
    if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
        mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
        log "registering qemu-aarch64 with binfmt_misc (update-binfmts --enable qemu-aarch64)"
        update-binfmts --enable qemu-aarch64
    fi
    ;;
esac

if [ ${#qemu_pkgs[@]} -gt 0 ]; then
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
    log "installing ${qemu_pkgs[*]} from bookworm-backports ($mirror)"
    apt-get -o DPkg::Lock::Timeout=600 "${opts[@]}" update -qq
    apt-get -o DPkg::Lock::Timeout=600 "${opts[@]}" install -y -qq --no-install-recommends -t bookworm-backports \
        "${qemu_pkgs[@]}" qemu-utils >/dev/null
fi
case " $archs " in *" amd64 "*) qemu-system-x86_64 --version | head -1 >&2 ;; esac
case " $archs " in *" arm64 "*) qemu-system-aarch64 --version | head -1 >&2 ;; esac
