"""The Raspberry Pi boot path: fix edits /boot/firmware/cmdline.txt (not GRUB, although the package's GRUB drop-in
is installed), the next boot's /proc/cmdline is that line, rollback restores the file byte for byte and the boot
after it has the first command line again."""
import sys

from judgelib import Judge, check_findings, cmdline_cpus

j = Judge(sys.argv[1])
CORE = 1
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.expect((j.text(1, "grub.d") or "").split() == ["99-rmp-eval.cfg"],
         f"/etc/default/grub.d holds {j.text(1, 'grub.d')!r}: only the package's drop-in should be left")
orig = j.text_at("cmdline.txt.orig")
first = j.text(1, "cmdline.txt")
j.expect(orig is not None and first == orig, "boot 1 saw another cmdline.txt than the host wrote")
boot1 = j.fact(1, "cmdline") or ""
# The kernel's line is the file's (qemu's -append, as the Pi firmware passes cmdline.txt).
j.expect(orig is not None and boot1 == orig.strip(), f"boot 1: /proc/cmdline {boot1!r} is not cmdline.txt {orig!r}")
check_findings(j, 1, "check", CORE)
j.command(1, "fix")
edited = j.text(1, "cmdline.txt.after-fix") or ""
j.expect(edited.count("\n") == 1 and edited.endswith("\n"), f"cmdline.txt is not one line after fix: {edited!r}")
for p in ("isolcpus", "nohz_full", "rcu_nocbs"):
    cpus = cmdline_cpus(edited, p)
    j.expect(cpus == {CORE}, f"cmdline.txt after fix has {p}={cpus and sorted(cpus)}: {edited!r}")
state = (j.text(2, "state-files") or "").split()
j.expect("cmdline" not in state, f"fix saved GRUB's kernel-parameter state on a Pi: /var/lib/rmp-eval has {state}")
boot2 = j.fact(2, "cmdline")
if j.expect(boot2 is not None, "boot 2 recorded nothing (the guest did not come back after fix)"):
    j.expect(boot2 == edited.strip(), f"boot 2: /proc/cmdline {boot2!r} is not the edited cmdline.txt {edited!r}")
    got = check_findings(j, 2, "check", CORE)
    for cid in ("core_isolated", "nohz_full", "rcu_nocbs"):
        j.expect(got.get(cid) == "pass", f"boot 2: {cid} is {got.get(cid)!r} after fix and reboot")
    j.command(2, "rollback")
boot3 = j.fact(3, "cmdline")
if j.expect(boot3 is not None, "boot 3 recorded nothing (the guest did not come back after rollback)"):
    j.expect(boot3 == boot1, f"boot 3: /proc/cmdline {boot3!r}, before fix {boot1!r}")
    j.expect(j.text(3, "cmdline.txt") == orig, "cmdline.txt is not byte-identical to the original after rollback")
j.finish()
