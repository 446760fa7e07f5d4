"""A trial boot that cannot come up and two power cuts: the guest came back on its first command line by itself
at every boot, GRUB's files never changed, qualify recorded the failed trial, resumed after each cut and finished;
rollback put every file of /etc and /boot back."""
import glob
import os
import sys

from judgelib import Judge, load_json

j = Judge(sys.argv[1])


j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
first = j.fact(1, "cmdline") or ""
j.expect("root=/dev/nowhere" not in first and "panic=10" not in first, f"boot 1's line: {first}")
# Boot 3 was the trial and recorded nothing (it never reached its root file system); every other boot came up,
# on the first boot's line.
j.expect(j.fact(3, "cmdline") is None, "boot 3 (the trial with no root device) came up")
for b in (2, 4, 5):
    line = j.fact(b, "cmdline")
    j.expect(line == first, f"boot {b} is on {line!r}, the first boot's line is {first!r}")
# GRUB's generated menu and its configuration never changed; grubenv is as it was once qualify is done.
h1 = dict(reversed(l.split()) for l in (j.text(1, "grub-hashes") or "").splitlines() if len(l.split()) == 2)
j.expect("/boot/grub/grub.cfg" in h1 and "/boot/grub/grubenv" in h1, f"boot 1's GRUB hashes: {h1}")
for b in (2, 4, 5):
    hb = dict(reversed(l.split()) for l in (j.text(b, "grub-hashes") or "").splitlines() if len(l.split()) == 2)
    for f, h in h1.items():
        if f == "/boot/grub/grubenv" and b != 5:
            continue  # the trial's next_entry is written (boot 2) and undone (boot 4) while the hook looks
        j.expect(hb.get(f) == h, f"boot {b}: {f} changed")
# The two cuts happened where they were meant to, and qualify went on from them.
j.expect((j.text(1, "cut-in-phase") or "").strip() == "baseline", f"cut 1 in {j.text(1, 'cut-in-phase')!r}")
j.expect((j.text(4, "cut-in-phase") or "").strip() == "sweep", f"cut 2 in {j.text(4, 'cut-in-phase')!r}")
unit = (j.text(5, "rmp-eval-qualify.service-state") or "") + (j.text(5, "rmp-eval-qualify.service-stuck") or "")
j.expect("Result=success" in unit and "ExecMainStatus=0" in unit, f"boot 5: the qualify unit: {unit}")
q = load_json(j.path(5, "state.json")) or {}
j.expect((q.get("phase") or {}).get("phase") == "done", f"qualify's state at the end: {q.get('phase')}")
steps = {s["step"]: s for s in q.get("steps") or []}
cl = steps.get("cmdline") or {}
j.expect("root=/dev/nowhere" in (cl.get("trial_cmdline") or ""), f"the trial line: {cl.get('trial_cmdline')}")
out = cl.get("outcome") or {}
j.expect(out.get("outcome") == "trial_failed" and "root=/dev/nowhere" in (out.get("why") or ""),
         f"the cmdline step's outcome: {out}")
others = [s for n, s in steps.items() if n != "cmdline"]
j.expect(others and all((s.get("outcome") or {}).get("outcome") in ("kept", "not_tried") for s in others),
         f"the other steps: {[(s['step'], s.get('outcome')) for s in others]}")
j.expect(q.get("baseline") and all(p.get("result") for p in q.get("sweep") or [{}]),
         f"baseline {q.get('baseline')}, sweep {q.get('sweep')}")
docs = [load_json(p) for p in glob.glob(os.path.join(j.path(5, "qualification"), "*.json"))]
if j.expect(len(docs) == 1 and docs[0], f"{len(docs)} qualification results"):
    row = next((s for s in docs[0]["steps"] if s["step"] == "cmdline"), {})
    j.expect(row.get("outcome") == "trial_failed", f"the report's cmdline row: {row.get('outcome')}")
j.command(5, "rollback")
h1, h5 = j.text(1, "hashes"), j.text(5, "hashes-after-rollback")
if j.expect(h1 and h5, "no hashes of /etc and /boot"):
    differ = sorted({l.split(None, 1)[1] for l in set(h1.splitlines()) ^ set(h5.splitlines())})
    j.expect(not differ, f"files differ after rollback: {differ}")
j.finish()
