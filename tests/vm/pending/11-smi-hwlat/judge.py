"""SMIs raised from the RT CPU through port 0xB2 are counted by run exactly (± the firmware's own), the windows
that hold them are the injection's, a late worst cycle whose window holds them is blamed on the firmware, an
unchanged run with none is not; run --hwlat leaves every tracer setting as it found it."""
import sys

from judgelib import Judge

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")


def smi_of(r, cpu, name):
    s = (r.get("interference") or {}).get("smi")
    if not j.expect(s is not None, f"{name}: no interference.smi in the result"):
        return None, None
    if not j.expect(s.get("total") is not None, f"{name}: SMIs not counted: {s.get('not_counted')}"):
        return None, s
    if not j.expect(cpu in s["cpus"], f"{name}: CPU {cpu} not counted: {s['cpus']}"):
        return None, s
    return s["total"][s["cpus"].index(cpu)], s


idle = j.json_of(1, "idle", ok_codes=(0, 1))
own = 0
if idle is not None:
    own, s = smi_of(idle, 1, "idle")
    own = own or 0
    firmware = (idle.get("interference") or {}).get("firmware")
    worst = ((idle.get("interference") or {}).get("worst_window") or {}).get("smi") or 0
    # An unchanged guest: blamed on the firmware only where its worst window really held SMIs.
    j.expect(firmware is None or worst > 0, f"idle: blamed on the firmware with no SMI in the window: {firmware}")
    j.expect(worst > 0 or firmware is None, "idle: an SMI-free window blamed on the firmware")

injected = j.text(1, "injected")
j.expect(injected is not None and injected.strip() == "200", f"the injector raised {injected!r} SMIs, not 200")
smi = j.json_of(1, "smi", ok_codes=(0, 1))
if smi is not None and injected is not None and injected.strip().isdigit():
    n = int(injected)
    got, s = smi_of(smi, 1, "smi")
    if got is not None:
        # The firmware's own: at the idle run's rate, over twice the time, and at least 2.
        slack = max(2, 4 * own)
        j.expect(n <= got <= n + slack, f"smi: {got} SMIs counted on CPU 1, {n} raised (firmware's own ≤ {slack})")
        held = [w for w in s.get("windows", []) if w["count"] > 0]
        j.expect(sum(w["count"] for w in held) >= n, f"smi: the windows hold {sum(w['count'] for w in held)} SMIs")
        # The injection starts 3 s after the run (give or take the package's start-up).
        j.expect(held and min(w["start_s"] for w in held) >= 1.0, f"smi: SMIs before the injection: {held[:3]}")
        interf = smi.get("interference") or {}
        worst = (interf.get("worst_window") or {}).get("smi") or 0
        if worst > 0:
            j.expect("SMI" in (interf.get("firmware") or ""),
                     f"smi: the worst window held {worst} SMIs but was not blamed on the firmware: {interf.get('firmware')}")

j.expect(j.text(1, "msr-before") == j.text(1, "msr-after"), "the msr driver was not left as found")

hw = j.json_of(1, "hwlat", ok_codes=(0, 1, 3))
if hw is not None:
    h = hw.get("hwlat")
    if j.expect(h is not None, "hwlat: no hwlat section in the result"):
        j.expect(isinstance(h.get("gaps"), list), f"hwlat: no gap list: {list(h)}")
before, after = j.text(1, "hwlat-settings-before"), j.text(1, "hwlat-settings-after")
j.expect(before is not None and before == after, f"hwlat: tracer settings not put back:\n{before}\n---\n{after}")
j.expect("hwlat" in (j.text(1, "available_tracers") or ""), "the guest kernel offers no hwlat tracer")
j.finish()
