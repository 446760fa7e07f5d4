"""The monitor from its timer in the PREEMPT_RT guest: a clean pass says no drift; after an IRQ put back on the RT
core by hand and the NIC down and up, the next pass names every IRQ that changed (and no other), exits 1 and leaves
the values (report only); with re-apply configured the pass after writes them back. Expected drift comes from the
guest's own /proc/irq copies, not from rmp-eval."""
import os
import re
import sys
from datetime import datetime

from judgelib import Judge, cpulist

j = Judge(sys.argv[1])
CORE = 1


def affinities(sub):
    d = j.path(1, sub, "irq")
    if not os.path.isdir(d):
        return {}
    out = {}
    for n in os.listdir(d):
        with open(os.path.join(d, n)) as f:
            t = f.read().strip()
        if t:
            out[int(n)] = cpulist(t)
    return out


def kv(sub, name):
    t = j.text(1, sub, name) or ""
    return dict(line.split("=", 1) for line in t.splitlines() if "=" in line)


def metric(sub, name, labels=""):
    t = j.text(1, sub, "monitor.prom") or ""
    m = re.search(rf"^{re.escape(name + labels)} (\S+)$", t, re.M)
    return None if m is None else float(m.group(1))


def drift_irqs(journal):
    return {int(n) for n in re.findall(r"^drift: irq_affinity: /proc/irq/(\d+)/smp_affinity_list is ", journal, re.M)}


def stamp(text):
    """systemctl's --timestamp=us+utc ("Thu 2026-12-03 10:59:38.470726 UTC"; the fraction is left out when it is
    zero, as for a timer with AccuracySec=1s) as seconds, None if unset."""
    for fmt in ("%a %Y-%m-%d %H:%M:%S.%f UTC", "%a %Y-%m-%d %H:%M:%S UTC"):
        try:
            return datetime.strptime((text or "").strip(), fmt).timestamp()
        except ValueError:
            pass
    return None


def a_pass(sub, status):
    """The pass recorded as SUB ran, was started by the timer after the guest's mark, and exited STATUS."""
    u, t = kv(sub, "monitor-unit"), kv(sub, "timer")
    mark = int((j.text(1, sub, "mark") or "0").strip())
    start = int(u.get("ExecMainStartTimestampMonotonic") or 0)
    if not j.expect(start > mark and u.get("ActiveState") in ("inactive", "failed"),
                    f"{sub}: no finished monitor pass after the mark ({mark}): {u}"):
        return None
    # The timer fired this pass: its last trigger is just before the pass's start (the script never starts the
    # service itself; a pass started by hand would leave the trigger at an earlier pass, 10 s before).
    trig, began = stamp(t.get("LastTriggerUSec")), stamp(t.get("ExecMainStartTimestamp"))
    j.expect(trig is not None and began is not None and 0 <= began - trig < 5,
             f"{sub}: the timer last triggered at {t.get('LastTriggerUSec')}, the pass started at "
             f"{t.get('ExecMainStartTimestamp')}")
    j.expect(u.get("ExecMainStatus") == str(status), f"{sub}: the monitor exited {u.get('ExecMainStatus')}, "
             f"expected {status}: {(j.text(1, sub, 'journal') or '').strip()[-600:]}")
    journal = j.text(1, sub, "journal") or ""
    j.expect(re.search(r"^check: \d+ passed, \d+ failed", journal, re.M), f"{sub}: no check line: {journal!r}")
    j.expect(re.search(r"^run: 2 s on CPU1: ", journal, re.M), f"{sub}: no 2 s run line: {journal!r}")
    j.expect(metric(sub, "rmp_eval_monitor_last_timestamp_seconds") is not None,
             f"{sub}: no rmp_eval_monitor.prom with the pass's time")
    return journal


j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
if j.command(1, "fix") is not None and j.command(1, "enable") is not None:
    fixed = affinities("after-fix")
    j.expect(fixed, "no IRQ affinities recorded after fix")
    clean = a_pass("clean", 0)
    if clean is not None:
        j.expect(re.search(r"^drift: none$", clean, re.M), f"clean pass: {clean!r}")
        j.expect(metric("clean", "rmp_eval_drift_remaining_values") == 0, "clean pass: remaining drift metric")

    irq = int((j.text(1, "drift-irq") or "-1").strip())
    drifted = affinities("after-drift")
    j.expect(irq in fixed and CORE not in fixed[irq] and drifted.get(irq) == {CORE},
             f"the guest could not put an IRQ onto CPU {CORE} by hand (IRQ {irq})")
    j.expect((j.text(1, "nic-operstate") or "").strip() == "up", "the NIC did not come back up")
    # Every IRQ whose affinity differs from fix's: the hand-made one and whatever the NIC's down/up changed.
    changed = {i for i, c in drifted.items() if i in fixed and c != fixed[i]}
    reported = a_pass("reported", 1)
    if reported is not None:
        named = drift_irqs(reported)
        j.expect(named == changed, f"drift reported for IRQs {sorted(named)}, changed by hand: {sorted(changed)}")
        j.expect(re.search(rf"^drift: irq_affinity: /proc/irq/{irq}/smp_affinity_list is 1, fix set 0$",
                           reported, re.M), f"no drift line for IRQ {irq}: {reported!r}")
        j.expect("re-applied" not in reported, "the report-only pass re-applied")
        still = affinities("reported")
        j.expect(still.get(irq) == {CORE}, f"report only, yet IRQ {irq} is {still.get(irq)} after the pass")
        j.expect((metric("reported", "rmp_eval_drift_values", '{step="irq_affinity"}') or 0) >= len(changed),
                 "reported pass: rmp_eval_drift_values{step=irq_affinity}")
        j.expect((metric("reported", "rmp_eval_drift_remaining_values") or 0) >= len(changed),
                 "reported pass: remaining drift metric")
    back = a_pass("reapplied", 0)
    if back is not None:
        j.expect(re.search(rf"^drift: {len(changed)} value\(s\) re-applied, 0 still drifted$", back, re.M),
                 f"re-apply pass: {back!r}")
        after = affinities("reapplied")
        wrong = {i: (after.get(i), fixed[i]) for i in changed if after.get(i) != fixed[i]}
        j.expect(not wrong, f"after re-apply, IRQ (now, fix's) differ: {wrong}")
        j.expect(metric("reapplied", "rmp_eval_drift_remaining_values") == 0, "re-apply pass: remaining metric")
        j.expect((metric("reapplied", "rmp_eval_drift_reapplied_total") or 0) >= len(changed),
                 "re-apply pass: rmp_eval_drift_reapplied_total")
j.finish()
