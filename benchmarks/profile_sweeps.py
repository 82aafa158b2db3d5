"""Where the time of a GPU Givens sweep goes: rotations, accumulation, matrix products.

    python benchmarks/profile_sweeps.py

Removing p rows from a 12000 x 6000 factorization (000 Table 10), float32; each phase
timed with CUDA events, median of 5.
"""
import statistics

import cupy as cp
import numpy as np

from qrlab import stages
from qrlab.gpu import GpuExecutor, kernels, wave_rows


def timed(fn, reps=5):
    fn()
    out = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(out)


def main(m=12000, n=6000):
    rng = np.random.default_rng(0)
    for p in (20, 100, 200):
        op = stages.plan_delete_rows(m, n, p).stages[0].ops[0]
        B, nwaves, lo_t, hi_t = wave_rows(op)
        Q = cp.asarray(np.linalg.qr(rng.standard_normal((m, p)))[0].T, dtype=cp.float32)
        D0 = cp.ascontiguousarray(Q.T)
        tops = cp.asarray(op.tops, dtype=cp.int32)
        bottoms = cp.asarray(op.bottoms, dtype=cp.int32)
        C = cp.empty((nwaves, p), cp.float32)
        S = cp.empty((nwaves, p), cp.float32)
        res = {}
        for name, window in (("global", False), ("window", True)):
            smem = p * (2 * 4 + 4 + 16) + ((2 * p + 8) * p * 4 if window else 0)
            if smem > 200 * 1024:
                continue
            fn = kernels().get_function(
                "sweep_rotations_f32" if not window else "sweep_rotations_window_f32")
            fn.max_dynamic_shared_size_bytes = smem

            def go():
                D = D0.copy()
                fn((1,), (1024,), (D, np.int32(p), tops, bottoms, np.int32(B),
                                   np.int32(nwaves), C, S), shared_mem=smem)
            res[name] = timed(go)
        ex = GpuExecutor()
        R = cp.asarray(np.triu(rng.standard_normal((m, n))), dtype=cp.float32)
        Qf = cp.asarray(np.linalg.qr(rng.standard_normal((m, m // 4)))[0], dtype=cp.float32)
        Qf = cp.concatenate([Qf] * 4, axis=1)[:, :m]

        def whole():
            ex.sweeps(op, Qf.copy(), R.copy())
        res["whole sweeps op"] = timed(whole, 3)
        res["copies of Q and R alone"] = timed(lambda: (Qf.copy(), R.copy()), 3)
        print(f"p={p:4d} waves={nwaves}: " +
              ", ".join(f"{k} {v:.2f} ms" for k, v in res.items()), flush=True)


if __name__ == "__main__":
    main()
