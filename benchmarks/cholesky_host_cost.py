"""What a structured Cholesky update costs when nothing else keeps the GPU busy.

    PYTHONPATH=. python3 benchmarks/cholesky_host_cost.py [--parts]

``cholesky_bench.py`` flushes the L2 cache before each timed call, and the flush keeps the
GPU busy while the call's host code runs: its times are the GPU's work.  A caller that
makes one update after another, with nothing queued before each, also waits for the host
code before the launch and after the report.  Per case (``qrlab.cholesky_update(R, v)``,
k = 1, into a new array; the median of 20 calls after 5 untimed): CUDA events around a
call queued on an idle GPU (the host's work before the launch included); the host's
microseconds from the call's start to its launch queued; and the wall-clock time a call
of 50 made back to back.  With ``--parts``, also where the host's time goes: the median
over the 20 calls of when (us from the call's start) each step of the call's path begins
(``>``) and ends (``<``): ``cholesky._validate``, ``GpuExecutor.structured_passes``,
``cholesky._structured``, ``GpuExecutor.structured_update_passes``,
``GpuExecutor._structured_plan_for``, ``GpuExecutor._structured_launch`` (which makes the
workspace, ``gpu._structured_workspaces``, and queues the kernel) and
``gpu._structured_outcome`` (the wait for the report); each stamp costs about a
microsecond.
"""
import functools
import statistics
import sys
import time

import cupy as cp
import numpy as np

import qrlab
from qrlab import cholesky, gpu

launch, marks = gpu.GpuExecutor._structured_launch, {}
parts = "--parts" in sys.argv[1:]
steps = []                                  # (name, time) of the call's steps (--parts)


def launch_marked(self, *args, **kwargs):
    report = launch(self, *args, **kwargs)
    marks["launched"] = time.perf_counter()
    return report


def stamped(f, name):
    @functools.wraps(f)
    def g(*args, **kwargs):
        steps.append((name + ">", time.perf_counter()))
        result = f(*args, **kwargs)
        steps.append((name + "<", time.perf_counter()))
        return result
    return g


gpu.GpuExecutor._structured_launch = launch_marked
if parts:
    for owner, name in ((cholesky, "_validate"), (gpu.GpuExecutor, "structured_passes"),
                        (cholesky, "_structured"),
                        (gpu.GpuExecutor, "structured_update_passes"),
                        (gpu.GpuExecutor, "_structured_plan_for"),
                        (gpu.GpuExecutor, "_structured_launch"),
                        (gpu, "_structured_workspaces"), (gpu, "_structured_outcome")):
        setattr(owner, name, stamped(getattr(owner, name), name))
for dt in ("float32", "float64"):
    for n in (1000, 2000, 5000, 10000):
        rng = np.random.default_rng(0)
        R = cp.triu(cp.asarray(rng.standard_normal((n, n)), dtype=dt)) + n * cp.eye(n, dtype=dt)
        v = cp.asarray(rng.standard_normal((n, 1)).astype(dt))
        for _ in range(5):
            qrlab.cholesky_update(R, v)
        events, before, when = [], [], []
        for _ in range(20):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            cp.cuda.Device().synchronize()
            start.record()
            steps.clear()
            t0 = time.perf_counter()
            qrlab.cholesky_update(R, v)
            t1 = time.perf_counter()
            end.record()
            end.synchronize()
            events.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
            before.append((marks["launched"] - t0) * 1e6)
            when.append([(name, (t - t0) * 1e6) for name, t in steps]
                        + [("return", (t1 - t0) * 1e6)])
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(50):
            qrlab.cholesky_update(R, v)
        cp.cuda.Device().synchronize()
        each = (time.perf_counter() - t0) / 50 * 1e6
        print(f"{dt} n={n} k=1: events on an idle GPU {statistics.median(events):.1f} us, "
              f"host to the launch {statistics.median(before):.1f} us, "
              f"back to back {each:.1f} us a call", flush=True)
        if parts:
            print("    " + ", ".join(f"{name} {statistics.median(w[i][1] for w in when):.1f}"
                                     for i, (name, _) in enumerate(when[0])), flush=True)
