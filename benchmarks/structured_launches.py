"""The structured Cholesky update in one launch (the apply following the solve) against
two (the apply after the solve, ``GpuExecutor.structured_follow = False``).

    PYTHONPATH=. python3 benchmarks/structured_launches.py time float64:10000:1 ...
    PYTHONPATH=. ncu --profile-from-start off --clock-control none -k regex:structured_apply \\
        --section SpeedOfLight --section Occupancy \\
        python3 benchmarks/structured_launches.py ncu float64:10000:1

``time``: for each case (dtype:n:k), twice, the median of 9 calls of
``qrlab.cholesky_update`` into a new array (CUDA events, L2 flushed before each) each way.
``ncu``: one call with two launches, after three to warm up, between cudaProfilerStart
and Stop, so that Nsight Compute sees the apply's launch alone.
"""
import statistics
import sys

import cupy as cp
import numpy as np

import qrlab
import qrlab.gpu as gpu
from cholesky_bench import Clock   # (after qrlab: it puts its own checkout on sys.path)


def factor(dtype, n, k):
    X = cp.random.standard_normal((n, n), dtype=dtype)
    R = cp.ascontiguousarray(cp.linalg.cholesky(X.T @ X / n + cp.eye(n, dtype=dtype)).T)
    V = cp.random.standard_normal((n, k), dtype=dtype)
    return R, V * (0.9 / cp.linalg.norm(V))


def median_us(clock, R, V, follow, reps=9):
    gpu.GpuExecutor.structured_follow = follow
    times = []
    for rep in range(reps + 1):                     # (the first one warms up)
        ms, _ = clock(lambda: qrlab.cholesky_update(R, V))
        if rep:
            times.append(ms * 1e3)
    return statistics.median(times)


def main(mode, cases):
    clock = Clock(cp)
    for case in cases:
        name, n, k = case.split(":")
        R, V = factor(np.dtype(name), int(n), int(k))
        if mode == "time":
            for _ in range(2):
                print(f"{case}: one launch {median_us(clock, R, V, True):.1f} us, "
                      f"two launches {median_us(clock, R, V, False):.1f} us", flush=True)
        else:
            gpu.GpuExecutor.structured_follow = False
            for _ in range(3):
                qrlab.cholesky_update(R, V)
            cp.cuda.Device().synchronize()
            cp.cuda.runtime.profilerStart()
            qrlab.cholesky_update(R, V)
            cp.cuda.Device().synchronize()
            cp.cuda.runtime.profilerStop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
