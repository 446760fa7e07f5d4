#!/usr/bin/env python3
"""Captures a binary trace (per_cpu/cpuN/trace_pipe_raw pages) of `run --trace`'s cyclic events with the kernel's
own text of the same events, for the trace analysis benchmark (src/trace/bench.rs) and its tests.

In a tracefs instance of its own (so a run or test tracing at the same time is not disturbed): trace_clock mono,
the events of src/trace/tracefs.rs EVENTS on one CPU; a python SCHED_FIFO 50 loop on that CPU wakes every 1 ms and
marks every cycle ("rmp-eval c=CYCLE dl=DEADLINE_NS lat=LATENCY_NS", as the loop does) while a SCHED_FIFO 90
python spinner on the same CPU runs 300 us every 50 ms. Then per_cpu/cpuN/trace (text, not consuming) is saved
before trace_pipe_raw (binary, consuming), with events/header_page, the formats, saved_cmdlines and the kernel
symbols the text names.

Run as root:  bench/capture_ringbuf.py OUT_DIR [--cpu 1] [--cycles 3000]
"""

import argparse
import os
import re
import sys
import time

T = "/sys/kernel/tracing"
EVENTS = [
    "sched/sched_switch", "sched/sched_wakeup", "irq/irq_handler_entry", "irq/irq_handler_exit",
    "irq/softirq_entry", "irq/softirq_exit", "timer/hrtimer_expire_entry", "timer/hrtimer_expire_exit",
    "ipi/ipi_entry", "ipi/ipi_exit", "irq_vectors/reschedule_entry", "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry", "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry", "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry", "irq_vectors/irq_work_exit", "napi/napi_poll", "net/netif_receive_skb",
]


def put(path, value):
    with open(path, "w") as f:
        f.write(value)


def fifo(cpu, prio):
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))


def spinner(cpu):
    fifo(cpu, 90)
    while True:
        time.sleep(0.05)
        end = time.monotonic_ns() + 300_000
        while time.monotonic_ns() < end:
            pass


def loop(cpu, cycles, marker):
    fifo(cpu, 50)
    fd = os.open(marker, os.O_WRONLY)
    dl = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + 1_000_000
    for c in range(cycles):
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if dl > now:
            time.sleep((dl - now) / 1e9)
        lat = max(0, time.clock_gettime_ns(time.CLOCK_MONOTONIC) - dl)
        os.write(fd, f"rmp-eval c={c} dl={dl} lat={lat}".encode())
        dl += 1_000_000
    os.close(fd)


def save(out, name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def capture(inst, out, cpu, cycles):
    put(f"{inst}/trace_clock", "mono")
    put(f"{inst}/tracing_cpumask", f"{1 << cpu:x}")
    put(f"{inst}/per_cpu/cpu{cpu}/buffer_size_kb", "16384")
    enabled = [e for e in EVENTS if os.path.exists(f"{inst}/events/{e}/enable")]
    for e in enabled:
        put(f"{inst}/events/{e}/enable", "1")
    put(f"{inst}/tracing_on", "1")
    spin = os.fork()
    if spin == 0:
        try:
            spinner(cpu)
        finally:
            os._exit(1)
    child = os.fork()
    if child == 0:
        try:
            loop(cpu, cycles, f"{inst}/trace_marker")
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    os.kill(spin, 9)
    os.waitpid(spin, 0)
    put(f"{inst}/tracing_on", "0")
    for e in enabled:
        put(f"{inst}/events/{e}/enable", "0")
    with open(f"{inst}/per_cpu/cpu{cpu}/trace", "rb") as f:
        text = f.read()
    save(out, f"cpu{cpu}.txt", text)
    pages = bytearray()
    fd = os.open(f"{inst}/per_cpu/cpu{cpu}/trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK)
    while True:
        try:
            page = os.read(fd, 4096)
        except BlockingIOError:
            break
        if not page:
            break
        pages += page
    os.close(fd)
    save(out, f"cpu{cpu}.raw", bytes(pages))
    os.makedirs(os.path.join(out, "formats"), exist_ok=True)
    for e in enabled + ["ftrace/print"]:
        with open(f"{T}/events/{e}/format", "rb") as f:
            save(out, "formats/" + e.replace("/", "_"), f.read())
    for name in ["header_page", "saved_cmdlines"]:
        with open(f"{T}/{name}" if name == "saved_cmdlines" else f"{T}/events/{name}", "rb") as f:
            save(out, name, f.read())
    wanted = set(re.findall(rb"function=(\w+)", text))
    with open("/proc/kallsyms", "rb") as f:
        syms = [l for l in f if len(l.split()) >= 3 and l.split()[1] in (b"t", b"T") and l.split()[2] in wanted]
    save(out, "kallsyms", b"".join(syms))
    return len(pages), text.count(b"tracing_mark_write")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--cycles", type=int, default=3000)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    inst = f"{T}/instances/rmp-eval-capture-{os.getpid()}"
    os.mkdir(inst)
    try:
        size, marks = capture(inst, a.out, a.cpu, a.cycles)
    finally:
        os.rmdir(inst)
    print(f"{size} bytes of pages, {marks} markers, uname {os.uname().release}", file=sys.stderr)


if __name__ == "__main__":
    main()
