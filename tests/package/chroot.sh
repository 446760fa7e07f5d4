# Sourced by tests/package/run.sh: a clean Debian bookworm chroot made with debootstrap, with mounts that are
# always undone. Expects $WORK (a pk- temporary directory) and $CACHE.

CHROOT="$WORK/chroot"
MOUNTS=()

# The Debian mirror this machine already uses for bookworm main (one-line or deb822 sources alike).
host_mirror() {
    local uri
    uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Created-By: Packages' 2>/dev/null |
        awk '$2 == "bookworm" && $3 == "main" { print $1; exit }')
    echo "${uri:-http://deb.debian.org/debian/}"
}

# A fresh chroot in $CHROOT. debootstrap keeps the .debs in $CACHE/debootstrap (no download after the first run);
# its result is also kept as a tarball for a week, because unpacking and configuring ~100 packages costs ~2 min
# on this machine where extracting the tarball costs seconds. RMP_EVAL_PKG_FRESH=1 forces a new debootstrap.
make_chroot() {
    local mirror tarball args
    mirror=$(host_mirror)
    args="--variant=minbase --include=man-db bookworm"
    tarball="$CACHE/bookworm-minbase-man-db.tar"
    mkdir -p "$CACHE/debootstrap"
    if [ "${RMP_EVAL_PKG_FRESH:-0}" = 1 ] || [ -z "$(find "$tarball" -mtime -7 2>/dev/null)" ]; then
        echo "debootstrap $args from $mirror (packages cached in $CACHE/debootstrap)"
        # shellcheck disable=SC2086  # $args is a list of words
        debootstrap --cache-dir="$CACHE/debootstrap" $args "$CHROOT" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
            { tail -20 "$WORK/debootstrap.log"; return 1; }
        tar -C "$CHROOT" -cf "$tarball.new" . && mv "$tarball.new" "$tarball"
    else
        echo "chroot from $tarball (made by debootstrap $args on $(date -r "$tarball" +%F))"
        mkdir -p "$CHROOT"
        tar -C "$CHROOT" -xf "$tarball"
    fi
}

in_chroot() {
    chroot "$CHROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

bind_mount() {
    mount --bind "$1" "$CHROOT$1"
    MOUNTS+=("$CHROOT$1")
}

unmount_all() {
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || true
    done
    MOUNTS=()
}

# Removes $WORK, but never while anything is still mounted under it (rm would walk into the host's /proc, /sys).
cleanup_work() {
    unmount_all
    if findmnt -rn -o TARGET | grep -q "^$WORK/"; then
        echo "still mounted under $WORK; left it in place" >&2
        return 1
    fi
    rm -rf --one-file-system "$WORK"
}

# Every path in the chroot with its type, mode and, for files, checksum; without the logs and caches that apt and
# dpkg rewrite on every run (their own bookkeeping, not the package's files).
snapshot() {
    (cd "$CHROOT" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run -o -path ./tmp \
        -o -path ./var/log -o -path ./var/cache/apt -o -path ./var/cache/man -o -path ./var/lib/apt/lists \
        -o -name '*-old' \) -prune -o -printf '%p %y %m %l\n' | LC_ALL=C sort) >"$1.list"
    (cd "$CHROOT" && find ./etc ./usr ./var/lib ./root -xdev -type f ! -name '*-old' ! -path './var/lib/apt/lists/*' \
        -print0 | LC_ALL=C sort -z | xargs -0 md5sum) >"$1.md5"
}
