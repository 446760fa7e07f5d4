#!/usr/bin/env bash
# contrib/ansible against two targets that are real machines to Ansible: two Debian bookworm chroots (Debian's
# ansible, connection community.general.chroot). --check first (nothing may change), then for real (package
# installed from the .deb, check, fix of sysctl + irq_affinity, a 1 s measurement, results fetched), then again:
# the second play must report changed=0 on both. rmp-eval works on a fixture tree inside each chroot (rmp_eval_root,
# i.e. --root): a chroot shares the host's kernel, so fix must never tune the machine running the test.
#   tests/package/ansible.sh RMP-EVAL.deb      (root; the package suite runs it with the package it built)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${RMP_EVAL_PKG_CACHE:-/var/cache/rmp-eval-test}
DEB=$(realpath "${1:?usage: tests/package/ansible.sh RMP-EVAL.deb}")
[ "$(id -u)" = 0 ] || { echo "tests/package/ansible.sh: needs root (chroot)" >&2; exit 2; }
command -v ansible-playbook >/dev/null || { echo "FAIL: no ansible-playbook (Debian's ansible: tests/install-deps.sh)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/pk-ansible.XXXXXX)
trap 'rm -rf --one-file-system "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
T0=$SECONDS

# A bookworm minbase with python3 and python3-apt (what Ansible's modules need on a target), kept as a tarball
# for a week; debootstrap's packages are shared with the package suite's cache.
tarball="$CACHE/bookworm-minbase-python3-apt.tar"
mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Created-By: Packages' 2>/dev/null |
    awk '$2 == "bookworm" && $3 == "main" { print $1; exit }')
mkdir -p "$CACHE/debootstrap"
if [ -z "$(find "$tarball" -mtime -7 2>/dev/null)" ]; then
    debootstrap --cache-dir="$CACHE/debootstrap" --variant=minbase --include=python3,python3-apt bookworm \
        "$WORK/base" "${mirror:-http://deb.debian.org/debian/}" >"$WORK/debootstrap.log" 2>&1 ||
        { tail -20 "$WORK/debootstrap.log"; fail "debootstrap"; }
    tar -C "$WORK/base" -cf "$tarball.new" . && mv "$tarball.new" "$tarball"
    rm -rf --one-file-system "$WORK/base"
fi
for t in t1 t2; do
    mkdir -p "$WORK/$t/srv/fixture"
    tar -C "$WORK/$t" -xf "$tarball"
    tar -C "$WORK/$t/srv/fixture" -xzf "$ROOT/tests/fixtures/debian12-rt-qemu-untuned.tar.gz"
    # No repository needed: the package comes from the controller.
    : >"$WORK/$t/etc/apt/sources.list"
done
echo "two chroot targets ready ($((SECONDS - T0)) s)"

cat >"$WORK/inventory" <<INV
[rmp_eval]
t1 ansible_connection=community.general.chroot ansible_host=$WORK/t1
t2 ansible_connection=community.general.chroot ansible_host=$WORK/t2

[rmp_eval:vars]
ansible_python_interpreter=/usr/bin/python3
rmp_eval_deb=$DEB
rmp_eval_root=/srv/fixture
rmp_eval_core=1
rmp_eval_fix_steps=sysctl,irq_affinity
rmp_eval_measure_seconds=1
INV
# The controller draws the fleet's overlay with the same package's binary.
dpkg-deb -x "$DEB" "$WORK/ctl"
play() {
    PATH="$WORK/ctl/usr/sbin:$PATH" ANSIBLE_NOCOLOR=1 ANSIBLE_HOST_KEY_CHECKING=0 ANSIBLE_RETRY_FILES_ENABLED=0 \
        ansible-playbook -i "$WORK/inventory" -e "rmp_eval_fetch_dir=$WORK/fetched" \
        "$ROOT/contrib/ansible/playbook.yml" "$@" >"$WORK/play.log" 2>&1 ||
        { tail -40 "$WORK/play.log"; fail "ansible-playbook $*"; }
}
# "t1 : ok=12 changed=3 unreachable=0 failed=0 …" → the changed count of a host.
changed() { awk -v h="$1" '$1 == h && $2 == ":" { for (i = 3; i <= NF; i++) if ($i ~ /^changed=/) { sub("changed=", "", $i); print $i } }' "$WORK/play.log"; }

play --check
for t in t1 t2; do
    [ ! -e "$WORK/$t/usr/sbin/rmp-eval" ] || fail "--check installed the package on $t"
done
echo "--check: nothing changed ($((SECONDS - T0)) s)"

play
for t in t1 t2; do
    [ "$(changed "$t")" -gt 0 ] || fail "the first play changed nothing on $t"
    [ -x "$WORK/$t/usr/sbin/rmp-eval" ] || fail "rmp-eval not installed on $t"
    grep -q '^kernel.sched_rt_runtime_us = -1$' "$WORK/$t/srv/fixture/etc/sysctl.d/99-rmp-eval.conf" ||
        fail "fix did not write the sysctl file in $t's tree"
    [ "$(cat "$WORK/$t/srv/fixture/proc/irq/27/smp_affinity_list")" = 0 ] || fail "IRQ 27 not moved in $t's tree"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["series"][0]["count"] > 0, r' \
        "$WORK/fetched/$t/run.json" || fail "no measurement fetched from $t"
done
[ -s "$WORK/fetched/fleet.html" ] || fail "no fleet overlay (rmp-eval report) on the controller"
echo "first play: installed, fixed, measured, fetched, overlay drawn ($((SECONDS - T0)) s)"

play
for t in t1 t2; do
    [ "$(changed "$t")" = 0 ] || { grep -B3 'changed:' "$WORK/play.log" | head -30; fail "the second play changed $t"; }
done
echo "second play: changed=0 on both ($((SECONDS - T0)) s)"
echo "== ansible: passed in $((SECONDS - T0)) s"
