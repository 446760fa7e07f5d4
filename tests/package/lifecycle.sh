#!/usr/bin/env bash
# The package over a machine's life: install N, fix, upgrade to N+1, re-apply at "boot", downgrade, upgrade again,
# roll back; remove and purge with fix applied. The machine is a clean bookworm chroot holding the captured Debian 12
# RT guest's /proc, /sys, /boot and /etc/default (tests/fixtures/debian12-rt-qemu-untuned.tar.gz): `rmp-eval` runs
# inside it (its / is the machine, no --root; in an empty network namespace so that no ethtool call reaches this
# host's NICs) and writes that tree. The chroot has no GRUB: a stand-in update-grub writes the kernel command line
# grub-mkconfig would give the normal entries (/etc/default/grub, then the drop-ins) to /boot/grub/cmdline.
# A "reboot" puts the fixture's /proc and /sys back (the kernel's defaults) and boots with /boot/grub/cmdline.
# N is the tree's package; N+1 is built from a copy of the tree with a changelog entry, a changed GRUB drop-in
# and journal version 3, which it writes and N cannot read (as a later version that changed the format would be).
#   tests/package/lifecycle.sh N_amd64.deb WORKDIR        (root; tests/package/run.sh calls it)
#   tests/package/lifecycle.sh --build-next OUTDIR         builds N+1 only (run.sh does it beside its other phases,
#                                                          then gives it to the first form as RMP_EVAL_LIFECYCLE_NEXT)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${RMP_EVAL_PKG_CACHE:-/var/cache/rmp-eval-test}
UNTUNED="$ROOT/tests/fixtures/debian12-rt-qemu-untuned.tar.gz"
if [ "${1:-}" = --build-next ]; then DEB_N="" WORK=$(realpath -m "$2/work"); else DEB_N=$1 WORK=$(realpath -m "$2"); fi
mkdir -p "$WORK"
# shellcheck source=tests/package/chroot.sh
. "$ROOT/tests/package/chroot.sh"
trap cleanup_work EXIT
fail() { echo "FAIL (lifecycle): $*" >&2; exit 1; }
step() { echo "-- $*"; }
apt_chroot() { in_chroot apt-get -y -q "$@" </dev/null >"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; fail "apt-get $*"; }; }
# rmp-eval on the machine: no network devices (unshare), output in $WORK/out and $WORK/err, exit status in $rc.
rmp() {
    set +e
    unshare --net chroot "$CHROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
        rmp-eval "$@" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    set -e
}
rmp_ok() { rmp "$@"; [ "$rc" = 0 ] || { cat "$WORK/out" "$WORK/err"; fail "rmp-eval $* exited $rc"; }; }

# The machine as fix and rollback may change it: every path under /etc, /boot, /proc, /sys and /var/lib/rmp-eval
# with its type, mode and owner, and every file's checksum; without what apt and dpkg rewrite (/etc/apt, ld.so.cache,
# the unit's enablement links under /etc/systemd), the journal's directory (fix's lock, it stays), the package's own conffiles and dpkg's copies beside them (compared on their own), the results (the
# user's), /proc/cmdline (the running kernel's) and grub.cfg's stand-in /boot/grub (compared on its own).
machine_state() {
    local prune=(\( -path ./etc/apt -o -path ./etc/ld.so.cache -o -path ./etc/systemd -o -name '*-old'
        -o -path './etc/default/grub.d/99-rmp-eval.cfg*' -o -path ./etc/default/rmp-eval -o -path ./var/lib/rmp-eval/results -o -path ./proc/cmdline
        -o -path ./boot/grub \) -prune)
    (cd "$CHROOT" && {
        find ./etc ./boot ./proc ./sys ./var/lib/rmp-eval -xdev "${prune[@]}" -o -printf '%p %y %m %U %G\n'
        find ./etc ./boot ./proc ./sys ./var/lib/rmp-eval -xdev "${prune[@]}" -o -type f -print0 |
            xargs -0 md5sum | awk '{ print $2, "md5", $1 }'
    } | grep -v '^./var/lib/rmp-eval/journal d ' | LC_ALL=C sort) >"$1"
}
# The paths whose line differs between two machine states.
changed() { { diff "$1" "$2" || true; } | sed -n 's/^[<>] \([^ ]*\) .*/\1/p' | LC_ALL=C sort -u; }
reboot() {
    rm -rf "$CHROOT/proc" "$CHROOT/sys"
    tar -C "$CHROOT" -xzf "$UNTUNED" ./proc ./sys
    echo "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-rt-amd64 $(cat "$CHROOT/boot/grub/cmdline")" >"$CHROOT/proc/cmdline"
}
grub_line() { cat "$CHROOT/boot/grub/cmdline"; }
# "id status" of each check in check --json's output.
statuses() { python3 -c 'import json, sys
for c in json.load(sys.stdin)["checks"]:
    print(c["id"], c["status"])'; }
drop_in=/etc/default/grub.d/99-rmp-eval.cfg

# --- N+1 -------------------------------------------------------------------------------------------------------
version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
next="$version+lifetest1"
# build_next OUTDIR: N+1's package in OUTDIR.
build_next() {
mkdir -p "$1"
step "build N+1 = $next (changelog entry, changed drop-in, journal version 3)"
# At the path and with the cargo target dir of reproducible.sh's second build (run.sh runs it first): debian/rules
# names the source tree in RUSTFLAGS (to remap it), which cargo's fingerprint covers, so that there only this crate
# compiles again; at a new path every crate would.
src="$ROOT/target/reproducible/another/place/for/the/source"
rm -rf "$src"
mkdir -p "$src"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$src" -xf -
else
    tar -C "$ROOT" --exclude=./target --exclude=./.git -cf - . | tar -C "$src" -xf -
fi
python3 - "$src" "$version" "$next" <<'EOF'
import sys, re
src, old, new = sys.argv[1:]
def edit(path, pattern, repl):
    text = open(f"{src}/{path}").read()
    out, n = re.subn(pattern, repl, text, count=1, flags=re.M)
    assert n == 1, f"{path}: no match for {pattern}"
    open(f"{src}/{path}", "w").write(out)
edit("Cargo.toml", rf'^version = "{re.escape(old)}"', f'version = "{new}"')
edit("Cargo.lock", rf'^name = "rmp-eval"\nversion = "{re.escape(old)}"', f'name = "rmp-eval"\nversion = "{new}"')
edit("src/fix/journal.rs", r"^(pub(?:\(crate\))? const VERSION: u32 = )2;", r"\g<1>3;")
edit("src/fix/journal.rs", r"^const READS: \[u32; 2\] = \[1, 2\];", "const READS: [u32; 3] = [1, 2, 3];")
edit("kernel-cmdline/99-rmp-eval.cfg", r"\Z", f"# {new}: a line added by tests/package/lifecycle.sh, so that N+1's drop-in differs from N's\n")
EOF
{
    printf 'rmp-eval (%s) bookworm; urgency=medium\n\n' "$next"
    printf '  * Built by tests/package/lifecycle.sh: journal version 3, a changed GRUB drop-in.\n\n'
    printf ' -- rmp-eval maintainers <rmp-eval@example.invalid>  %s\n\n' "$(date -R)"
    cat "$src/debian/changelog"
} >"$WORK/changelog" && mv "$WORK/changelog" "$src/debian/changelog"
CARGO_TARGET_DIR="$ROOT/target/reproducible/cargo" ARCHS=amd64 "$src/debian/build-debs.sh" "$1" >"$1/build.log" 2>&1 ||
    { tail -30 "$1/build.log"; fail "build of N+1"; }
[ -f "$1/rmp-eval_${next}_amd64.deb" ] || fail "no $1/rmp-eval_${next}_amd64.deb"
}
if [ -z "$DEB_N" ]; then
    build_next "$(realpath -m "$2")"
    exit 0
fi
if [ -n "${RMP_EVAL_LIFECYCLE_NEXT:-}" ]; then
    mkdir -p "$WORK/debs" && cp "$RMP_EVAL_LIFECYCLE_NEXT" "$WORK/debs/"
else
    build_next "$WORK/debs"
fi
DEB_NEXT="$WORK/debs/rmp-eval_${next}_amd64.deb"
[ -f "$DEB_NEXT" ] || fail "no $DEB_NEXT"

# --- the machine -----------------------------------------------------------------------------------------------
step "chroot with the captured RT guest's /proc, /sys, /boot, /etc/default; N and N+1 in a local repository"
make_chroot
tar -C "$CHROOT" -xzf "$UNTUNED" ./proc ./sys ./boot ./etc/default
cat >"$CHROOT/usr/sbin/update-grub" <<'EOF'
#!/bin/sh
# Stand-in for update-grub (tests/package/lifecycle.sh): the command line of grub.cfg's normal entries.
set -e
. /etc/default/grub
for f in /etc/default/grub.d/*.cfg; do
    if [ -e "$f" ]; then . "$f"; fi
done
mkdir -p /boot/grub
echo $GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT >/boot/grub/cmdline
echo called >>/root/update-grub.calls
EOF
chmod 755 "$CHROOT/usr/sbin/update-grub"
mkdir -p "$CHROOT/srv/repo"
cp "$DEB_N" "$DEB_NEXT" "$CHROOT/srv/repo/"
(cd "$CHROOT/srv/repo" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null && apt-ftparchive release . >Release)
echo "deb [trusted=yes] file:/srv/repo ./" >"$CHROOT/etc/apt/sources.list"
in_chroot apt-get update -qq
in_chroot update-grub
grub0=$(grub_line)
[ "$grub0" = "console=ttyS0,115200" ] || fail "the captured GRUB configuration gives '$grub0'"
dpkg-deb --fsys-tarfile "$DEB_N" | tar -xOf - ".$drop_in" >"$WORK/dropin.N"
dpkg-deb --fsys-tarfile "$DEB_NEXT" | tar -xOf - ".$drop_in" >"$WORK/dropin.next"
! cmp -s "$WORK/dropin.N" "$WORK/dropin.next" || fail "N+1's drop-in is the same as N's"

step "install N ($version), fix --core 1 with N"
apt_chroot install "rmp-eval=$version"
machine_state "$WORK/start"
fix_args=(fix --core 1 --nic enp0s2 --only cmdline,workqueue,irq_affinity --yes --no-measure)
rmp_ok "${fix_args[@]}"
grub_line | grep -qw 'isolcpus=managed_irq,domain,1' || fail "after fix, GRUB gives '$(grub_line)'"
machine_state "$WORK/fixed"
changed "$WORK/start" "$WORK/fixed" >"$WORK/fix-changed"
grep -qx ./sys/devices/virtual/workqueue/cpumask "$WORK/fix-changed" || fail "fix did not change the workqueue mask"
grep -q '^./proc/irq/' "$WORK/fix-changed" || fail "fix did not change IRQ affinity"
rmp check --core 1 --nic enp0s2 --json
statuses <"$WORK/out" >"$WORK/check.N"
grep -qx 'workqueue pass' "$WORK/check.N" || fail "N's check after fix: $(cat "$WORK/check.N")"

step "upgrade to N+1 with a locally modified drop-in: dpkg asks; keeping the local one"
echo "# a local note" >>"$CHROOT$drop_in"
cp "$CHROOT$drop_in" "$WORK/dropin.local"
calls=$(wc -l <"$CHROOT/root/update-grub.calls")
echo N | in_chroot apt-get -y -q install "rmp-eval=$next" >"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; fail "upgrade"; }
grep -q "Configuration file '$drop_in'" "$WORK/apt.log" || { cat "$WORK/apt.log"; fail "no conffile prompt"; }
grep -q 'Modified (by you or by a script) since installation' "$WORK/apt.log" || fail "the prompt does not say it was modified"
cmp -s "$CHROOT$drop_in" "$WORK/dropin.local" || fail "the local drop-in was overwritten"
cmp -s "$CHROOT$drop_in.dpkg-dist" "$WORK/dropin.next" || fail "N+1's drop-in is not beside it as .dpkg-dist"
# The user takes N+1's drop-in after all: now unmodified as dpkg recorded it (and as N+1's fix expects it).
mv "$CHROOT$drop_in.dpkg-dist" "$CHROOT$drop_in"
rmp_ok --version
[ "$(cat "$WORK/out")" = "rmp-eval $next" ] || fail "after the upgrade: $(cat "$WORK/out")"
[ "$(wc -l <"$CHROOT/root/update-grub.calls")" = $((calls + 1)) ] || fail "the upgrade did not run update-grub once"
grub_line | grep -qw 'isolcpus=managed_irq,domain,1' || fail "after the upgrade, GRUB gives '$(grub_line)'"
machine_state "$WORK/upgraded"
diff -u "$WORK/fixed" "$WORK/upgraded" || fail "the upgrade changed the machine or fix's state (above)"

step "N+1 reads N's state: check, rollback preview, the boot unit and the udev rule re-apply"
rmp check --core 1 --nic enp0s2 --json
statuses <"$WORK/out" >"$WORK/check.next"
diff -u "$WORK/check.N" "$WORK/check.next" || fail "N+1's check differs from N's on the same machine"
rmp_ok rollback --dry-run --json
python3 - "$WORK/out" <<'EOF' || fail "N+1's rollback preview of N's journal"
import json, sys
doc = json.load(open(sys.argv[1]))
runs = doc["runs"]
assert [r["journal"] for r in runs] == ["/var/lib/rmp-eval/journal/000001.json"], runs
assert runs[0]["steps"] == ["cmdline", "workqueue", "irq_affinity", "persist"], runs[0]["steps"]
EOF
unit=$(sed -n 's/^ExecStart=//p' "$CHROOT/lib/systemd/system/rmp-eval.service")
cond=$(sed -n 's/^ConditionPathExists=//p' "$CHROOT/lib/systemd/system/rmp-eval.service")
[ -s "$CHROOT$cond" ] || fail "the unit's condition $cond does not hold after fix"
reboot
machine_state "$WORK/rebooted"
changed "$WORK/fixed" "$WORK/rebooted" | grep '^./proc/irq/' >/dev/null || fail "the reboot did not reset the IRQs"
# shellcheck disable=SC2086  # the unit's ExecStart is a command line of words
rmp_ok ${unit#/usr/sbin/rmp-eval }
machine_state "$WORK/unit"
[ -z "$(changed "$WORK/fixed" "$WORK/unit")" ] || fail "after the unit ran, differs from fixed: $(changed "$WORK/fixed" "$WORK/unit")"
grep -q "isolcpus=managed_irq,domain,1" "$CHROOT/proc/cmdline" || fail "booted without the parameters"
# The rule starts rmp-eval-nic@IF.service; its command, under --root, applies once (--follow needs the live links).
wants=$(sed -n 's/.*ENV{SYSTEMD_WANTS}+="\([^"]*\)".*/\1/p' "$CHROOT/lib/udev/rules.d/99-rmp-eval.rules")
[ "$wants" = 'rmp-eval-nic@$name.service' ] || fail "the udev rule starts '$wants'"
rule=$(sed -n 's/^ExecStart=//p' "$CHROOT/lib/systemd/system/rmp-eval-nic@.service")
reboot
rule=${rule//%i/enp0s2}
# shellcheck disable=SC2086
rmp_ok ${rule#/usr/sbin/rmp-eval }
machine_state "$WORK/udev"
changed "$WORK/fixed" "$WORK/udev" >"$WORK/udev-changed"
# The NIC unit applies the NIC's settings only (its own IRQs, RPS, coalescing): every other IRQ and the workqueue
# mask stay as booted, for the boot unit below. This NIC (virtio0 on a shared INTx line) has no IRQ of its own.
changed "$WORK/fixed" "$WORK/rebooted" | grep '^./proc/irq/' >"$WORK/irq-booted" || true
grep '^./proc/irq/' "$WORK/udev-changed" >"$WORK/irq-udev" || true
[ -s "$WORK/irq-booted" ] && cmp -s "$WORK/irq-booted" "$WORK/irq-udev" ||
    fail "the NIC unit moved IRQs that are not the NIC's: $(diff "$WORK/irq-booted" "$WORK/irq-udev")"
grep -qx ./sys/devices/virtual/workqueue/cpumask "$WORK/udev-changed" || fail "the NIC unit applied more than the NIC's"
# shellcheck disable=SC2086
rmp_ok ${unit#/usr/sbin/rmp-eval }

step "N+1's own fix (journal version 3), then downgrade to N: N names what it cannot read and changes nothing"
rmp_ok fix --core 1 --only sysctl --yes --no-measure
grep -q '"version": 3' "$CHROOT/var/lib/rmp-eval/journal/000002.json" || fail "N+1 did not write version 3"
apt_chroot install --allow-downgrades "rmp-eval=$version"
grep -q "Configuration file" "$WORK/apt.log" && fail "dpkg asked about an unmodified conffile"
cmp -s "$CHROOT$drop_in" "$WORK/dropin.N" || fail "the downgrade did not put N's drop-in in place"
[ -z "$(ls "$CHROOT/etc/default/grub.d/" | grep dpkg)" ] || fail "dpkg left $(ls "$CHROOT/etc/default/grub.d/")"
machine_state "$WORK/downgraded"
rmp rollback --yes
[ "$rc" = 2 ] || fail "N's rollback of a version 3 journal exited $rc"
grep -q "^rmp-eval: /var/lib/rmp-eval/journal/000002.json: not a journal rmp-eval can read (version 3;" "$WORK/err" ||
    fail "N's rollback said: $(cat "$WORK/err")"
grep -q "nothing was changed" "$WORK/err" || fail "N's rollback does not say it changed nothing"
machine_state "$WORK/refused"
diff -u "$WORK/downgraded" "$WORK/refused" || fail "N's refused rollback changed the machine"
reboot
# shellcheck disable=SC2086
rmp_ok ${unit#/usr/sbin/rmp-eval }
machine_state "$WORK/down-boot"
changed "$WORK/fixed" "$WORK/down-boot" | grep '^./proc/irq/' >/dev/null && fail "N's boot unit did not re-apply the saved IRQs"
rmp check --core 1 --json
case $rc in 0 | 1 | 4 | 5) ;; *) fail "N's check after the downgrade exited $rc: $(cat "$WORK/err")" ;; esac

step "upgrade to N+1 again (no question: the drop-in is unmodified), rollback restores the machine byte for byte"
apt_chroot install "rmp-eval=$next"
grep -q "Configuration file" "$WORK/apt.log" && fail "dpkg asked about an unmodified conffile"
cmp -s "$CHROOT$drop_in" "$WORK/dropin.next" || fail "the upgrade did not put N+1's drop-in in place"
rmp_ok rollback --yes
machine_state "$WORK/rolled-back"
diff -u "$WORK/start" "$WORK/rolled-back" || fail "rollback with N+1 did not restore the machine (above: - start, + now)"
[ "$(grub_line)" = "$grub0" ] || fail "after rollback, GRUB gives '$(grub_line)'"

step "apt remove with fix applied: it keeps working, the message says how to undo; reinstall and rollback"
rmp_ok "${fix_args[@]}"
rmp_ok fix --core 1 --only sysctl --yes --no-measure
machine_state "$WORK/fixed2"
apt_chroot remove rmp-eval
grep -q "reinstall rmp-eval and run 'rmp-eval rollback'" "$WORK/apt.log" || { cat "$WORK/apt.log"; fail "remove did not say how to undo"; }
[ ! -e "$CHROOT/usr/sbin/rmp-eval" ] || fail "remove left the binary"
grub_line | grep -qw 'isolcpus=managed_irq,domain,1' || fail "after remove, GRUB gives '$(grub_line)'"
in_chroot update-grub # as a kernel upgrade would: the drop-in still applies the saved parameters
grub_line | grep -qw 'isolcpus=managed_irq,domain,1' || fail "after remove, update-grub gives '$(grub_line)'"
machine_state "$WORK/removed"
diff -u "$WORK/fixed2" "$WORK/removed" || fail "remove changed what fix had done"
apt_chroot install "rmp-eval=$next"
rmp_ok rollback --yes
machine_state "$WORK/rolled-back2"
diff -u "$WORK/start" "$WORK/rolled-back2" || fail "reinstall + rollback did not restore the machine"

step "apt purge with fix applied: the next boot goes without fix's parameters, the results stay"
rmp_ok "${fix_args[@]}"
rmp_ok fix --core 1 --only sysctl --yes --no-measure
mkdir -p "$CHROOT/var/lib/rmp-eval/results"
rmp run --core 1 --duration 1 --no-config # a real 1 s measurement on this host's CPU 1; 0 or 1 by its verdict, 3 when too short to judge
case $rc in 0 | 1 | 3) ;; *) { cat "$WORK/err"; fail "rmp-eval run exited $rc"; } ;; esac
ls "$CHROOT/var/lib/rmp-eval/results/"*.json >/dev/null || fail "run saved no result"
cp -a "$CHROOT/var/lib/rmp-eval/results" "$WORK/results"
apt_chroot purge rmp-eval
grep -q "your measurement results are kept in /var/lib/rmp-eval/results (1 files)" "$WORK/apt.log" ||
    { cat "$WORK/apt.log"; fail "purge did not say where the results are"; }
diff -r "$WORK/results" "$CHROOT/var/lib/rmp-eval/results" || fail "purge changed the results"
[ "$(ls -A "$CHROOT/var/lib/rmp-eval")" = results ] || fail "purge left $(ls -A "$CHROOT/var/lib/rmp-eval")"
[ "$(grub_line)" = "$grub0" ] || fail "after purge, the next boot's command line is '$(grub_line)'"
reboot
machine_state "$WORK/purged"
diff -u "$WORK/start" "$WORK/purged" || fail "after purge and a reboot, the machine differs from before install"
echo "lifecycle passed: upgrade, downgrade, conffile prompt, remove and purge with fix applied"
