"""When a rank-1 structured Cholesky update's call ends: at the GPU's work or at the host.

    PYTHONPATH=. python3 benchmarks/cholesky_call_end.py [--seen-events]

Times ``qrlab.cholesky_update(R, v)`` (CuPy, into a new array: the solve and the apply in
one launch) for float32 and float64, n = 5000 and 10000, as ``cholesky_bench.py`` does:
CUDA events around the call after the L2 cache is flushed.  It also records an event right
after the launch (on the stream, so it fires when the kernel ends) and the host's clock
when the call starts, when its launch has been queued, when it has seen the report (the
pinned word that the solve's last block writes) and when it returns.  Per case, the median
over 8 calls (after one untimed) of: the call (start to the event after the return); the
GPU's work (start to the event after the launch); the host's microseconds from seeing the
report to returning, for the whole call, and from the call's start to the launch queued.
Where the call is longer than the GPU's work, the event after the return fired after the
kernel's end: the host had not returned by then.

With ``--seen-events`` the call also records an event as soon as the host has seen the
report and another just before it returns, and each case's line gives when they fired
(from the start event; each fires no earlier than the kernel's end, so one that fires
later than that was queued later).  Making them costs the host some microseconds, so the
other figures are then those of a slightly longer call.
"""
import statistics
import sys
import time

import cupy as cp
import numpy as np

import qrlab
from qrlab import gpu

stamps = {}
launch, outcome = gpu.GpuExecutor._structured_launch, gpu._structured_outcome


def launch_marked(self, *args, **kwargs):
    report = launch(self, *args, **kwargs)
    stamps["kernel end"] = cp.cuda.Event()
    stamps["kernel end"].record()
    stamps["launched"] = time.perf_counter()
    return report


seen_events = "--seen-events" in sys.argv[1:]


def outcome_marked(report, n):
    result = outcome(report, n)
    stamps["seen"] = time.perf_counter()
    if seen_events:
        stamps["seen event"] = cp.cuda.Event()
        stamps["seen event"].record()
    return result


gpu.GpuExecutor._structured_launch = launch_marked
gpu._structured_outcome = outcome_marked
flush = cp.empty(256 * 2**20 // 4, dtype=cp.float32)
for dt in ("float32", "float64"):
    for n in (5000, 10000):
        rng = np.random.default_rng(0)
        R = cp.triu(cp.asarray(rng.standard_normal((n, n)), dtype=dt)) + n * cp.eye(n, dtype=dt)
        rows = []
        for rep in range(9):
            v = cp.asarray(rng.standard_normal((n, 1)).astype(dt))
            cp.cuda.Device().synchronize()
            flush.fill(1.0)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            t0 = time.perf_counter()
            out = qrlab.cholesky_update(R, v)    # (held until the next call's)
            t1 = time.perf_counter()
            if seen_events:
                returned = cp.cuda.Event()
                returned.record()
            end.record()
            end.synchronize()
            if rep:
                rows.append((cp.cuda.get_elapsed_time(start, end) * 1e3,
                             cp.cuda.get_elapsed_time(start, stamps["kernel end"]) * 1e3,
                             (t1 - stamps["seen"]) * 1e6, (t1 - t0) * 1e6,
                             (stamps["launched"] - t0) * 1e6)
                            + ((cp.cuda.get_elapsed_time(start, stamps["seen event"]) * 1e3,
                                cp.cuda.get_elapsed_time(start, returned) * 1e3)
                               if seen_events else ()))
        call, work, tail, whole, queued, *events = (statistics.median(c) for c in zip(*rows))
        print(f"{dt} n={n} k=1: call {call:.1f} us, GPU work (event after launch) {work:.1f},"
              f" host: report seen -> return {tail:.1f}, whole call {whole:.1f},"
              f" call -> launched {queued:.1f}"
              + (f"; events: report seen {events[0]:.1f}, return {events[1]:.1f}"
                 if seen_events else ""), flush=True)
