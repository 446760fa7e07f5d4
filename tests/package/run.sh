#!/usr/bin/env bash
# The package suite (root): builds the amd64 and arm64 .deb, lints both, installs the amd64 one with apt from a local
# repository into a clean bookworm chroot, uses it, removes and purges it and shows nothing of it remains; the signed
# repository (repo.sh); README.md's first command from a clone (from-clone.sh); upgrade, downgrade, remove and purge with fix applied (lifecycle.sh); runs the arm64 binary
# under qemu on the Raspberry Pi 4 fixture and compares its verdicts with the amd64 binary's; builds the amd64 package
# again elsewhere and compares the two byte for byte (reproducible.sh), beside the other phases.
# RMP_EVAL_PKG_KEEP=DIR: the two built packages are copied there. Caches (kept between runs): cargo's target/, debootstrap's packages in $CACHE. Prints the time of each phase.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${RMP_EVAL_PKG_CACHE:-/var/cache/rmp-eval-test}
FIXTURE=${RMP_EVAL_ARM64_FIXTURE:-$ROOT/tests/fixtures/rpi4-arm64}
[ "$(id -u)" = 0 ] || { echo "tests/package/run.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/pk-pkgtest.XXXXXX)
# shellcheck source=tests/package/chroot.sh
. "$ROOT/tests/package/chroot.sh"
trap cleanup_work EXIT
trap 'exit 130' INT TERM

T0=$SECONDS
phase_name=
# Starts a phase; prints how long the previous one took.
phase() {
    [ -z "$phase_name" ] || echo "   ($phase_name: $((SECONDS - phase_start)) s)"
    phase_name=$1 phase_start=$SECONDS
    [ -z "$1" ] || echo "== $1"
}
fail() { echo "FAIL: $*" >&2; exit 1; }
py() { python3 -c "$@"; }
# apt-get in the chroot, its output in a log shown only on failure (apt also complains there is no /dev/pts).
apt_chroot() { in_chroot apt-get -y -qq "$@" >"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; fail "apt-get $*"; }; }

version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
# One date for every build of this run (debian/build-debs.sh takes the commit's), so that reproducible.sh's
# second build has the first one's even if a commit comes in between.
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && [ "$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$ROOT" && pwd -P)" ]; then
    SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct)
    export SOURCE_DATE_EPOCH
fi
phase "build rmp-eval $version for amd64 (debian/build-debs.sh)"
ARCHS=amd64 "$ROOT/debian/build-debs.sh" "$WORK/debs" >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; fail "build"; }
grep '^== built' "$WORK/build.log"
DEB_AMD64="$WORK/debs/rmp-eval_${version}_amd64.deb"
DEB_ARM64="$WORK/debs/rmp-eval_${version}_arm64.deb"
# tests/run-all.sh hands the packages to the VM suite, which would otherwise build them again; the amd64 one at
# once (a VM scenario runs beside this suite), whole or not at all.
keep() { [ -z "${RMP_EVAL_PKG_KEEP:-}" ] || { cp "$1" "$RMP_EVAL_PKG_KEEP/.$(basename "$1")" &&
    mv "$RMP_EVAL_PKG_KEEP/.$(basename "$1")" "$RMP_EVAL_PKG_KEEP/$(basename "$1")"; }; }
keep "$DEB_AMD64"

# The reproducible build and N+1 (lifecycle.sh) compile in target/reproducible/, beside the arm64 build and the
# phases below: a release build with fat LTO runs its last, longest part on one core, so that two of them side by
# side take little more than one. Their output is shown, and their verdict taken, before the lifecycle phase.
BG_LOG="$WORK/background.log"
(
    t=$SECONDS
    echo "== reproducible: the amd64 package built again elsewhere is the same (tests/package/reproducible.sh)"
    "$ROOT/tests/package/reproducible.sh" "$DEB_AMD64" "$WORK/reproducible" || exit 1
    echo "   (reproducible: $((SECONDS - t)) s, beside the phases above)"
    t=$SECONDS
    "$ROOT/tests/package/lifecycle.sh" --build-next "$WORK/next" || exit 1
    echo "   (N+1 for the lifecycle: $((SECONDS - t)) s, beside the phases above)"
) >"$BG_LOG" 2>&1 &
BG_PID=$!
# A failed or interrupted suite stops the builds too (cargo and rustc under the subshell), before removing $WORK.
kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2>/dev/null || true; }
trap '[ -z "${BG_PID:-}" ] || kill_tree "$BG_PID"; cleanup_work' EXIT
phase "build rmp-eval $version for arm64 (debian/build-debs.sh), beside the reproducible build"
ARCHS=arm64 "$ROOT/debian/build-debs.sh" "$WORK/debs" >"$WORK/build-arm64.log" 2>&1 || { tail -40 "$WORK/build-arm64.log"; fail "build"; }
grep '^== built' "$WORK/build-arm64.log"
[ "$(dpkg-deb -f "$DEB_ARM64" Architecture)" = arm64 ] || fail "the arm64 package is not Architecture: arm64"
keep "$DEB_ARM64"
phase "lintian on both packages"

# No error and no warning; every override carries a comment saying why.
lintian -EvIL +pedantic --fail-on error,warning "$DEB_AMD64" "$DEB_ARM64" || fail "lintian"
awk '/^[^#[:space:]]/ && prev !~ /^#/ { print FILENAME ": override without a comment: " $0; bad = 1 }
     { prev = $0 } END { exit bad }' "$ROOT"/debian/*.lintian-overrides || fail "lintian override without a reason"
phase "the crates' notices, X-Cargo-Built-Using and the SBOM (pyspdxtools) of both packages"

SPDX_VENV=${RMP_EVAL_SPDX_VENV:-/var/cache/rmp-eval-tests/spdx-venv}
for deb in "$DEB_AMD64" "$DEB_ARM64"; do
    arch=$(dpkg-deb -f "$deb" Architecture)
    d="$WORK/notices-$arch"
    mkdir -p "$d"
    dpkg-deb -x "$deb" "$d"
    doc="$d/usr/share/doc/rmp-eval"
    [ -s "$doc/THIRD-PARTY" ] || fail "$arch: no /usr/share/doc/rmp-eval/THIRD-PARTY"
    zcat -f "$doc/copyright" | grep -q /usr/share/doc/rmp-eval/THIRD-PARTY || fail "$arch: copyright does not point to THIRD-PARTY"
    built=$(dpkg-deb -f "$deb" X-Cargo-Built-Using)
    [ -n "$built" ] || fail "$arch: no X-Cargo-Built-Using"
    "$SPDX_VENV/bin/pyspdxtools" -i "$doc/rmp-eval.spdx.json" >"$WORK/spdx.log" 2>&1 ||
        { cat "$WORK/spdx.log"; fail "$arch: pyspdxtools refuses the SBOM"; }
    # The three lists agree, every crate has a licence text in THIRD-PARTY, and each SBOM checksum is Cargo.lock's.
    py '
import json, re, sys, tomllib
arch, built, doc, lock = sys.argv[1:]
want = set(re.findall(r"([A-Za-z0-9_-]+) \(= ([^)]+)\)", built))
sbom = json.load(open(doc + "/rmp-eval.spdx.json"))
crates = {(p["name"], p["versionInfo"]): p for p in sbom["packages"] if p["name"] != "rmp-eval"}
tp = open(doc + "/THIRD-PARTY").read()
sums = {(p["name"], p["version"]): p.get("checksum") for p in tomllib.load(open(lock, "rb"))["package"]}
bad = [f"{n} {v}" for n, v in want if f"\n{n} {v}: " not in tp or not re.search(rf"[ ,]{re.escape(n)} {re.escape(v)} \(", tp)]
bad += [f"{k} checksum" for k, p in crates.items() if p["checksums"][0]["checksumValue"] != sums.get(k)]
if set(crates) != want or bad or len(want) < 20:
    sys.exit(f"{arch}: X-Cargo-Built-Using, SBOM and THIRD-PARTY disagree: {sorted(want ^ set(crates))} {bad}")
print(f"{arch}: {len(want)} crates, each in THIRD-PARTY with its texts and in the SBOM with the sha256 of Cargo.lock")
' "$arch" "$built" "$doc" "$ROOT/Cargo.lock" || fail "$arch: notices"
done
phase "local apt repository and chroot"

repo="$WORK/repo"
mkdir -p "$repo"
cp "$DEB_AMD64" "$repo/"
(cd "$repo" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null && gzip -9k Packages &&
    apt-ftparchive release . >Release)
make_chroot
mkdir -p "$CHROOT/srv/rmp-eval-repo"
cp "$repo"/* "$CHROOT/srv/rmp-eval-repo/"
# Only the local repository: the test installs from it and needs nothing else (and no network).
echo "deb [trusted=yes] file:/srv/rmp-eval-repo ./" >"$CHROOT/etc/apt/sources.list"
# A stand-in update-grub (where grub2-common puts it: apt gives maintainer scripts PATH=/usr/sbin:/usr/bin:/sbin:/bin)
# that records its calls: the chroot has no GRUB, and the purge test needs to see whether the scripts run it.
cat >"$CHROOT/usr/sbin/update-grub" <<'EOF'
#!/bin/sh
echo called >> /root/update-grub.calls
EOF
chmod 755 "$CHROOT/usr/sbin/update-grub"
in_chroot apt-get update -qq
snapshot "$WORK/before"
phase "apt-get install rmp-eval"

apt_chroot install rmp-eval
got=$(in_chroot rmp-eval --version)
[ "$got" = "rmp-eval $version" ] || fail "rmp-eval --version says '$got', the package is $version"
[ "$(in_chroot sh -c 'command -v rmp-eval')" = /usr/sbin/rmp-eval ] || fail "rmp-eval is not /usr/sbin/rmp-eval"
man_page=$(in_chroot man -w rmp-eval) || fail "man -w rmp-eval"
[ "$man_page" = /usr/share/man/man8/rmp-eval.8.gz ] || fail "man -w rmp-eval gave $man_page"
in_chroot man -w 8 rmp-eval-check >/dev/null || fail "no man page rmp-eval-check(8)"
# A page per verb with its EXAMPLES and the workflow, the checks' page, and the user guide.
for verb in check run fix rollback compare report reflect snapshot; do
    page=$(in_chroot man -w 8 "rmp-eval-$verb") || fail "no man page rmp-eval-$verb(8)"
    zcat -f "$CHROOT$page" | grep '^\.SH EXAMPLES' >/dev/null || fail "rmp-eval-$verb(8) has no EXAMPLES"
    zcat -f "$CHROOT$page" | grep "^\\\\fBrmp\\\\-eval $verb" >/dev/null || fail "rmp-eval-$verb(8) has no example of $verb"
    zcat -f "$CHROOT$page" | grep '^\.SH WORKFLOW' >/dev/null || fail "rmp-eval-$verb(8) has no WORKFLOW"
done
in_chroot man -w 7 rmp-eval-checks >/dev/null || fail "no man page rmp-eval-checks(7)"
# grep reads to the end (no -q): under pipefail an early exit would SIGPIPE zcat on a doc bigger than a pipe.
for doc in guide.md checks.md json.md tasks/nic.md; do
    f=$(ls "$CHROOT/usr/share/doc/rmp-eval/$doc"* 2>/dev/null | head -n1)
    [ -n "$f" ] && [ -s "$f" ] || fail "/usr/share/doc/rmp-eval/$doc missing"
done
zcat -f "$CHROOT"/usr/share/doc/rmp-eval/guide.md* | grep '^# rmp-eval user guide' >/dev/null ||
    fail "/usr/share/doc/rmp-eval/guide.md is not the user guide"
zcat -f "$CHROOT"/usr/share/doc/rmp-eval/checks.md* | grep '^### `preempt_rt` — ' >/dev/null ||
    fail "/usr/share/doc/rmp-eval/checks.md is not the checks' reference generated from the registry"
for f in /usr/share/bash-completion/completions/rmp-eval /usr/share/zsh/vendor-completions/_rmp-eval \
    /usr/share/fish/vendor_completions.d/rmp-eval.fish /lib/systemd/system/rmp-eval.service \
    /lib/systemd/system/rmp-eval-nic@.service /lib/systemd/system/rmp-eval-qualify.service \
    /lib/udev/rules.d/99-rmp-eval.rules; do
    [ -s "$CHROOT$f" ] || fail "$f missing"
done
[ -d "$CHROOT/var/lib/rmp-eval" ] || fail "/var/lib/rmp-eval missing"
in_chroot dpkg-query -W -f='${Conffiles}\n' rmp-eval | grep -q '^ /etc/default/grub.d/99-rmp-eval.cfg ' ||
    fail "the GRUB drop-in is not a conffile"
# Enabled (a wants/ link), not started (no systemd runs here; --no-start keeps it so on real machines).
[ "$(readlink "$CHROOT/etc/systemd/system/multi-user.target.wants/rmp-eval.service")" = \
    /lib/systemd/system/rmp-eval.service ] || fail "rmp-eval.service is not enabled"
[ "$(readlink "$CHROOT/etc/systemd/system/multi-user.target.wants/rmp-eval-qualify.service")" = \
    /lib/systemd/system/rmp-eval-qualify.service ] || fail "rmp-eval-qualify.service is not enabled"
phase "rmp-eval check --json with /proc and /sys"

bind_mount /proc
bind_mount /sys
set +e
in_chroot rmp-eval check --json >"$WORK/check.json" 2>"$WORK/check.err"
rc=$?
set -e
unmount_all
case $rc in 0 | 1 | 4 | 5) ;; *) fail "check --json exited $rc: $(cat "$WORK/check.err")" ;; esac
py '
import json, sys
doc = json.load(open(sys.argv[1]))
checks = doc["checks"]
assert isinstance(checks, list) and checks, "no checks"
for c in checks:
    missing = {"id", "section", "title", "status", "detail", "remedy"} - c.keys()
    assert not missing, f"{c} lacks {missing}"
    assert c["status"] in ("pass", "fail", "warn", "pending", "unknown", "info"), c
ids = {c["id"] for c in checks}
assert {"preempt_rt", "swap", "core_isolated"} <= ids, sorted(ids)
statuses = {c["status"] for c in checks}
# A failure first, then a reboot that is due, then warnings (`man rmp-eval-checks`).
want = 1 if "fail" in statuses else 5 if "pending" in statuses else 4 if "warn" in statuses else 0
assert int(sys.argv[2]) == want, f"exit {sys.argv[2]} with statuses {sorted(statuses)}, expected {want}"
print(f"check --json: {len(checks)} checks, exit {sys.argv[2]}")
' "$WORK/check.json" "$rc" || fail "check --json output"
phase "remove, purge, and what remains"

# As if fix had run: saved state, and kernel parameters for the drop-in.
mkdir -p "$CHROOT/var/lib/rmp-eval/journal"
echo '{}' >"$CHROOT/var/lib/rmp-eval/journal/000001.json"
echo '{}' >"$CHROOT/var/lib/rmp-eval/runtime.json"
echo 'isolcpus=managed_irq,domain,3 nohz_full=3' >"$CHROOT/var/lib/rmp-eval/cmdline"
cmdline=$(in_chroot sh -c 'GRUB_CMDLINE_LINUX_DEFAULT=quiet; . /etc/default/grub.d/99-rmp-eval.cfg; echo "$GRUB_CMDLINE_LINUX_DEFAULT"')
[ "$(echo $cmdline)" = "quiet isolcpus=managed_irq,domain,3 nohz_full=3" ] || fail "the drop-in gives '$cmdline'"
apt_chroot remove rmp-eval
grep -q "reinstall rmp-eval and run 'rmp-eval rollback'" "$WORK/apt.log" || fail "remove did not say how to undo fix's changes"
[ ! -e "$CHROOT/usr/sbin/rmp-eval" ] || fail "remove left the binary"
[ -s "$CHROOT/var/lib/rmp-eval/cmdline" ] || fail "remove deleted the saved state (only purge may)"
[ -e "$CHROOT/etc/default/grub.d/99-rmp-eval.cfg" ] || fail "remove deleted the conffile (only purge may)"
[ ! -e "$CHROOT/root/update-grub.calls" ] || fail "remove ran update-grub although the drop-in still applies"
grep -q "not empty so not removed" "$WORK/apt.log" && fail "dpkg warned on remove: $(grep 'not empty' "$WORK/apt.log")"
apt_chroot purge rmp-eval
grep -q "not empty so not removed" "$WORK/apt.log" && fail "dpkg warned on purge: $(grep 'not empty' "$WORK/apt.log")"
[ "$(cat "$CHROOT/root/update-grub.calls" 2>/dev/null)" = called ] || fail "purge with saved kernel parameters did not run update-grub once"
rm "$CHROOT/root/update-grub.calls"
# Install again and purge straight away: nothing was added to the command line, so no update-grub.
apt_chroot install rmp-eval
apt_chroot purge rmp-eval
[ ! -e "$CHROOT/root/update-grub.calls" ] || fail "purge ran update-grub with nothing to take off the command line"
in_chroot dpkg-query -W rmp-eval >/dev/null 2>&1 && fail "dpkg still knows rmp-eval after purge"
snapshot "$WORK/after"
diff -u "$WORK/before.list" "$WORK/after.list" || fail "files differ after purge (above: - before, + after)"
diff -u "$WORK/before.md5" "$WORK/after.md5" || fail "file contents differ after purge"
diff -u "$WORK/before.pkgs" "$WORK/after.pkgs" || fail "dpkg's package list differs after purge"
echo "nothing remains: $(wc -l <"$WORK/after.list") paths, $(wc -l <"$WORK/after.md5") checksums and" \
    "$(grep -c ' ii ' "$WORK/after.pkgs") installed packages as before"
phase "signed apt repository (tests/package/repo.sh)"

"$ROOT/tests/package/repo.sh" "$DEB_AMD64" "$DEB_ARM64" "$WORK/repo-test" || fail "signed repository"
phase "README.md's first block in a clean chroot (tests/package/from-clone.sh)"

"$ROOT/tests/package/from-clone.sh" "$WORK/from-clone" || fail "from a clone"
phase "arm64 binary under qemu on $FIXTURE"

"$ROOT/tests/package/arm64.sh" "$DEB_AMD64" "$DEB_ARM64" "$FIXTURE" "$WORK/arm64" || fail "arm64 under qemu"
phase "contrib/ansible on two chroot targets (--check, apply, again: no change)"

"$ROOT/tests/package/ansible.sh" "$DEB_AMD64" || fail "contrib/ansible"
phase "waiting for the reproducible build and N+1"

bg_rc=0
wait "$BG_PID" || bg_rc=$?
BG_PID=
cat "$BG_LOG"
[ "$bg_rc" = 0 ] || fail "the reproducible build or N+1's (above)"
phase "upgrade, downgrade, remove and purge with fix applied (tests/package/lifecycle.sh)"

RMP_EVAL_LIFECYCLE_NEXT=$(ls "$WORK"/next/rmp-eval_*_amd64.deb) "$ROOT/tests/package/lifecycle.sh" "$DEB_AMD64" "$WORK/lifecycle" ||
    fail "lifecycle"
phase ""
echo "== package suite passed in $((SECONDS - T0)) s"
