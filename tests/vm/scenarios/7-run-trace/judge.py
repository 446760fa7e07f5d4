"""run --trace on the PREEMPT_RT kernel with CPU 1 in nohz_full (after fix --only cmdline and a reboot).

Quiet run: the tick truth — check's nohz_full passes and the tick verdict follows the traced tick count (stopped at
<= 2/s, else explained), every traced tick expiry had a local timer interrupt (the guest's /proc/interrupts LOC
row before and after the run), tracefs mount state put back. Spun run (--break-us): a SCHED_FIFO 90 shell spinning
on CPU 1 is the top culprit by pid, with remedy rt_core_threads, of some kept window; the worst explained cycle is
the series' worst, and it is the spinner's or a stall the trace diagnosed (a host stall under TCG is as long as a
burst and lands anywhere).
"""
import sys

from judgelib import Judge, cmdline_cpus, cpulist, interrupts, judge_cyclic

j = Judge(sys.argv[1])
CORE = 1

j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.command(1, "fix")
cmdline = j.fact(2, "cmdline") or ""
cpus = cmdline_cpus(cmdline, "nohz_full")
j.expect(cpus == {CORE}, f"boot 2: nohz_full={cpus} on /proc/cmdline, expected CPU {CORE}: {cmdline}")
j.expect(cpulist(j.fact(2, "nohz_full")) == {CORE},
         f"boot 2: /sys/devices/system/cpu/nohz_full is {j.fact(2, 'nohz_full')!r}")
j.expect(j.fact(2, "realtime") == "1", "boot 2: not the PREEMPT_RT kernel")

judge_cyclic(j, 2, "quiet")
judge_cyclic(j, 2, "spun")


def loc(text):
    """CPU 1's local timer interrupts: its count in the LOC row of /proc/interrupts."""
    row = interrupts(text).get("LOC")
    return row[1][CORE] if row else None


def trace_of(name, windows=(1, 1)):
    """The trace of the run recorded as NAME; `windows`: how many explained windows it may hold (min, max)."""
    doc = j.json_of(2, name, ok_codes=(0, 1, 3))
    if doc is None:
        return None, None
    t = doc.get("trace")
    if not j.expect(isinstance(t, dict), f"{name}: no trace in the result"):
        return doc, None
    j.expect(t.get("cpu") == CORE, f"{name}: trace of CPU {t.get('cpu')}")
    for ev in ("sched_switch", "sched_wakeup", "irq_handler_entry", "softirq_entry", "hrtimer_expire_entry"):
        j.expect(ev in (t.get("events") or []), f"{name}: event {ev} not recorded: {t.get('events')}")
    j.expect((t.get("marks") or 0) > 0, f"{name}: no cycle marked in the trace")
    n = len(t.get("explained") or [])
    j.expect(windows[0] <= n <= windows[1], f"{name}: {n} windows explained, expected {windows[0]}–{windows[1]}")
    return doc, t


# Quiet run: tick truth on the nohz_full core.
doc, t = trace_of("quiet")
if t is not None:
    i = doc.get("interference") or {}
    ticks = i.get("ticks") or {}
    traced = ticks.get("traced_ticks_per_s")
    j.expect(traced is not None and traced == t.get("ticks_per_s"),
             f"quiet: traced_ticks_per_s {traced} is not the trace's ticks_per_s {t.get('ticks_per_s')}")
    j.expect((ticks.get("nohz_full_check") or "").startswith("pass"),
             f"quiet: check's nohz_full on the tuned core says {ticks.get('nohz_full_check')!r}")
    v = ticks.get("verdict") or ""
    if traced is not None:
        stopped = traced <= 2.0
        j.expect(("the tick is stopped" in v) == stopped and ("although check says nohz_full passes" in v) != stopped,
                 f"quiet: {traced} ticks/s traced but the verdict says {v!r}")
        a, b = loc(j.text(2, "interrupts-before")), loc(j.text(2, "interrupts-after"))
        if j.expect(a is not None and b is not None, "no LOC row in the guest's /proc/interrupts"):
            # Every tick hrtimer expiry runs in a local timer interrupt: the trace cannot count more than LOC did.
            j.expect(traced * (doc.get("duration_s") or 0) <= (b - a) + 1,
                     f"quiet: {traced} ticks/s over {doc.get('duration_s')} s traced, but CPU {CORE} took only "
                     f"{b - a} local timer interrupts in the whole run")
j.expect(j.text(2, "mounts-before") == j.text(2, "mounts-after"), "tracefs mount state not put back after --trace")
tracers = j.text(2, "available_tracers") or ""
if t is not None:
    # The RT kernel's binary pages were decoded (not the text fallback): the attribution below comes from them.
    j.expect(t.get("reader") == "raw", f"quiet: --trace read {t.get('reader')!r}, not the binary pages")
    j.expect(t.get("timerlat_available") == ("timerlat" in tracers.split()),
             f"timerlat_available {t.get('timerlat_available')} but available_tracers is {tracers.strip()!r}")

# Spun run (--break-us 10000: the worst 20 windows over 10 ms): the FIFO 90 shell is named in its windows by pid,
# and the worst cycle is either the spinner's or a stall the trace diagnosed as outside the CPU's events (a host
# stall under TCG: hundreds of ms with no handler run, as long as a burst of the spinner).
BREAK_US, MAX_WINDOWS = 10000, 20
doc, t = trace_of("spun", windows=(1, MAX_WINDOWS))
pid = int((j.text(2, "spinner.pid") or "0").strip() or 0)
STALL = ("no handler ran in between", "was idle", "nothing traced on CPU")


def spinners(e):
    """The explanation names the spinner as its top culprit, by pid, with its priority and remedy."""
    top = (e.get("culprits") or [{}])[0]
    return (top.get("kind") == "thread" and top.get("id") == pid and top.get("prio") == "FIFO/RR 90"
            and (top.get("remedy") or {}).get("id") == "rt_core_threads"
            and f"(pid {pid}, FIFO/RR 90)" in (e.get("verdict") or ""))


if t is not None and t.get("explained"):
    ex = t["explained"]
    s = (doc.get("series") or [{}])[0]
    j.expect(t.get("break_us") == BREAK_US, f"spun: break_us {t.get('break_us')}, the run asked {BREAK_US}")
    j.expect((t.get("over_break") or 0) >= len(ex), f"spun: {t.get('over_break')} cycles over {BREAK_US} µs "
             f"but {len(ex)} windows kept")
    lates = [e.get("late_us") or 0 for e in ex]
    j.expect(lates == sorted(lates, reverse=True), f"spun: windows not worst first: {lates}")
    j.expect(all(x >= BREAK_US - 1 for x in lates), f"spun: a window under --break-us: {lates}")
    worst = ex[0]
    j.expect(worst.get("cycle") == s.get("max_index"),
             f"spun: worst explained cycle {worst.get('cycle')} is not the series' worst {s.get('max_index')}")
    stall = not any(c.get("kind") == "thread" for c in worst.get("culprits") or []
                    if (c.get("ran_us") or 0) >= 0.2 * (worst.get("late_us") or 0)) \
        and any(w in (worst.get("verdict") or "") for w in STALL)
    j.expect(spinners(worst) or stall,
             f"spun: the worst cycle is neither the FIFO 90 spinner's (pid {pid}) nor a diagnosed stall: "
             f"{worst.get('verdict')!r}, culprits {(worst.get('culprits') or [])[:2]}")
    named = [e.get("cycle") for e in ex if spinners(e)]
    j.expect(named, f"spun: none of the {len(ex)} windows over {BREAK_US} µs names the FIFO 90 spinner pid {pid}: "
             + "; ".join(repr((e.get("verdict") or "")[:120]) for e in ex[:3]))
j.finish()
