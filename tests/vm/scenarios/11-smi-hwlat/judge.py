"""SMIs raised through port 0xB2 are counted by run exactly (± the firmware's own); SMIs on the housekeeping CPU
do not get the RT core's worst cycle blamed on the firmware, nor does an unchanged run; run --hwlat reads real
gaps and leaves every tracer setting as it found it.

qemu's pc machine (PIIX4) raises the SMI of an APM write on the first CPU whatever CPU wrote the port (measured
in this guest: 50 writes from CPU 1 → CPU 0's MSR_SMI_COUNT +50, CPU 1's +0), so the count is judged on CPU 0,
the housekeeping CPU run counts beside the RT core. SMIs on the RT core itself need q35's per-CPU delivery."""
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


HOUSEKEEPING = 0
idle = j.json_of(1, "idle", ok_codes=(0, 1))
own = 0
if idle is not None:
    own, s = smi_of(idle, HOUSEKEEPING, "idle")
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
    got, s = smi_of(smi, HOUSEKEEPING, "smi")
    if got is not None:
        # The firmware's own: at the idle run's rate, over twice the time, and at least 2.
        slack = max(2, 4 * own)
        j.expect(n <= got <= n + slack, f"smi: {got} SMIs counted on CPU {HOUSEKEEPING}, {n} raised (firmware's own ≤ {slack})")
        rt, _ = smi_of(smi, 1, "smi")
        interf = smi.get("interference") or {}
        worst = (interf.get("worst_window") or {}).get("smi") or 0
        # The RT core's own windows: what its count says, and no blame where they hold none.
        j.expect(sum(w["count"] for w in s.get("windows", [])) == (rt or 0),
                 f"smi: the RT core's windows {s.get('windows')} do not add up to its count {rt}")
        if worst == 0:
            j.expect(interf.get("firmware") is None,
                     f"smi: SMIs on CPU {HOUSEKEEPING} only, yet the RT core's worst cycle was blamed on the firmware")
        else:
            j.expect("SMI" in (interf.get("firmware") or ""),
                     f"smi: the worst window held {worst} SMIs but was not blamed on the firmware")

j.expect(j.text(1, "msr-before") == j.text(1, "msr-after"), "the msr driver was not left as found")

hw = j.json_of(1, "hwlat", ok_codes=(0, 1, 3))
if hw is not None:
    h = hw.get("hwlat")
    if j.expect(h is not None, "hwlat: no hwlat section in the result"):
        gaps = h.get("gaps")
        if j.expect(isinstance(gaps, list), f"hwlat: no gap list: {list(h)}"):
            j.expect(h.get("total") == len(gaps) + h.get("dropped", 0), f"hwlat: total {h.get('total')} ≠ {len(gaps)} gaps")
            j.expect(all(g["cpu"] in h["cpus"] for g in gaps), f"hwlat: a gap on a CPU not traced: {gaps[:3]}")
            j.expect(h.get("unparsed", 0) == 0, f"hwlat: {h.get('unparsed')} lines of the real tracer not parsed")
before, after = j.text(1, "hwlat-settings-before"), j.text(1, "hwlat-settings-after")
j.expect(before is not None and before == after, f"hwlat: tracer settings not put back:\n{before}\n---\n{after}")
j.expect("hwlat" in (j.text(1, "available_tracers") or ""), "the guest kernel offers no hwlat tracer")
j.finish()
