"""Host-side judging of what a scenario's guest recorded (tests/vm/guest/common.sh writes it).

The expectations here read the guest's /proc and /sys copies directly, independently of rmp-eval's own parsers,
so that a check that misreads the real kernel disagrees with them.
"""
import filecmp
import json
import os
import sys


class Judge:
    def __init__(self, out_dir):
        self.out = out_dir
        self.problems = []

    # --- reading what the guest recorded -------------------------------------------------------------------
    def path(self, boot, *parts):
        return os.path.join(self.out, f"b{boot}", *parts)

    def text(self, boot, *parts):
        try:
            with open(self.path(boot, *parts), encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def text_at(self, name):
        """A file the host side wrote into the share's out/ (not a boot's record)."""
        try:
            with open(os.path.join(self.out, name), encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def fact(self, boot, name):
        t = self.text(boot, "facts", name)
        return None if t is None or t.strip() == "<missing>" else t.strip()

    def rc(self, boot, name):
        t = self.text(boot, name + ".rc")
        return None if t is None else int(t.strip())

    def command(self, boot, name, ok_codes=(0,)):
        """A recorded command's stdout if it exited with one of ok_codes, else None (and a problem)."""
        rc = self.rc(boot, name)
        if rc is None:
            self.fail(f"boot {boot}: `{name}` never ran (earlier boots failed or the feature is missing)")
            return None
        if rc not in ok_codes:
            err = (self.text(boot, name + ".err") or "").strip().splitlines()
            self.fail(f"boot {boot}: `{name}` exited {rc}: {err[-1] if err else '(no stderr)'}")
            return None
        return self.text(boot, name)

    def json_of(self, boot, name, ok_codes=(0,)):
        out = self.command(boot, name, ok_codes)
        if out is None:
            return None
        try:
            return json.loads(out)
        except ValueError as e:
            self.fail(f"boot {boot}: `{name}` printed no valid JSON ({e}): {out[:200]!r}")
            return None

    # --- verdicts --------------------------------------------------------------------------------------------
    def fail(self, msg):
        self.problems.append(msg)

    def expect(self, cond, msg):
        if not cond:
            self.fail(msg)
        return cond

    def finish(self):
        for p in self.problems:
            print(p)
        sys.exit(1 if self.problems else 0)


def cpulist(text):
    """Parses a kernel CPU list ("0-2,5", "" or the "(null)" nohz_full prints when unset) into a set."""
    cpus = set()
    text = (text or "").strip()
    if text in ("", "(null)"):
        return cpus
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def cmdline_param(cmdline, key):
    """The value of the last key=value on a kernel command line (None if absent)."""
    val = None
    for word in (cmdline or "").split():
        k, eq, v = word.partition("=")
        if k == key and eq:
            val = v
    return val


def cmdline_cpus(cmdline, key):
    """CPUs of a parameter like isolcpus=managed_irq,domain,1 (flags before the list are skipped)."""
    val = cmdline_param(cmdline, key)
    if val is None:
        return None
    words = [w for w in val.split(",") if w and not w[0].isalpha()]
    return cpulist(",".join(words))


def expected_verdicts(j, boot, core):
    """What a handful of checks must say, derived from the raw files only: {check id: "pass" | "fail"}."""
    f = lambda n: j.fact(boot, n)  # noqa: E731
    cmd = f("cmdline") or ""
    exp = {}
    exp["preempt_rt"] = "pass" if f("realtime") == "1" or "PREEMPT_RT" in (f("version") or "") else "fail"
    swaps = (f("swaps") or "").strip().splitlines()[1:]
    exp["swap"] = "fail" if swaps else "pass"
    exp["timer_migration"] = "pass" if f("timer_migration") == "0" else "fail"
    exp["rt_throttling"] = "pass" if f("sched_rt_runtime_us") == "-1" else "fail"
    exp["stat_interval"] = "pass" if int(f("stat_interval") or 0) >= 10 else "fail"
    nb = f("numa_balancing")
    exp["numa_balancing"] = "pass" if nb in (None, "0") else "fail"
    cs = f("clocksource")
    if cs in ("tsc", "hpet", "arch_sys_counter"):
        exp["clocksource"] = "pass"
    elif cs == "jiffies":
        exp["clocksource"] = "fail"
    exp["core_isolated"] = "pass" if core in cpulist(f("isolated")) else "fail"
    nohz = cpulist(f("nohz_full"))
    exp["nohz_full"] = "pass" if core in nohz else "fail"
    rcu = cmdline_cpus(cmd, "rcu_nocbs")
    exp["rcu_nocbs"] = "pass" if (core in rcu if rcu is not None else core in nohz) else "fail"
    return exp


def check_findings(j, boot, name, core):
    """Loads `check --json` recorded as NAME, validates its shape and compares it with the raw files.
    Returns {id: status} (empty when unusable)."""
    # Exit status of check (docs/tasks/check.md): 0 clean, 1 a failure, 4 only warnings, 5 a reboot pending.
    doc = j.json_of(boot, name, ok_codes=(0, 1, 4, 5))
    if doc is None:
        return {}
    checks = doc.get("checks")
    if not j.expect(isinstance(checks, list) and checks, f"boot {boot}: {name}: no checks array"):
        return {}
    got = {}
    for c in checks:
        for key in ("id", "section", "title", "status", "detail", "remedy"):
            j.expect(key in c, f"boot {boot}: {name}: check {c.get('id')} lacks '{key}'")
        j.expect(c.get("status") in ("pass", "fail", "warn", "pending", "unknown", "info"),
                 f"boot {boot}: {name}: {c.get('id')} has status {c.get('status')!r}")
        j.expect(c.get("id") not in got, f"boot {boot}: {name}: {c.get('id')} reported twice")
        got[c.get("id")] = c.get("status")
        if c.get("status") == "fail" and c.get("remedy") is not None:
            j.expect(isinstance(c["remedy"], str) and c["remedy"], f"{c.get('id')}: remedy not a step id")
    statuses = set(got.values())
    want_rc = 1 if "fail" in statuses else 5 if "pending" in statuses else 4 if "warn" in statuses else 0
    j.expect(j.rc(boot, name) == want_rc,
             f"boot {boot}: {name} exited {j.rc(boot, name)}, its statuses {sorted(statuses)} give {want_rc}")
    for cid, want in expected_verdicts(j, boot, core).items():
        j.expect(got.get(cid) == want,
                 f"boot {boot}: check {cid} says {got.get(cid)!r} but the guest's own files say {want!r}")
    return got


def judge_cyclic(j, boot, name, results_name="results"):
    """`run --core 1 --duration 5 --json` recorded as NAME: a complete result with the stable keys, counts that fit
    5 s at 1 ms, a verdict that follows the buckets, and the result saved under results/."""
    # 0 = all within Great, 1 = some samples outside it, 3 = all Great but too short to trust (5 s): all complete
    # runs (TCG latencies are meaningless).
    verdict_rc = {"pass": 0, "fail": 1, "inconclusive": 3}
    doc = j.json_of(boot, name, ok_codes=tuple(verdict_rc.values()))
    if doc is None:
        return
    for key in ("period_us", "duration_s", "mode", "series", "rtt", "verdict"):
        j.expect(key in doc, f"{name} JSON lacks '{key}'")
    j.expect(doc.get("period_us") == 1000, f"period_us={doc.get('period_us')}, expected the default 1000")
    j.expect(doc.get("rtt") is None, "rtt must be null without --nic")
    j.expect(5.0 <= (doc.get("duration_s") or 0) < 6.0, f"duration_s {doc.get('duration_s')} for --duration 5")
    j.expect(doc.get("mode") == "cyclic", f"mode {doc.get('mode')!r} without --nic")
    j.expect(doc.get("verdict") in ("fail", "inconclusive"),
             f"verdict {doc.get('verdict')!r}: a 5 s run may fail or be inconclusive, never pass")
    series = doc.get("series") or []
    j.expect(len(series) >= 1, "no series in the result")
    for s in series:
        for key in ("label", "count", "min_us", "max_us", "max_index", "p50_us", "p99_us", "p999_us", "buckets"):
            j.expect(key in s, f"series {s.get('label')} lacks '{key}'")
        count = s.get("count") or 0
        # Under TCG most periods may be missed (the loop wakes late and skips them), but recorded + missed
        # periods must cover the run: a run that stopped early or ran on would not add up.
        periods = count + (s.get("missed") or 0)
        expected = (doc.get("duration_s") or 0) * 1e6 / (doc.get("period_us") or 1000)
        j.expect(count > 0 and 0.9 * expected <= periods <= 1.1 * expected,
                 f"series {s.get('label')}: {count} recorded + {s.get('missed')} missed periods in "
                 f"{doc.get('duration_s')} s at {doc.get('period_us')} us")
        b = s.get("buckets") or {}
        j.expect(set(b) >= {"great", "good", "poor", "bad", "pathetic"}, f"buckets keys {sorted(b)}")
        j.expect(sum(v for v in b.values() if isinstance(v, int)) == count,
                 f"series {s.get('label')}: buckets add up to {sum(b.values())}, count is {count}")
        p = [s.get(k) for k in ("p50_us", "p99_us", "p999_us", "max_us")]
        j.expect(all(isinstance(v, (int, float)) for v in p) and p == sorted(p),
                 f"series {s.get('label')}: p50 <= p99 <= p999 <= max does not hold: {p}")
        all_great = b.get("great") == count
        j.expect((doc.get("verdict") != "fail") == all_great,
                 f"verdict {doc.get('verdict')!r} with {count - (b.get('great') or 0)} samples outside Great")
    j.expect(j.rc(boot, name) == verdict_rc.get(doc.get("verdict")),
             f"{name} exited {j.rc(boot, name)} with verdict {doc.get('verdict')!r}")
    saved = (j.text(boot, results_name) or "").split()
    j.expect(any(n.endswith("-run.json") for n in saved), f"no <time>-run.json under results/: {saved}")


def judge_nic_run(j, boot, name, also=()):
    """`run --nic IF --duration 5 --json` recorded as NAME against `reflect` on the host's tap: replies matched,
    WKC 1, nothing lost, and as many answered as the host's reflector says it answered. Exit 0, 1 (latency outside
    Great or late replies are expected under TCG) or 3 (a clean 5 s run is too short to trust); 2 would mean no
    reply from the SubDevice. `also`: other NIC runs recorded in the same boot against the same reflector (its count
    covers them all)."""
    import re
    doc = j.json_of(boot, name, ok_codes=(0, 1, 3))
    if doc is None:
        return
    j.expect(doc.get("mode") == "ecat", f"mode {doc.get('mode')!r}, expected ecat (the default)")
    rtt = doc.get("rtt")
    if not j.expect(isinstance(rtt, dict), f"rtt is {rtt!r} in NIC mode"):
        return
    count = rtt.get("count") or 0
    # 5 s at 1 kHz; TCG may miss periods, but a run with a handful of replies did not work.
    j.expect(count >= 500, f"only {count} round trips matched in 5 s")
    # Independent evidence that the replies crossed the tap: the host's reflector counted what it answered
    # (a reply still in flight when the run ended may be answered but not counted by run).
    m = re.search(r"answered \d+ frames on \S+: (\d+) EtherCAT", j.text_at("host-reflect.log") or "")
    answered = int(m.group(1)) if m else None
    others = [j.json_of(boot, n, ok_codes=(0, 1, 3)) for n in also]
    matched = count + sum(((d or {}).get("rtt") or {}).get("count") or 0 for d in others)
    slack = 5 * (1 + len(others))
    j.expect(answered is not None and matched <= answered <= matched + slack,
             f"the host's reflect answered {answered} EtherCAT frames, the guest's runs matched {matched}")
    j.expect(rtt.get("lost") == 0, f"lost {rtt.get('lost')} frames")
    j.expect(rtt.get("wkc") == 1, f"working counter {rtt.get('wkc')!r}, expected 1 (one SubDevice)")
    j.expect(rtt.get("timestamps") in ("hardware", "software"), f"timestamps {rtt.get('timestamps')!r}")
    p = [rtt.get(k) for k in ("min_us", "p50_us", "p99_us", "max_us")]
    j.expect(all(isinstance(v, (int, float)) and v > 0 for v in p) and p == sorted(p),
             f"round-trip times out of order or not positive: {p}")


def interrupts(text):
    """/proc/interrupts as {row: (device name, [count per CPU])}: the numbered rows by IRQ number, the named ones
    (LOC, RES, …) by name; a row without a count for every CPU (ERR, MIS) is left out."""
    lines = (text or "").splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    rows = {}
    for line in lines[1:]:
        f = line.split()
        if not f or not f[0].endswith(":") or len(f) < ncpu + 1:
            continue
        counts = [int(x) for x in f[1:ncpu + 1] if x.isdigit()]
        if len(counts) == ncpu:
            key = f[0][:-1]
            rows[int(key) if key.isdigit() else key] = (f[-1], counts)
    return rows


def judge_nic_irq_path(j, boot, name, nic):
    """`run --nic IF --trace --json` recorded as NAME, with /proc/interrupts copied before and after it: some
    explained reply's receive path names an IRQ (`path.irq`) that /sys names the NIC's (`trace.nic_irqs`,
    `path.irq_of_nic`), and each IRQ named is one of the guest's with that
    device name, a virtio queue's (the NIC's: no other device interrupts per frame here), whose count on the CPU
    the trace gives grew during the run."""
    doc = j.json_of(boot, name, ok_codes=(0, 1, 3))
    if doc is None:
        return
    trace = doc.get("trace")
    if not j.expect(isinstance(trace, dict), "no trace in a run with --trace"):
        return
    j.expect(trace.get("nic") == nic, f"trace.nic {trace.get('nic')!r}, expected {nic!r}")
    paths = [e.get("path") for e in trace.get("explained") or [] if isinstance(e, dict) and e.get("path")]
    irqs = [p["irq"] for p in paths if isinstance(p.get("irq"), dict)]
    if not j.expect(irqs, f"no explained reply's path names the NIC's IRQ ({len(paths)} paths: {paths[:2]})"):
        return
    # The NIC's IRQs as /sys and /proc/interrupts name them, and every IRQ found judged one of them.
    listed = trace.get("nic_irqs") or []
    j.expect(listed, "trace.nic_irqs is empty: the NIC's IRQs were not found in /sys or /proc/interrupts")
    for p in paths:
        if isinstance(p.get("irq"), dict):
            n = p["irq"].get("id")
            j.expect(n in listed and p.get("irq_of_nic") is True,
                     f"IRQ {n}: irq_of_nic {p.get('irq_of_nic')!r}, the NIC's IRQs {listed}")
    before = interrupts(j.text(boot, "interrupts-before"))
    after = interrupts(j.text(boot, "interrupts-after"))
    for irq in irqs:
        n, dev, cpu = irq.get("id"), irq.get("name"), irq.get("cpu")
        row = after.get(n)
        if not j.expect(row is not None and n in before, f"IRQ {n} ({dev}) is not in the guest's /proc/interrupts"):
            continue
        j.expect(row[0] == dev, f"IRQ {n} is {row[0]!r} in /proc/interrupts, the trace says {dev!r}")
        j.expect("virtio" in row[0] and "config" not in row[0], f"IRQ {n} ({row[0]}) is not a virtio queue's")
        grew = isinstance(cpu, int) and 0 <= cpu < len(row[1]) and row[1][cpu] > before[n][1][cpu]
        j.expect(grew, f"IRQ {n} ({dev}) did not fire on CPU {cpu} during the run: {before[n][1]} -> {row[1]}")


def tree_differences(a, b):
    """Paths (relative) that are in one tree only, or whose bytes differ (not size and mtime: shallow=False)."""
    differ = []

    def walk(c, rel=""):
        differ.extend(os.path.join(rel, n) for n in c.left_only + c.right_only)
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        differ.extend(os.path.join(rel, n) for n in mismatch + errors)
        for n, sub in c.subdirs.items():
            walk(sub, os.path.join(rel, n))

    walk(filecmp.dircmp(a, b))
    return sorted(differ)


def files_differ(a, b):
    """True when both files exist and their bytes differ: proof that something changed them in between."""
    return os.path.exists(a) and os.path.exists(b) and not filecmp.cmp(a, b, shallow=False)


def judge_cmdline_cycle(j, boots=(1, 2, 3), core=1):
    """fix --core CORE in boots[0] → boots[1] has isolcpus/nohz_full/rcu_nocbs for CORE on /proc/cmdline (through
    the GRUB drop-in + update-grub) and check passes them → rollback → boots[2] has the first command line and
    byte-identical GRUB files; grub.cfg must have changed in between."""
    b1, b2, b3 = boots
    params = ("isolcpus", "nohz_full", "rcu_nocbs")
    before = j.fact(b1, "cmdline") or ""
    for p in params:
        j.expect(cmdline_cpus(before, p) is None, f"the untuned guest already has {p}= on its command line")
    check_findings(j, b1, "check", core)
    j.command(b1, "fix")
    after = j.fact(b2, "cmdline")
    if j.expect(after is not None, f"boot {b2} recorded no /proc/cmdline (the guest did not come back after fix)"):
        for p in params:
            cpus = cmdline_cpus(after, p)
            j.expect(cpus is not None and core in cpus and 0 not in cpus,
                     f"boot {b2}: /proc/cmdline has {p}={cpus and sorted(cpus)}, expected CPU {core} only: {after}")
        got = check_findings(j, b2, "check", core)
        for cid in ("core_isolated", "nohz_full", "rcu_nocbs"):
            j.expect(got.get(cid) == "pass", f"boot {b2}: check {cid} is {got.get(cid)!r} after fix and reboot")
        j.command(b2, "rollback")
    final = j.fact(b3, "cmdline")
    if j.expect(final is not None, f"boot {b3} recorded nothing (the guest did not come back after rollback)"):
        j.expect(final == before, f"boot {b3}: /proc/cmdline is {final!r}, before fix it was {before!r}")
        check_findings(j, b3, "check", core)
        g1, g3 = j.path(b1, "grub"), j.path(b3, "grub")
        differ = tree_differences(g1, g3)
        j.expect(not differ, f"GRUB files differ from before fix after rollback: {differ}")
        j.expect(os.path.exists(os.path.join(g3, "grub.cfg")), "no /boot/grub/grub.cfg recorded")
        # The fix must have changed grub.cfg in between, or the comparison above proves nothing.
        j.expect(files_differ(os.path.join(g1, "grub.cfg"), j.path(b2, "grub", "grub.cfg")),
                 "grub.cfg was the same after fix: update-grub did not run")


def load_json(path):
    """A JSON file the guest copied out, or None when it is missing or not JSON (the judge then says what lacks)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
