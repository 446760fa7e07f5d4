"""Host-side judging of what a scenario's guest recorded (tests/vm/guest/common.sh writes it).

The expectations here read the guest's /proc and /sys copies directly, independently of rmp-eval's own parsers,
so that a check that misreads the real kernel disagrees with them.
"""
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
    if cs in ("tsc", "hpet"):
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
    # Exit status of check (docs/guide.md): 0 clean, 1 a failure, 4 only warnings, 5 a reboot pending.
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
