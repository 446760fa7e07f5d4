"""Ten power cuts in a qualify: each landed where guest.sh meant it; every boot's kernel command line, read from its
console by this judge, is the untuned line, the trial's or the committed one (the boot after the cut trial boot on
GRUB's default line); a state write cut before its rename left the old state,
after its directory fsync the new one, in its rename one of the two, never a torn one; qualify resumed by itself
after each cut and finished with its report; after the cut rollback and rollback again, the files of /etc and
/boot are byte-identical to the first boot's."""
import glob
import json
import os
import re
import sys

from judgelib import Judge, load_json

j = Judge(sys.argv[1])
logs = os.path.join(sys.argv[1], "..", "..", "logs")
boots = sorted(int(os.path.basename(p)[1:]) for p in glob.glob(os.path.join(sys.argv[1], "b[0-9]*")))
cut_boots = sorted(int(re.sub(r"\D", "", os.path.basename(p))) for p in glob.glob(os.path.join(sys.argv[1], "cut*.done")))
last = max(boots + cut_boots) if boots else 0


def console_line(n):
    """The command line the kernel of boot n printed on its console (None: it printed none)."""
    try:
        with open(os.path.join(logs, f"console{n}.log"), encoding="utf-8", errors="replace") as f:
            m = re.search(r"Command line: (.*)", f.read())
    except FileNotFoundError:
        return None
    return m.group(1).strip() if m else None


def params(line):
    return [t for t in (line or "").split() if not t.startswith("BOOT_IMAGE=")]


j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.command(1, "update-grub")

# Where each cut landed: guest.sh's record, and the host's kill.
cuts = {}
for k in range(1, 11):
    t = j.text_at(f"cut-{k}")
    if j.expect(t, f"cut {k} never happened"):
        b, what = t.strip().split(" ", 1)
        cuts[k] = (int(b), what)
        j.expect(int(b) in cut_boots, f"cut {k} ({what}) at boot {b}: the host did not kill qemu then")
j.expect(len(cut_boots) == 10, f"{len(cut_boots)} power cuts: boots {cut_boots}")

# Every boot's line, from the console (boot 1 kept `quiet`: its line is the one it recorded itself).
lines = {n: console_line(n) for n in range(2, last + 1)}
lines[1] = j.fact(1, "cmdline")
for n in range(2, last + 1):
    j.expect(lines[n], f"boot {n}: no command line on its console (GRUB or the kernel never started)")
    if n in boots and lines[n]:
        j.expect(params(j.fact(n, "cmdline")) == params(lines[n]), f"boot {n}: /proc/cmdline is not the console's")
if 5 in cuts and all(lines.values()):
    trial = cuts[5][0]
    untuned = lines[trial + 1]
    j.expect("isolcpus=" in lines[trial], f"the trial boot {trial}: {lines[trial]}")
    j.expect("isolcpus=" not in untuned, f"the boot after the cut trial is not on the default line: {untuned}")
    for n in range(2, last + 1):
        j.expect(lines[n] == untuned or "isolcpus=" in lines[n],
                 f"boot {n} is on {lines[n]!r}: neither the default line {untuned!r} nor a tuned one")
    j.expect(lines[last] == untuned, f"the last boot, after rollback: {lines[last]!r}, not {untuned!r}")

def state_of(boot, name):
    try:
        with open(j.path(boot, name), encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


# A cut in a state write: the state the next unit found (its first write) is the old or the new one, whole.
for k, old_ok, new_ok in ((2, True, False), (3, True, False), (4, True, True), (5, False, True), (6, False, True),
                         (9, False, True)):
    if k not in cuts:
        continue
    b = cuts[k][0]
    nxt = min((n for n in boots if n > b and j.text(n, "state-found") is not None), default=None)
    if not j.expect(nxt, f"cut {k}: no later boot recorded the state it found"):
        continue
    found = state_of(nxt, "state-found")
    try:
        json.loads(found)
    except ValueError:
        j.fail(f"cut {k}: the state found at boot {nxt} is torn: {found[:200]!r}")
        continue
    new, prev = state_of(b, "state-now"), state_of(b, "state-prev")
    # Before the rename the file on disk at the cut is still the old state (state-now), after it the new one.
    ok = (old_ok and found == (prev if new_ok else new)) or (new_ok and found == new)
    if k == 4:
        ok = found in (prev, new)
    j.expect(ok, f"cut {k} ({cuts[k][1]}): boot {nxt} found a state that is neither the old nor the new one")

# qualify went on by itself after each cut and finished: done, the trial committed, the sweep measured.
done = [n for n in boots if j.text(n, "state.json")]
if j.expect(done, "qualify never finished (no boot recorded its final state)"):
    b = done[-1]
    q = load_json(j.path(b, "state.json")) or {}
    j.expect((q.get("phase") or {}).get("phase") == "done", f"qualify's state at the end: {q.get('phase')}")
    steps = {s["step"]: s for s in q.get("steps") or []}
    cl = steps.get("cmdline") or {}
    j.expect((cl.get("outcome") or {}).get("outcome") == "kept", f"the command-line step: {cl.get('outcome')}")
    j.expect("isolcpus=" in (cl.get("trial_cmdline") or ""), f"the trial line: {cl.get('trial_cmdline')}")
    j.expect(q.get("baseline") and all(p.get("result") for p in q.get("sweep") or [{}]),
             f"baseline {q.get('baseline')}, sweep {q.get('sweep')}")
    j.expect(len(glob.glob(os.path.join(j.path(b, "qualification"), "*.json"))) == 1, "no qualification result")
    j.expect("done" in (j.command(b, "status") or ""), "qualify --status does not say done")

# After the cut in rollback: nothing under way (or done, the forgetting lost with the cut), rollback finishes.
after = [n for n in boots if j.text(n, "next-cut") == "11\n"]
if j.expect(after, "no boot after the cut in rollback"):
    st = j.command(after[-1], "status") or ""
    j.expect("nothing under way" in st or "done" in st, f"qualify --status after the cut rollback: {st}")
    j.command(after[-1], "rollback")
h1 = j.text(1, "hashes")
final = [n for n in boots if j.text(n, "next-cut") == "final\n"]
if j.expect(h1 and final, "no hashes of /etc and /boot at the start or at the end"):
    h2 = j.text(final[-1], "hashes")
    differ = sorted({l.split(None, 1)[1] for l in set(h1.splitlines()) ^ set((h2 or "").splitlines())})
    j.expect(not differ, f"files differ after rollback: {differ}")
    j.expect(j.text(1, "links") == j.text(final[-1], "links"), "symbolic links differ after rollback")
j.finish()
