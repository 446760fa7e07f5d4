"""qemu's igb in the guest: the driver's per-queue IRQs named by check as /proc/interrupts names them, round trips
through AF_PACKET and AF_XDP (native XDP, copy mode, no program left) with each frame's arrival at reflect's
distributed clock and its SYNC0 margin consistent, --rxq refused on a driver without ntuple
filters with nothing changed, --txq 1 proven by the queue's counter, fix pinning the NIC's IRQs to the RT core and
setting coalescing through the driver; after a reboot with the NIC brought up late, the watcher pinning the IRQs igb
requests then; rollback putting both back."""
import re
import sys

from judgelib import Judge

j = Judge(sys.argv[1])
j.expect(j.rc(1, "dpkg") == 0, "dpkg -i of the package failed in the guest")
nic = (j.text(1, "nic") or "").strip()
j.expect((j.text(1, "driver") or "").strip().endswith("/igb"), f"the guest's NIC is not igb: {j.text(1, 'driver')}")

# Per-queue IRQs, from the guest's /proc/interrupts (not through rmp-eval): "ens4-rx-0", "ens4-TxRx-0", …
procirq = j.text(1, "facts", "interrupts") or ""
queues = {}
for line in procirq.splitlines():
    m = re.match(r"\s*(\d+):.*\s" + re.escape(nic) + r"-((?:TxRx|rx|tx)-\d+)\s*$", line)
    if m:
        queues[m.group(2)] = int(m.group(1))
j.expect(len(queues) >= 2, f"igb shows no per-queue IRQs for {nic}: {procirq[:300]}")
check = j.json_of(1, "check", ok_codes=(0, 1, 4, 5))
if check is not None:
    found = {c["id"]: c for c in check["checks"]}
    qi = found.get("nic_queue_irqs")
    if j.expect(qi is not None, "check has no nic_queue_irqs"):
        for q, irq in queues.items():
            j.expect(f"{q} IRQ {irq} " in qi["detail"], f"nic_queue_irqs does not name {q} as IRQ {irq}: {qi['detail']}")
    j.expect(found.get("nic_driver", {}).get("detail") == "igb", f"nic_driver: {found.get('nic_driver')}")


def rtt_of(name):
    r = j.json_of(1, name, ok_codes=(0, 1))
    if r is None:
        return None
    t = r.get("rtt") or {}
    j.expect(t.get("count", 0) > 1000 and t.get("lost") == 0, f"{name}: {t.get('count')} measured, {t.get('lost')} lost")
    arrival_of(name, r, t)
    return t


SHIFT_US = 2000


def arrival_of(name, r, t):
    """Each frame's arrival at reflect's SubDevice, read back from its distributed clock through the guest's igb:
    measured, its counts agreeing with the round trips (none lost: each frame's latch read but the last's, each
    interval between two of them recorded, give or take the first and last frames), the clocks' drift a rate a clock can have, and the SYNC0 margin the
    arithmetic of its own figures."""
    a = t.get("arrival") or {}
    if not j.expect(a.get("measured") is True, f"{name}: arrival not measured: {a}"):
        return
    n, latches = t.get("count", 0), a.get("latches", 0)
    j.expect(a.get("unanswered") == 0 and a.get("zero") == 0 and a.get("unlatched") == 0,
             f"{name}: arrival datagrams unanswered or unlatched: {a}")
    j.expect(n - 3 <= latches <= n, f"{name}: {latches} receive times read for {n} round trips")
    series = {s.get("label"): s for s in r.get("series") or []}
    count = (series.get("Arrival") or {}).get("count", 0)
    j.expect(latches - 3 <= count <= latches - 1, f"{name}: {count} arrival intervals from {latches} receive times")
    drift = a.get("drift_ppm")
    # Both clocks count seconds (the guest's CLOCK_MONOTONIC under TCG follows the host's): NTP never slews more
    # than 500 ppm.
    j.expect(isinstance(drift, (int, float)) and abs(drift) < 500, f"{name}: drift {drift} ppm")
    s = a.get("sync0") or {}
    if not j.expect(s.get("shift_us") == SHIFT_US, f"{name}: no SYNC0 margin at {SHIFT_US} us: {a}"):
        return
    late, frames, mx = s.get("late"), s.get("frames", 0), (s.get("after_start") or {}).get("max_us", 0)
    j.expect(s.get("settling") == 1024 and frames + 1024 == latches,
             f"{name}: {frames} frames judged + {s.get('settling')} settling, {latches} receive times")
    j.expect(s.get("after_start", {}).get("count") == frames, f"{name}: after_start counts {s.get('after_start')}")
    j.expect(abs(s.get("min_margin_us", 1e9) - (SHIFT_US - mx)) < 0.01 and s.get("smallest_shift_us") == max(0, -(-mx // 1)),
             f"{name}: margin {s.get('min_margin_us')}, smallest shift {s.get('smallest_shift_us')}, latest arrival {mx}")
    # None late exactly when the latest arrival came before SYNC0 (the count is the histogram's, to its 0.1 %).
    if not j.expect(isinstance(late, int) and 0 <= late <= frames, f"{name}: {late} late of {frames}"):
        return
    if abs(SHIFT_US - mx) > 0.002 * mx + 1:
        j.expect((late == 0) == (mx < SHIFT_US),
                 f"{name}: {late} late of {frames}, latest arrival {mx} us, shift {SHIFT_US} us")
    j.expect((s.get("late_rate") or {}).get("cycles") == late, f"{name}: late rate {s.get('late_rate')}")
    print(f"{name}: {latches} arrivals, drift {drift} ppm, after the cycle's start p50 "
          f"{s['after_start'].get('p50_us')} us, max {mx} us; {late} late at {SHIFT_US} us", file=sys.stderr)


packet = rtt_of("packet")
if packet is not None:
    j.expect(packet.get("path") == "af_packet", f"packet: path {packet.get('path')}")
    # Hardware stamps where the driver stamps every received frame; the 82576 igb emulates stamps PTP frames only
    # (its driver refuses HWTSTAMP_FILTER_ALL with ERANGE): then software stamps, with that reason in the result.
    why = (packet.get("stamps") or {}).get("why_software") or ""
    caps = j.text(1, "tstamp-caps") or ""
    if packet.get("timestamps") == "software":
        j.expect("every received frame" in why or " all" not in caps,
                 f"packet: software stamps, reason {why!r}, although ethtool -T lists: {caps[-300:]}")
    j.expect(packet.get("timestamps") == "hardware" or why, f"packet: software stamps without a reason: {packet.get('stamps')}")
xdp = rtt_of("xdp")
if xdp is not None:
    x = xdp.get("xdp") or {}
    j.expect(xdp.get("path") == "af_xdp", f"xdp: path {xdp.get('path')}")
    j.expect(x.get("xdp_mode") == "native", f"xdp: igb has native XDP, the run got {x}")
    # 6.1's igb has no AF_XDP zero-copy (6.6 added it): copy mode, with the refusal's reason.
    j.expect(x.get("zero_copy") is False and x.get("why_copy"), f"xdp: zero-copy claimed or unexplained: {x}")
link = j.text(1, "link-after-xdp") or ""
# igb restarts the port to detach a native program: the run ends once the link is back, as it found it.
j.expect("LOWER_UP" in link, f"the AF_XDP run left {nic} without its link: {link.splitlines()[:1]}")
j.expect("prog/xdp" not in link and "xdp" not in link.split("link/ether")[0], f"an XDP program left on {nic}: {link}")

# --txq 1: the frames left on queue 1, by the driver's own counter (tx_queue_1_packets), not assumed.
txq = j.json_of(1, "txq", ok_codes=(0, 1))
if txq is not None:
    q = (txq.get("rtt") or {}).get("queue") or {}
    tx = q.get("tx") or {}
    j.expect(q.get("txq") == 1 and tx.get("verified") is True, f"--txq 1 not verified by the queue counters: {q}")
    j.expect("1" in tx.get("counter", ""), f"--txq 1 verified from another queue's counter: {tx}")

# --rxq 1 needs an ntuple rule; qemu's igb has ntuple-filters off [fixed].
j.expect(j.rc(1, "rxq") == 2, f"--rxq 1 on igb without ntuple: exit {j.rc(1, 'rxq')}")
err = (j.text(1, "rxq.err") or "").strip().splitlines()
j.expect(len(err) == 1 and "--rxq 1" in err[0], f"--rxq 1: not one line naming it: {err}")
j.expect(j.text(1, "rules-before") == j.text(1, "rules-after"), "--rxq 1 left a flow rule behind")

# fix: every IRQ of the NIC on the RT core (CPU 1), next to the thread waiting for the frames, read from /proc/irq
# directly.
j.expect(j.rc(1, "fix") in (0, 1), f"fix exited {j.rc(1, 'fix')}: {(j.text(1, 'fix.err') or '')[-300:]}")
for q, irq in queues.items():
    after = (j.text(1, "after-fix", "irq", str(irq)) or "").strip()
    j.expect(after == "1", f"after fix, {q} (IRQ {irq}) has affinity {after!r}, not the RT core 1")
cb, cf = (j.text(1, f"coalesce-{s}") or "" for s in ("before", "after-fix"))
usecs = lambda t: (re.search(r"^rx-usecs:\s*(\S+)", t, re.M) or [None, None])[1]
j.expect(usecs(cf) == "0" and usecs(cb) != "0", f"coalescing through the driver: rx-usecs {usecs(cb)} → {usecs(cf)}")

# Boot 2: the NIC was still down when the boot ended, so igb had requested no queue IRQ (nothing to pin at boot);
# the watcher the udev rule started was waiting, and pinned every queue IRQ once the NIC came up.
def queue_irqs(boot, where):
    found = {}
    for line in (j.text(boot, where, "facts", "interrupts") or "").splitlines():
        m = re.match(r"\s*(\d+):.*\s" + re.escape(nic) + r"-((?:TxRx|rx|tx)-\d+)\s*$", line)
        if m:
            found[m.group(2)] = int(m.group(1))
    return found


j.expect(queue_irqs(2, "at-boot") == {}, f"igb had queue IRQs before the NIC was brought up: {queue_irqs(2, 'at-boot')}")
watcher = j.text(2, "watcher-at-boot") or ""
j.expect("ActiveState=active" in watcher, f"rmp-eval-nic@{nic}.service was not running at boot: {watcher}")
up = queue_irqs(2, "after-up")
j.expect(set(up) == set(queues), f"after the bring-up, queue IRQs {sorted(up)}, boot 1 had {sorted(queues)}")
for q, irq in up.items():
    got = (j.text(2, "after-up", "irq", str(irq)) or "").strip()
    j.expect(got == "1", f"after the reboot and bring-up, {q} (IRQ {irq}) has affinity {got!r}, not the RT core 1 "
             f"(watcher log: {(j.text(2, 'watcher-log') or '')[-300:]})")
j.expect(usecs(j.text(2, "coalesce-after-up") or "") == "0", "after the reboot, the coalescing fix set is not back")

# rollback (in boot 2): each queue IRQ and the coalescing back as boot 1 found them.
j.expect(j.rc(2, "rollback") == 0, f"rollback exited {j.rc(2, 'rollback')}: {(j.text(2, 'rollback.err') or '')[-300:]}")
for q, irq in up.items():
    before = (j.text(1, "irq", str(queues.get(q, -1))) or "").strip()
    back = (j.text(2, "after-rollback", "irq", str(irq)) or "").strip()
    j.expect(back == before, f"after rollback, {q} (IRQ {irq}) has affinity {back!r}, was {before!r}")
cr = j.text(2, "coalesce-after-rollback") or ""
j.expect(usecs(cr) == usecs(cb), f"rollback left rx-usecs {usecs(cr)}, was {usecs(cb)}")
j.finish()
