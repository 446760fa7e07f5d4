"""fix's cpuset step in the PREEMPT_RT guest: an isolated partition now, no other task on the core, run inside it,
made again at boot, removed by rollback (the core takes tasks again), nothing left after a reboot."""
import sys

from judgelib import Judge, cpulist

j = Judge(sys.argv[1])
CORE = 1


def st(boot, name, f):
    t = j.text(boot, name, f)
    return None if t is None else t.strip()


def on_core(boot, name):
    """User-space processes allowed on CORE (the guest's "PID CPULIST CMDLINE" lines), as {pid: cmdline}."""
    out = {}
    for line in (j.text(boot, name, "tasks") or "").splitlines():
        pid, _, rest = line.partition(" ")
        cpus, _, cmd = rest.partition(" ")
        if cpus and CORE in cpulist(cpus):
            out[pid] = cmd.strip()
    return out


def samples(boot, name):
    t = j.text(boot, name + ".cpus") or ""
    return [int(c) for c in t.split() if c.isdigit()]


j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
j.expect(st(1, "before", "partition") == "<missing>", f"a partition before fix: {st(1, 'before', 'partition')}")
before = samples(1, "hogs-before")
j.expect(CORE in before, f"before fix the busy loops never ran on CPU {CORE} ({before}): the test cannot tell")
if j.command(1, "fix") is not None:
    j.expect(st(1, "after-fix", "partition") == "isolated",
             f"cpuset.cpus.partition after fix: {st(1, 'after-fix', 'partition')}")
    j.expect(cpulist(st(1, "after-fix", "effective") or "") == {CORE},
             f"the partition's CPUs: {st(1, 'after-fix', 'effective')}")
    root = cpulist(st(1, "after-fix", "root-effective") or "")
    j.expect(root and CORE not in root, f"the root cgroup still has CPU {CORE}: {root}")
    iso = st(1, "after-fix", "isolated")  # the root's cpuset.cpus.isolated: 6.8+ only ("<missing>" on 6.1)
    j.expect(iso == "<missing>" or CORE in cpulist(iso), f"cpuset.cpus.isolated after fix: {iso}")
    j.expect(st(1, "after-fix", "holder") == "active", "rmp-eval-rt.service is not running after fix")
    j.expect(len(on_core(1, "before")) > 1, f"before fix only {on_core(1, 'before')} may run on CPU {CORE}")
    # No task but the partition's own: fix's holder (`sleep infinity`) is the one process allowed there.
    j.expect(list(on_core(1, "after-fix").values()) == ["/bin/sleep infinity"],
             f"after fix these processes may still run on CPU {CORE}: {on_core(1, 'after-fix')}")
    after = samples(1, "hogs-after-fix")
    j.expect(after and CORE not in after, f"busy loops started after fix ran on CPU {CORE}: {after}")
    doc = j.json_of(1, "check", ok_codes=(0, 1))
    if doc:
        ci = next(c for c in doc["checks"] if c["id"] == "core_isolated")
        j.expect(ci["status"] == "pass" and "cgroup isolated partition rmp_eval_rt.slice" in ci["detail"],
                 f"core_isolated after fix: {ci}")
    # 0 all Great, 1 some samples outside, 3 too short to judge: a complete run (TCG latencies mean nothing).
    j.expect(j.rc(1, "run") in (0, 1, 3), f"run exited {j.rc(1, 'run')}: {j.text(1, 'run.err')}")
    j.expect("measuring inside the isolated cgroup partition rmp_eval_rt.slice" in (j.text(1, "run.err") or ""),
             f"run did not say it measured in the partition: {j.text(1, 'run.err')}")
    j.expect("rmp_eval_rt.slice" in (j.text(1, "run.cgroup") or ""),
             f"run's cgroup while measuring: {j.text(1, 'run.cgroup')}")
    allowed = (j.text(1, "run.allowed") or "").split()
    j.expect(allowed[-1:] == [str(CORE)], f"run's Cpus_allowed_list while measuring: {allowed}")

    # Boot 2: rmp-eval.service made the partition again.
    j.expect(st(2, "at-boot", "partition") == "isolated",
             f"after the reboot: cpuset.cpus.partition {st(2, 'at-boot', 'partition')} (apply-saved did not re-make it)")
    j.expect(list(on_core(2, "at-boot").values()) == ["/bin/sleep infinity"],
             f"after the reboot these processes may run on CPU {CORE}: {on_core(2, 'at-boot')}")
    at_boot = samples(2, "hogs-at-boot")
    j.expect(at_boot and CORE not in at_boot, f"after the reboot busy loops ran on CPU {CORE}: {at_boot}")
    if j.command(2, "rollback") is not None:
        j.expect(st(2, "after-rollback", "partition") == "<missing>",
                 f"after rollback: cpuset.cpus.partition {st(2, 'after-rollback', 'partition')}")
        j.expect(len(on_core(2, "after-rollback")) > 1,
                 f"after rollback only {on_core(2, 'after-rollback')} may run on CPU {CORE}")
        back = samples(2, "hogs-after-rollback")
        j.expect(CORE in back, f"after rollback the busy loops never ran on CPU {CORE}: {back}")
        units = j.text(2, "units-after-rollback") or ""
        j.expect("rmp-eval-rt" not in units, f"unit files left after rollback: {units}")
    j.expect(st(3, "third", "partition") == "<missing>", "a partition after rollback and a reboot")
j.finish()
