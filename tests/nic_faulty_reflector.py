#!/usr/bin/env python3
"""A fault-injecting EtherCAT reflector for the NIC tests (tests/nic/), written apart from rmp-eval (it shares no code):
answers EtherCAT frames on IFACE as a chain of --wkc SubDevices would for the probe's BRD (every datagram but
NOP gets its working counter raised by --wkc), with faults on request:

  --wkc-fault-every K   every K-th answer carries one less (a SubDevice that missed the datagram)
  --fault-first         …counting so that the first answer is among them (answers 1, K+1, 2K+1, …)
  --delay-ms D          every answer leaves D ms after its request
  --drop-every K        every K-th request gets no answer at all (a frame lost on the way)
  --twice               every answer is sent twice (a loop, or two chains answering one frame)

Frames whose source MAC has bit 0x02 set are answers already and are never answered. Prints "ready" once bound;
SIGTERM/SIGINT end it, printing "answered N" (N counts the requests taken, dropped ones too).
"""
import argparse
import heapq
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ECAT = 0x88A4


def answer(frame, add, wkc_fault):
    """The frame as the chain returns it, or None when it is not a well-formed EtherCAT request."""
    f = bytearray(frame)
    if len(f) < 16 or f[12:14] != b"\x88\xa4" or f[6] & 0x02:
        return None
    (hdr,) = struct.unpack_from("<H", f, 14)
    end = 16 + (hdr & 0x7FF)
    pos = 16
    while pos + 12 <= end:
        cmd = f[pos]
        (lenf,) = struct.unpack_from("<H", f, pos + 6)
        dlen = lenf & 0x7FF
        wkc_at = pos + 10 + dlen
        if wkc_at + 2 > end:
            return None
        if cmd != 0x00:
            (w,) = struct.unpack_from("<H", f, wkc_at)
            struct.pack_into("<H", f, wkc_at, (w + add - (1 if wkc_fault else 0)) & 0xFFFF)
        pos = wkc_at + 2
        if not lenf & 0x8000:
            break
    f[6] |= 0x02
    return bytes(f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("iface")
    p.add_argument("--wkc", type=int, default=1)
    p.add_argument("--wkc-fault-every", type=int, default=0)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--drop-every", type=int, default=0)
    p.add_argument("--twice", action="store_true")
    p.add_argument("--fault-first", action="store_true")
    a = p.parse_args()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ECAT))
    s.bind((a.iface, ETH_P_ECAT))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print("ready", flush=True)
    n = 0
    due = []  # (time, seq, frame)
    copies = 2 if a.twice else 1
    while not stop:
        now = time.monotonic()
        while due and due[0][0] <= now:
            out = heapq.heappop(due)[2]
            for _ in range(copies):
                s.send(out)
        timeout = max(0.0, due[0][0] - now) if due else 0.1
        try:
            r, _, _ = select.select([s], [], [], timeout)
        except InterruptedError:
            continue
        if not r:
            continue
        frame = s.recv(2048)
        n += 1
        k = n - 1 if a.fault_first else n
        fault = a.wkc_fault_every > 0 and k % a.wkc_fault_every == 0
        out = answer(frame, a.wkc, fault)
        if out is None:
            n -= 1
            continue
        if a.drop_every > 0 and n % a.drop_every == 0:
            continue
        if a.delay_ms > 0:
            heapq.heappush(due, (time.monotonic() + a.delay_ms / 1000.0, n, out))
        else:
            for _ in range(copies):
                s.send(out)
    print("answered", n, flush=True)


if __name__ == "__main__":
    sys.exit(main())
