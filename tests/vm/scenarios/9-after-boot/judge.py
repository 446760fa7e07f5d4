"""The after-boot measurement: armed by fix, run by its unit after the reboot, compared, disarmed, not repeated."""
import sys

from judgelib import Judge

j = Judge(sys.argv[1])


def lines(boot, name):
    return [l for l in (j.text(boot, name) or "").split() if l]


def status(boot, doc):
    return next((c for c in doc["checks"] if c["id"] == "after_boot"), {}) if doc else {}


j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
if j.command(1, "fix") is not None:
    j.expect("after-boot.json" in lines(1, "state"), f"fix did not arm the after-boot measurement: {lines(1, 'state')}")
    j.expect(any(n.endswith("-before.json") for n in lines(1, "results")), "fix saved no before result")
    c1 = status(1, j.json_of(1, "check", ok_codes=(0, 1)))
    j.expect(c1.get("status") == "pending", f"check after fix: after_boot {c1}")
    unit = j.text(2, "after-unit") or ""
    j.expect("Result=success" in unit and "ExecMainStatus=0" in unit, f"the after-boot unit at boot 2: {unit}")
    after = [n for n in lines(2, "results") if n.endswith("-after.json")]
    j.expect(len(after) == 1, f"results after the reboot: {lines(2, 'results')}")
    j.expect("after-boot.json" not in lines(2, "state") and "after-boot-done.json" in lines(2, "state"),
             f"not disarmed after measuring: {lines(2, 'state')}")
    doc = j.json_of(2, "compare", ok_codes=(0, 1))
    j.expect(doc is not None and after and after[0] in str(doc), f"compare without arguments: {str(doc)[:300]}")
    c2 = status(2, j.json_of(2, "check", ok_codes=(0, 1)))
    j.expect(c2.get("status") == "info", f"check after the measurement: after_boot {c2}")
    j.expect("before" in (j.text(2, "report") or "").lower(), "no before/after report written")
    # Boot 3: nothing measured again.
    after3 = [n for n in lines(3, "results") if n.endswith("-after.json")]
    j.expect(after3 == after, f"a second reboot measured again: {after3}")
    j.expect("ConditionResult=no" in (j.text(3, "after-unit") or ""), f"unit at boot 3: {j.text(3, 'after-unit')}")
j.finish()
