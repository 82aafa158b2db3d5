import statistics
import cupy as cp, numpy as np
from qrlab import gpu, householder as hh
def timed(fn, reps=5):
    fn(); out = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event(); a.record(); fn(); b.record(); b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(out)
m, n, p = 12000, 3000, 200
rng = np.random.default_rng(0)
Q = cp.asarray(rng.standard_normal((m, m)), dtype=cp.float32)
P = cp.asarray(rng.standard_normal((m - n, p)), dtype=cp.float32)
ex = gpu.GpuExecutor()
V, T, Rp = ex.factor_panel(P)
print("factor_panel (geqrf, V, T)", timed(lambda: ex.factor_panel(P)))
print("  qr raw", timed(lambda: cp.linalg.qr(P, mode="raw")))
print("apply_wy_right Q[:, n:]", timed(lambda: hh.apply_wy_right(Q[:, n:], V, T)))
def inplace():
    Q[:, n:] = hh.apply_wy_right(Q[:, n:], V, T)
print("  with the write back", timed(inplace))
Qc = cp.ascontiguousarray(Q[:, n:])
print("  contiguous operand", timed(lambda: hh.apply_wy_right(Qc, V, T)))
print("  one GEMM Qc @ V", timed(lambda: Qc @ V))
