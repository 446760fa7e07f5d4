#!/usr/bin/env bash
# The packaged arm64 binary, run under qemu-user-static on the Raspberry Pi 4 fixture, must give the fixture's
# expected verdicts and exactly the same JSON as the packaged amd64 binary on the same fixture.
#   tests/package/arm64.sh AMD64.deb ARM64.deb FIXTURE_DIR WORKDIR
set -euo pipefail
amd64_deb=$1 arm64_deb=$2 fixture=$3 work=$4
[ -d "$fixture/proc" ] && [ -d "$fixture/sys" ] || { echo "no fixture root at $fixture" >&2; exit 1; }
mkdir -p "$work/amd64" "$work/arm64"
dpkg-deb -x "$amd64_deb" "$work/amd64"
dpkg-deb -x "$arm64_deb" "$work/arm64"
file -b "$work/arm64/usr/sbin/rmp-eval" | grep -q 'ARM aarch64' || { echo "the arm64 package's binary is not aarch64" >&2; exit 1; }

# -L: the arm64 loader and libc (libc6:arm64 by multiarch, else Debian's cross libc under /usr/aarch64-linux-gnu).
args=(--root "$fixture" check --nic eth0 --json)
set +e
qemu-aarch64-static -L /usr/aarch64-linux-gnu "$work/arm64/usr/sbin/rmp-eval" "${args[@]}" >"$work/arm64.json" 2>"$work/arm64.err"
rc_arm=$?
"$work/amd64/usr/sbin/rmp-eval" "${args[@]}" >"$work/amd64.json" 2>"$work/amd64.err"
rc_amd=$?
set -e
echo "exit status: arm64 (qemu) $rc_arm, amd64 $rc_amd"
[ "$rc_arm" = "$rc_amd" ] || { cat "$work/arm64.err"; echo "the exit statuses differ" >&2; exit 1; }

python3 - "$work/arm64.json" "$work/amd64.json" "$rc_arm" <<'EOF'
import json, sys
arm = json.load(open(sys.argv[1]))
amd = json.load(open(sys.argv[2]))
verdict = {c["id"]: (c["status"], c["detail"]) for c in arm["checks"]}
# The fixture's expected verdicts: tests/fixtures/rpi4-arm64/README.md and the raspberry_pi_4_arm64 test in
# tests/check/fixture_roots.rs (a counter clock source that passes, no turbo knobs, the NIC's IRQs unpinned, link down).
expected = {
    "clocksource": ("pass", "arch_sys_counter (ARM standard)"),
    "turbo": ("unknown", "no boost knobs"),
    "nic_link": ("fail", "operstate=down"),
    "nic_irqs_pinned": ("fail", "not pinned: 38,39"),
}
for cid, want in expected.items():
    assert verdict.get(cid) == want, f"{cid}: arm64 gives {verdict.get(cid)}, the fixture expects {want}"
assert sys.argv[3] == "1", f"exit {sys.argv[3]}: the fixture has failing checks, so check must exit 1"
assert arm == amd, "arm64 and amd64 disagree:\n" + "\n".join(
    f"  {a} | {b}" for a, b in zip(arm["checks"], amd["checks"]) if a != b)
print(f"arm64 under qemu = amd64: {len(arm['checks'])} checks, the same JSON; expected verdicts hold")
EOF
