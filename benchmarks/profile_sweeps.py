"""Where the time of a GPU Givens sweep goes: computing the rotations, applying them.

    python benchmarks/profile_sweeps.py               (removing rows)
    python benchmarks/profile_sweeps.py insert_cols   (adding columns, each stage)

Removing p rows from a 12000 x 6000 factorization (000 Table 10), float32; each kernel
timed with CUDA events, the whole operation the median of 3.
"""
import statistics

import cupy as cp
import numpy as np

from qrlab import stages
import qrlab.gpu as gpu
from qrlab.gpu import GpuExecutor, wave_rows


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
    R = cp.asarray(np.triu(rng.standard_normal((m, n))), dtype=cp.float32)
    Qf = cp.asarray(np.linalg.qr(rng.standard_normal((m, m // 4)))[0], dtype=cp.float32)
    Qf = cp.concatenate([Qf] * 4, axis=1)[:, :m]
    for p in (20, 100, 200):
        op = stages.plan_delete_rows(m, n, p).stages[0].ops[0]
        nwaves = wave_rows(op)[1]
        ex, alone = GpuExecutor(), GpuExecutor()
        alone.overlap_groups = False
        res = {"whole sweeps op": timed(lambda: ex.sweeps(op, Qf.copy(), R.copy()), 3),
               "without overlap": timed(lambda: alone.sweeps(op, Qf.copy(), R.copy()), 3)}
        res.update({f"  {name}": t for name, t in
                    clocked(lambda: alone.sweeps(op, Qf.copy(), R.copy())).items()})
        res["copies of Q and R alone"] = timed(lambda: (Qf.copy(), R.copy()), 3)
        print(f"p={p:4d} waves={nwaves}: " +
              ", ".join(f"{k} {v:.2f} ms" for k, v in res.items()), flush=True)


class KernelClock:
    """Stands in for the compiled modules of ``qrlab.gpu``: every launch timed with CUDA
    events and summed by kernel name (cuBLAS products, where there are any, are the rest of
    an operation's time)."""

    def __init__(self, modules):
        self.modules, self.ms = modules, {}

    def of(self, module):
        clock = self

        class Module:
            def get_function(self, name):
                fn = clock.modules[module].get_function(name)

                class Timed:
                    def __setattr__(self, key, value):   # max_dynamic_shared_size_bytes
                        setattr(fn, key, value)

                    def __call__(self, *args, **kwargs):
                        a, b = cp.cuda.Event(), cp.cuda.Event()
                        a.record()
                        fn(*args, **kwargs)
                        b.record()
                        b.synchronize()
                        clock.ms[name] = clock.ms.get(name, 0.0) + cp.cuda.get_elapsed_time(a, b)
                return Timed()
        return Module()


def clocked(fn):
    """Run ``fn`` once with every kernel launch timed: {kernel: ms}.  Each launch is timed
    alone (a synchronization after it), so run it with ``overlap_groups = False``: beside
    the rotation kernel, the apply kernel would only be timed waiting for it."""
    clock = KernelClock({"kernels": gpu.kernels(), "cooperative": gpu.cooperative_kernels()})
    saved = gpu.kernels, gpu.cooperative_kernels
    gpu.kernels = lambda: clock.of("kernels")
    gpu.cooperative_kernels = lambda: clock.of("cooperative")
    try:
        fn()
    finally:
        gpu.kernels, gpu.cooperative_kernels = saved
    return clock.ms


def insert_cols(cases=((4000, 3000, 200, 0), (12000, 3000, 200, 0), (5000, 3000, 900, 2980))):
    """Adding p columns at k with full Q (000 Tables 2 and 5): each operation of the plan
    timed alone, and the sweep's kernels."""
    from qrlab import updates
    rng = np.random.default_rng(0)
    for m, n, p, k in cases:
        A = cp.asarray(rng.standard_normal((m, n)), dtype=cp.float32)
        Q, R = cp.linalg.qr(A, mode="complete")
        U = cp.asarray(rng.standard_normal((m, p)), dtype=cp.float32)
        ex = GpuExecutor()
        res = {"whole update": timed(lambda: updates._insert_cols(Q, R, U, k, "full", ex), 3),
               "W = Q^T U and [R W]": timed(lambda: cp.concatenate(
                   [R[:, :k], Q.T @ U, R[:, k:]], axis=1), 3)}
        R_w = cp.concatenate([R[:, :k], Q.T @ U, R[:, k:]], axis=1)
        plan = stages.plan_insert_cols(m, n, k, p)
        Q1, R1 = Q.copy(), R_w.copy()
        for op in plan.ops():                 # each op on the state the previous left
            Qc, Rc = Q1.copy(), R1.copy()
            name = type(op).__name__
            if name == "Reflect":
                res[f"Reflect {op.height}x{op.width}"] = timed(
                    lambda: ex.reflect(op, Qc.copy(), Rc.copy()), 3)
                ex.reflect(op, Q1, R1)
            else:
                B, nwaves, _, _ = wave_rows(op)
                res[f"Sweeps ({nwaves} waves)"] = timed(
                    lambda: ex.sweeps(op, Qc.copy(), Rc.copy()), 3)
                alone = GpuExecutor()
                alone.overlap_groups = False
                res["  without overlap"] = timed(lambda: alone.sweeps(op, Qc.copy(), Rc.copy()), 3)
                res.update({f"  {name}": t for name, t in
                            clocked(lambda: alone.sweeps(op, Qc.copy(), Rc.copy())).items()})
                res["copies of Q and R alone"] = timed(lambda: (Qc.copy(), Rc.copy()), 3)
        print(f"insert_cols m={m} n={n} p={p} k={k}: " +
              ", ".join(f"{a} {v:.2f} ms" for a, v in res.items()), flush=True)


if __name__ == "__main__":
    import sys
    insert_cols() if sys.argv[1:] == ["insert_cols"] else main()
