"""How much of an update's CUDA-event time the GPU spends waiting for the host.

    PYTHONPATH=. python3 benchmarks/host_gaps.py float32 float64 > FILE.log
    PYTHONPATH=. python3 benchmarks/host_gaps.py --gc > FILE.log
    PYTHONPATH=. python3 benchmarks/host_gaps.py --cold > FILE.log

For one cell of each of 000's timing tables, the update that ``python -m qrlab.bench``
times (``qrlab.bench.case_setup``: the factors and the solve for x), its inputs made
once, so that every call runs on the same inputs:

* event ms: the median of 5 calls timed as the benchmark times them (CUDA events around
  the call, nothing queued before it), after 3 warm-up calls; the GPU idles wherever the
  host has not yet queued the next operation;
* host ms with the GPU busy: a one-thread kernel spinning for 60 (or 120) ms is queued
  first, so that the whole update is queued behind it and runs without gaps; the call
  returns when its last read of the device does (the solve's test of R's diagonal, at
  the end), so its host time is the spin plus the update's own GPU time.  Once with
  Python's profiler on, which names the functions that took the most host time (the one
  that waits holds the spin), twice without;
* Python calls: function calls under the profiler.

With ``--gc``: three cells timed as the benchmark times them, 12 calls in a row, in rounds
with Python's garbage collector on and off (collected before each round), and the time
each call spent in collections (``gc.callbacks``).

With ``--cold``: how long the host takes to queue work right after it has waited for
the GPU (a synchronize, as before every timed call) against once it has been busy.
Host microseconds of single CuPy operations and qrlab launches, 8 in a row after each
synchronize (the median over 5 rounds, the GPU kept busy by the spin so that no call
waits); then the host time of removing 80 rows of 12000 x 8000 in float64 (Table 10)
from the call to its solve for x (the update's last step), plain and after 3 or 50 ms of
busy Python.

The GPU time is host time minus the spin; the spin's length follows the SM clock, so with
both spins it is ``2 h60 - h120`` (if the clock stays the same through both).  Single
calls: differences of 0.2 ms are within what repeated calls differ by.
"""
import cProfile
import gc
import io
import pstats
import statistics
import sys
import time

import cupy as cp
import numpy as np

from qrlab import bench


def setup(case, dt):
    """The case's update as ``qrlab.bench.run_case`` times it, as a callable of no
    arguments, on inputs made here once."""
    update, _, make, _ = bench.case_setup(cp, case, dt)
    args = make()
    return lambda: update(*args)


SPIN = cp.RawKernel(r"""extern "C" __global__ void spin(long long t)
{ long long s = clock64(); while (clock64() - s < t) {} }""", "spin")


def busy_after_sync(spin_ms):
    """A synchronize, then one thread spinning ``spin_ms`` on the GPU (SM clocks): what
    the host queues next waits behind it, so the host never waits for the GPU."""
    khz = cp.cuda.Device().attributes["ClockRate"]
    cp.cuda.Device().synchronize()
    SPIN((1,), (1,), (np.int64(spin_ms * khz),))


def host_profile(f, spin_ms=60.0, profile=True):
    """Host time of f() with the GPU kept busy beforehand (spin_ms): the host never waits
    for the GPU unless f reads the device; and the functions that took most host time."""
    busy_after_sync(spin_ms)
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    if profile:
        pr.enable()
    f()
    if profile:
        pr.disable()
    host = 1e3 * (time.perf_counter() - t0)
    cp.cuda.Device().synchronize()
    if not profile:
        return host, 0, []
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(6)
    lines = [line for line in out.getvalue().splitlines() if line.strip()[:1].isdigit()]
    ncalls = sum(v[1] for v in pstats.Stats(pr).stats.values())
    return host, ncalls, lines[:6]


CELLS = [("T2", 4000, 3000, 200, 3000), ("T2", 12000, 3000, 200, 0),
         ("T3", 8000, 6000, 200, 0), ("T5", 5000, 3000, 100, 2980),
         ("T5", 8000, 3000, 1500, 2980), ("T6", 6000, 3000, 500, 0),
         ("T7", 6000, 3000, 2000, 500), ("T8", 8000, 3000, 500, 0),
         ("T9", 8000, 1000, 200, 0), ("T9", 8000, 7000, 1500, 0),
         ("T10", 12000, 6000, 20, 0), ("T11", 8000, 6000, 100, 0)]


def paper_cell(key):
    """The case of ``qrlab.bench.paper_cases`` with key (table, m, n, p, k)."""
    return next(c for c in bench.paper_cases()
                if (c["table"], c["m"], c["n"], c["p"], c["k"]) == key)


def event_ms(update, calls):
    """``update()`` as the benchmark times it: the median ms of ``calls`` calls with CUDA
    events around each (nothing queued before it), after 3 warm-up calls."""
    for _ in range(3):
        update()
    return statistics.median(1e3 * bench.timed_call(cp, update, ()) for _ in range(calls))


def main(dtypes):
    for dt in dtypes:
        for key in CELLS:
            update = setup(paper_cell(key), dt)
            event = event_ms(update, 5)
            host, ncalls, top = host_profile(update)
            host120, _, _ = host_profile(update, spin_ms=120.0, profile=False)
            host60, _, _ = host_profile(update, spin_ms=60.0, profile=False)
            print(dt, *key, "event ms %.3f | host ms with GPU busy: profiled %.2f (spin 60),"
                  " plain %.2f (spin 60) %.2f (spin 120); %d Python calls"
                  % (event, host, host60, host120, ncalls), flush=True)
            for line in top:
                print("     ", line[:150])


def gc_rounds():
    """Whether Python's garbage collector holds up the calls (see the module's text)."""
    pauses = []
    _t = {}

    def cb(phase, info):
        if phase == "start":
            _t["t"] = time.perf_counter()
        else:
            pauses.append(1e3 * (time.perf_counter() - _t["t"]))
    gc.callbacks.append(cb)
    print("objects tracked", len(gc.get_objects()), "thresholds", gc.get_threshold(),
          flush=True)
    for dt, key in (("float32", ("T5", 5000, 3000, 100, 2980)),
                    ("float64", ("T2", 4000, 3000, 200, 3000)),
                    ("float32", ("T10", 12000, 6000, 20, 0))):
        f = setup(paper_cell(key), dt)
        for _ in range(3):
            f()
        for _ in range(3):
            for off in (False, True):
                gc.collect()
                if off:
                    gc.disable()
                ts, gcs = [], []
                for _ in range(12):
                    pauses.clear()
                    ts.append(1e3 * bench.timed_call(cp, f, ()))
                    gcs.append(sum(pauses))
                gc.enable()
                print(dt, key[0], "gc off" if off else "gc on ",
                      "median %.2f" % statistics.median(ts), " ".join("%.2f" % t for t in ts),
                      "| gc ms per call:", " ".join("%.1f" % g for g in gcs), flush=True)


def cold():
    """How much slower the host queues work just after a synchronize (see the module's
    text)."""
    from qrlab import gpu
    dt = np.float64
    Q = cp.random.random((12000, 12000)).astype(dt)
    out = cp.empty_like(Q)
    small = cp.zeros((80, 4000), dtype=dt)
    ex = gpu.GpuExecutor()
    ops = {"cupy.empty": lambda: cp.empty((80, 4000), dtype=dt),
           "fill": lambda: small.fill(0),
           "transposed copy": lambda: cp.ascontiguousarray(small.T),
           "copy_rows": lambda: gpu.copy_rows(Q, (0, 80), out=out, rows=(0, 80)),
           "tall_qr": lambda: ex.tall_qr(Q[0:80, 8000:].T)}
    for f in ops.values():
        f()
    print("host us of one operation, calls 1 to 8 after a synchronize (median of 5):")
    for name, f in ops.items():
        rounds = []
        for _ in range(5):
            busy_after_sync(50)
            ts = []
            for _ in range(8):
                t = time.perf_counter()
                f()
                ts.append(1e6 * (time.perf_counter() - t))
            rounds.append(ts)
        print("  %-16s" % name, " ".join("%6.1f" % statistics.median(c) for c in zip(*rounds)),
              flush=True)
    del Q, out
    update = setup(paper_cell(("T10", 12000, 8000, 80, 0)), "float64")
    for _ in range(3):
        update()
    marks = []                          # when the update reaches its solve
    solve = bench.solve_triangular
    bench.solve_triangular = lambda *a, **k: marks.append(time.perf_counter()) or solve(*a, **k)

    def to_solve(busy_ms):
        busy_after_sync(100)
        t = time.perf_counter()
        while time.perf_counter() - t < busy_ms / 1e3:
            pass
        marks.clear()
        t = time.perf_counter()
        update()
        cp.cuda.Device().synchronize()
        return 1e6 * (marks[0] - t)
    for busy in (0, 3, 50, 0, 3, 50):
        print("float64 T10 12000 x 8000, p = 80: host us from the call to the solve, after"
              " %d ms of busy Python:" % busy, " ".join("%.0f" % to_solve(busy) for _ in range(6)),
              flush=True)
    bench.solve_triangular = solve


if __name__ == "__main__":
    if sys.argv[1:] == ["--gc"]:
        gc_rounds()
    elif sys.argv[1:] == ["--cold"]:
        cold()
    else:
        main(sys.argv[1:])
