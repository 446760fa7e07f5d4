"""The IPIs the RT core receives while rmp-eval measures it, against cyclictest on the same core, priority and
period: CAL, TLB and RES of CPU 1 from the guest's /proc/interrupts copied around each run (not from either tool),
per minute of the run's wall time, start-up and exit included. For each kind (cyclic, thread set, NIC) rmp-eval's
median over its three runs may exceed cyclictest's by at most 1 a minute, in each row and in their sum; and no rmp-eval result blames a CAL or
TLB interrupt on a `fix` step. The figures go to out/ipis.txt (kept with RMP_VM_KEEP=1) and into the verdict.
An investigation's knobs (share.sh: fewer pairs, some kinds only) are read back from the guest's copy of them."""
import statistics
import sys

from judgelib import Judge, cmdline_cpus, interrupts

ROWS = ("CAL", "TLB", "RES")
CPU = 1

j = Judge(sys.argv[1])
knobs = dict(l.split("=", 1) for l in (j.text(2, "knobs") or "").splitlines() if "=" in l)
PAIRS = int(knobs.get("PAIRS", "3"))
KINDS = knobs.get("KINDS", "cyclic threads nic").strip("'").split()
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.command(1, "fix")
j.expect(CPU in cmdline_cpus(j.fact(2, "cmdline") or "", "isolcpus"), f"CPU {CPU} not isolated after fix")
j.expect((j.text(2, "msr") or "").strip() == "loaded", "the msr driver is not loaded")


def per_minute(name):
    """{row: count a minute} on CPU 1 over the run NAME, or None when it did not run."""
    a, b = interrupts(j.text(2, f"{name}.before")), interrupts(j.text(2, f"{name}.after"))
    t0, t1 = j.text(2, f"{name}.t0"), j.text(2, f"{name}.t1")
    if not a or not b or not t0 or not t1:
        j.fail(f"{name}: not recorded")
        return None
    minutes = (float(t1) - float(t0)) / 60
    return {r: (b[r][1][CPU] - a[r][1][CPU]) / minutes for r in ROWS if r in a and r in b}


def blames(result):
    """The sources of a run's result (whole run, worst window, suspects) that put a CAL or TLB on a fix step."""
    i = result.get("interference") or {}
    found = list(i.get("sources") or []) + list(i.get("suspects") or [])
    found += list((i.get("worst_window") or {}).get("sources") or [])
    for e in (result.get("trace") or {}).get("explained") or []:
        found += e.get("culprits") or []
    return [s for s in found
            if str(s.get("name", "")).upper().startswith(("CAL", "TLB", "CALL_FUNCTION"))
            and (s.get("remedy") or {}).get("kind") == "fix"]


lines = [f"cyclictest --smi: {(j.text(2, 'cyclictest-smi') or '?').strip()}; {PAIRS} pairs of each of {KINDS}"]
for kind in KINDS:
    got = {}
    for tool in ("rmp", "ct"):
        runs = []
        for i in range(1, PAIRS + 1):
            name = f"{kind}-{tool}-{i}"
            ok = (0, 1) if tool == "rmp" else (0,)
            if tool == "rmp":
                r = j.json_of(2, name, ok_codes=ok)
                if r is not None:
                    for s in blames(r):
                        j.fail(f"{name}: {s.get('name')} blamed on fix step {s['remedy'].get('id')}: "
                               f"{s['remedy'].get('why')}")
            else:
                j.command(2, name)
            m = per_minute(name)
            if m is not None:
                runs.append(m)
        got[tool] = runs
        total = [sum(m.values()) for m in runs]
        rows = " ".join(f"{r} {statistics.median(m.get(r, 0) for m in runs):.1f}" for r in ROWS) if runs else ""
        each = "; ".join(" ".join(f"{r} {m.get(r, 0):.1f}" for r in ROWS) for m in runs)
        lines.append(f"{kind} {'rmp-eval' if tool == 'rmp' else 'cyclictest'}: per run "
                     f"{[round(t, 1) for t in total]}/min, median {statistics.median(total) if total else 0:.1f}/min"
                     f" (medians: {rows}; runs: {each})")
    if len(got["rmp"]) == PAIRS and len(got["ct"]) == PAIRS:
        # Each row on its own and all three: a few extra CAL must not hide behind fewer RES.
        for what, rows in [(r, (r,)) for r in ROWS] + [("CAL+TLB+RES", ROWS)]:
            ours = statistics.median(sum(m.get(r, 0) for r in rows) for m in got["rmp"])
            theirs = statistics.median(sum(m.get(r, 0) for r in rows) for m in got["ct"])
            j.expect(ours <= theirs + 1, f"{kind}: rmp-eval's median {ours:.2f} {what}/min on CPU {CPU} exceeds "
                                          f"cyclictest's {theirs:.2f} by more than 1")
with open(f"{sys.argv[1]}/ipis.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
if j.problems:
    j.problems += lines
j.finish()
