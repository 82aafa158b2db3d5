import sys, numpy as np, cupy as cp
from qrlab.cholesky import cholesky_update
from qrlab.gpu import GpuExecutor

orig = GpuExecutor.structured_passes

def timeit(f, reps=5):
    f(); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(); f(); b.record(); b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(ts))

ns = [int(x) for x in sys.argv[1].split(',')]
ks = [int(x) for x in sys.argv[2].split(',')]
dts = sys.argv[3].split(',')
for dt in dts:
    for n in ns:
        X = cp.random.standard_normal((n, n), dtype=dt) / n ** 0.5
        R = cp.triu(X) + 2 * cp.eye(n, dtype=dt)
        del X
        for k in ks:
            if n * k > 20000 * 1024: continue
            V = cp.random.standard_normal((n, k), dtype=dt) * (0.5 / k ** 0.5)
            GpuExecutor.structured_passes = lambda self, d, n_, k_: -(-k_ // 64)
            tp = timeit(lambda: cholesky_update(R, V))
            A = cholesky_update(R, V)
            GpuExecutor.structured_passes = lambda self, d, n_, k_: 0
            tc = timeit(lambda: cholesky_update(R, V))
            B = cholesky_update(R, V)
            GpuExecutor.structured_passes = orig
            rule = orig(GpuExecutor(), np.dtype(dt), n, k)
            err = float(cp.abs(A - B).max() / cp.abs(B).max())
            print(f"{dt} n={n} k={k} passes={tp:.3f} chain={tc:.3f} chain/passes={tc/tp:.2f} "
                  f"rule={rule} diff={err:.1e}", flush=True)
            del A, B
        del R
        cp.get_default_memory_pool().free_all_blocks()
