"""Where the time of a fused-panel update goes: host issue time against device time.

    PYTHONPATH=. python benchmarks/profile_panels.py

For the Cholesky update (n, k) and the adding-rows case of 000 Table 8, times the whole
call, and one panel launch alone, on the host and on the device (cupyx.profiler); for the
one-launch triangle update (``kernels/triangle.cu``), the time stamps of every panel's
critical path: waiting for the previous panel, loading it, updating the new panel's
columns, factoring them, publishing.
"""
import functools

import cupy as cp
import numpy as np
from cupyx.profiler import benchmark

import qrlab.gpu as gpu
from qrlab import cholesky_update, qr_insert
from qrlab.gpu import GpuExecutor


@functools.lru_cache(maxsize=None)
def timed_kernels():
    """qrlab's kernels built with -DQRLAB_PHASE_TIMES (compiled once)."""
    return cp.RawModule(code="\n".join(p.read_text() for p in gpu._SOURCES),
                        options=("-std=c++17", "-DQRLAB_PHASE_TIMES"))


def phase_times(ex, args):
    """Cycles spent in each phase of one reflect_panel launch (block 0), in microseconds."""
    mod = timed_kernels()
    saved = gpu.kernels
    gpu.kernels = lambda: mod
    try:
        ex.launch_reflect(*args)
        cp.cuda.Device().synchronize()
    finally:
        gpu.kernels = saved
    t = cp.ndarray((8,), cp.int64, mod.get_global("qrlab_phase_times")).get()[:7]
    khz = cp.cuda.Device().attributes["ClockRate"]
    names = ["load", "factor", "Y=V^TJX", "Z=T^TY", "X-=VZ", "write"]
    return ", ".join(f"{a} {(t[i + 1] - t[i]) / khz * 1e3:.1f}" for i, a in enumerate(names))


def panel_trace(ex, R1, W):
    """Median microseconds per panel of each stage on the one launch's critical path (the
    first chunk of rows of W, whose panels follow each other), and the whole span."""
    npanels = -(-R1.shape[0] // 32)
    chunks = ex.triangle_chunks(*R1.shape, W.shape[0], W.dtype)
    trace = cp.zeros(8 * chunks * npanels, dtype=cp.int64)
    ex.triangle_update(R1, W, 1, trace=trace)
    tr = trace.get().reshape(chunks, npanels, 8)
    span = (tr[:, :, 4].max() - tr[:, :, 0].min()) / 1e3
    tr = tr[0]
    t = tr[1:, :5].astype(float) / 1e3
    prev = tr[:-1, 4] / 1e3
    stages = {"wait": t[:, 0] - prev, "load": t[:, 1] - t[:, 0], "update": t[:, 2] - t[:, 1],
              "factor": t[:, 3] - t[:, 2], "publish": t[:, 4] - t[:, 3],
              "per panel": t[:, 4] - prev}
    return (", ".join(f"{a} {np.median(v):.1f}" for a, v in stages.items())
            + f"; {chunks} chunks, span {span:.0f}")


def main():
    rng = np.random.default_rng(0)
    for n, k in [(5000, 1), (5000, 16), (5000, 64), (20000, 16), (3000, 500), (7000, 500)]:
        R = cp.asarray(np.triu(rng.standard_normal((n, n))), dtype=cp.float32)
        R -= 2 * n * cp.eye(n, dtype=cp.float32)          # a negative diagonal
        W = cp.asarray(rng.standard_normal((k, n)) * 0.01, dtype=cp.float32)
        ex = GpuExecutor()
        for _ in range(2):
            line = panel_trace(ex, R.copy(), W.copy())
        print(f"one launch n={n} k={k}, us per panel: {line}")
    for n, k in [(1000, 16), (5000, 16), (5000, 256)]:
        X = cp.asarray(rng.standard_normal((n + 10, n)), dtype=cp.float32)
        R = cp.linalg.cholesky(X.T @ X / n + cp.eye(n, dtype=cp.float32)).T.copy()
        V = cp.asarray(rng.standard_normal((n, k)) * 0.01, dtype=cp.float32)
        r = benchmark(cholesky_update, (R, V), n_repeat=5, n_warmup=2)
        print(f"cholesky_update n={n} k={k}: cpu {np.median(r.cpu_times)*1e3:.2f} ms, "
              f"gpu {np.median(r.gpu_times)*1e3:.2f} ms")
        ex = GpuExecutor()
        R1 = cp.triu(R) * -1
        W = V.T.copy()
        w = ex.panel_width(k, R.dtype)
        for c0 in (0, n - 2 * w):
            r = benchmark(ex.launch_reflect, (R1, c0, w, W, 0, k, 1, True, c0, w, n),
                          n_repeat=20, n_warmup=2)
            print(f"   one panel launch at column {c0}: cpu {np.median(r.cpu_times)*1e6:.1f} us, "
                  f"gpu {np.median(r.gpu_times)*1e6:.1f} us")
            print("      phases (us):", phase_times(ex, (R1, c0, w, W, 0, k, 1, True, c0, w, n)))
    m, n, p = 8000, 3000, 500
    A = cp.asarray(rng.standard_normal((m, n)), dtype=cp.float32)
    R = cp.linalg.qr(A, mode="r")
    U = cp.asarray(rng.standard_normal((p, n)), dtype=cp.float32)
    r = benchmark(qr_insert, (None, R, U, 0, "row"), n_repeat=5, n_warmup=1)
    print(f"qr_insert rows m={m} n={n} p={p}: cpu {np.median(r.cpu_times)*1e3:.2f} ms, "
          f"gpu {np.median(r.gpu_times)*1e3:.2f} ms")


if __name__ == "__main__":
    main()
