"""fix --core 1 → reboot → isolcpus/nohz_full/rcu_nocbs live and checked → rollback → reboot → byte-identical."""
import filecmp
import os
import sys

from judgelib import Judge, check_findings, cmdline_cpus

j = Judge(sys.argv[1])
CORE = 1
PARAMS = ("isolcpus", "nohz_full", "rcu_nocbs")

j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
before = j.fact(1, "cmdline") or ""
for p in PARAMS:
    j.expect(cmdline_cpus(before, p) is None, f"the untuned guest already has {p}= on its command line")
check_findings(j, 1, "check", CORE)
j.command(1, "fix")

# Boot 2: the parameters reached the kernel through the GRUB drop-in + update-grub, and check sees them.
after = j.fact(2, "cmdline")
if j.expect(after is not None, "boot 2 recorded no /proc/cmdline (the guest did not come back after fix)"):
    for p in PARAMS:
        cpus = cmdline_cpus(after, p)
        j.expect(cpus is not None and CORE in cpus and 0 not in cpus,
                 f"boot 2: /proc/cmdline has {p}={cpus and sorted(cpus)}, expected CPU {CORE} only: {after}")
    got = check_findings(j, 2, "check", CORE)
    for cid in ("core_isolated", "nohz_full", "rcu_nocbs"):
        j.expect(got.get(cid) == "pass", f"boot 2: check {cid} is {got.get(cid)!r} after fix and reboot")
    j.command(2, "rollback")

# Boot 3: the original command line and byte-identical GRUB files.
final = j.fact(3, "cmdline")
if j.expect(final is not None, "boot 3 recorded nothing (the guest did not come back after rollback)"):
    j.expect(final == before, f"boot 3: /proc/cmdline is {final!r}, before fix it was {before!r}")
    check_findings(j, 3, "check", CORE)
    g1, g3 = j.path(1, "grub"), j.path(3, "grub")
    cmp = filecmp.dircmp(g1, g3)
    differ = []

    def walk(c, rel=""):
        differ.extend(os.path.join(rel, n) for n in c.left_only + c.right_only)
        # shallow=False: compare bytes, not size and mtime.
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        differ.extend(os.path.join(rel, n) for n in mismatch + errors)
        for n, sub in c.subdirs.items():
            walk(sub, os.path.join(rel, n))

    walk(cmp)
    j.expect(not differ, f"GRUB files differ from before fix after rollback: {differ}")
    j.expect(os.path.exists(os.path.join(g3, "grub.cfg")), "no /boot/grub/grub.cfg recorded")
    # The fix must have changed grub.cfg in between, or the comparison above proves nothing.
    g2 = j.path(2, "grub", "grub.cfg")
    j.expect(os.path.exists(g2) and not filecmp.cmp(os.path.join(g1, "grub.cfg"), g2, shallow=False),
             "grub.cfg was the same after fix: update-grub did not run")
j.finish()
