"""Symlinked /etc/default/grub, a quoted parameter, a drop-in after ours → fix → GRUB boot → rollback → boot."""
import sys

from judgelib import Judge, cmdline_cpus, files_differ, tree_differences

j = Judge(sys.argv[1])
CORE = 1
PARAMS = ("isolcpus", "nohz_full", "rcu_nocbs")
# GRUB's `linux` command quotes a whole argument that holds a space: rmp.note="a b" in grub.cfg reaches the kernel
# as "rmp.note=a b" (the kernel reads both the same way). That is GRUB's doing, before fix as after rollback.
NOTE = '"rmp.note=a b"'


def tokens(line):
    """The command line split as the kernel splits it: on blanks, except inside double quotes."""
    out, cur, quoted = [], "", False
    for c in line:
        if c == '"':
            quoted = not quoted
        if c.isspace() and not quoted:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += c
    return out + ([cur] if cur else [])


j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.command(1, "setup")
fix = j.command(1, "fix")
if fix is not None:
    j.expect("zz-rmp-eval.cfg" in fix, f"fix did not place its drop-in after 99-zzz.cfg: {fix[-600:]}")
link = j.text(1, "after-fix", "grub.link") or ""
j.expect(link.strip() == "grub.real", f"after fix /etc/default/grub is no longer the link: {link!r}")

after = j.fact(2, "cmdline")
if j.expect(after is not None, "boot 2 recorded no /proc/cmdline (the guest did not come back after fix)"):
    t = tokens(after)
    for p in PARAMS:
        n = sum(1 for w in t if w.startswith(p + "="))
        cpus = cmdline_cpus(after, p)
        j.expect(n == 1 and cpus is not None and CORE in cpus,
                 f"boot 2: {p}= {n} times ({cpus}), expected once with CPU {CORE}: {after}")
    j.expect(NOTE in t, f"boot 2: the quoted parameter {NOTE} is not intact: {after}")
    j.expect("rmp.zzz=1" in t, f"boot 2: 99-zzz.cfg's parameter is gone: {after}")
    j.command(2, "rollback")
    final = j.fact(3, "cmdline")
    if final is not None:
        # Every other parameter byte for byte as GRUB passes it without fix (boot 3, after rollback).
        mine = [w for w in t if not w.startswith(tuple(p + "=" for p in PARAMS + ("irqaffinity", "skew_tick")))]
        j.expect(mine == tokens(final), f"boot 2: the other parameters differ from boot 3's: {mine} vs {final}")

final = j.fact(3, "cmdline")
if j.expect(final is not None, "boot 3 recorded nothing (the guest did not come back after rollback)"):
    t = tokens(final)
    for p in PARAMS:
        j.expect(not any(w.startswith(p + "=") for w in t), f"boot 3: {p}= still on the command line: {final}")
    j.expect(NOTE in t and "rmp.zzz=1" in t, f"boot 3: the user's parameters are not intact: {final}")
    differ = tree_differences(j.path(1, "pre"), j.path(3, "final"))
    j.expect(not differ, f"after rollback the GRUB layout differs from before fix: {differ}")
    j.expect(files_differ(j.path(1, "pre", "grub.cfg"), j.path(1, "after-fix", "grub.cfg")),
             "grub.cfg was the same after fix: update-grub did not run")
j.finish()
