import sys, cupy as cp, numpy as np
from qrlab import stages
from qrlab.gpu import GpuExecutor
from qrlab.bench import Timer

def run(m, n, p, dt, hh):
    rng = np.random.default_rng(0)
    A = cp.asarray(rng.standard_normal((m, n)), dtype=dt)
    b = cp.asarray(rng.standard_normal(m), dtype=dt)
    Q, R = cp.linalg.qr(A, mode="complete")
    Rd = cp.concatenate([R, (Q.T @ b)[:, None]], axis=1)
    plan = stages.plan_delete_rows(m, n, p, 1, householder=hh)
    def prep():
        return Q.copy(), Rd.copy()
    def fn(Qw, Rw):
        GpuExecutor().run(plan, Qw, Rw)
    t, _ = Timer(cp)(fn, prep, 5)
    Qw, Rw = prep(); fn(Qw, Rw)
    Q1, R1 = Qw[p:, p:], Rw[p:]
    A1 = A[p:]
    err = float(cp.abs(Q1 @ R1[:, :n] - A1).max())
    orth = float(cp.abs(Q1.T @ Q1 - cp.eye(m - p, dtype=dt)).max())
    tri = float(cp.abs(cp.tril(R1[:, :n], -1)).max())
    res = float(cp.abs(Q1.T @ b[p:] - R1[:, n]).max())
    return t, err, orth, tri, res

for m, n, p in [(12000, 6000, 20), (12000, 6000, 100), (12000, 10000, 20), (12000, 10000, 100), (16000, 6000, 20), (16000, 6000, 100)]:
    for dt in (cp.float32, cp.float64):
        for hh in (False, True):
            t, e, o, tr, r = run(m, n, p, dt, hh)
            print(f"{m} {n} {p} {np.dtype(dt).name} hh={hh}: {t*1e3:.2f} ms  err {e:.1e} orth {o:.1e} tri {tr:.1e} d {r:.1e}", flush=True)
