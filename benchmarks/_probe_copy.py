import statistics
import numpy as np, cupy as cp
import qrlab.updates as U, qrlab.gpu as G
from qrlab.backend import executor_for, solve_triangular

ex = executor_for(cp, "blocked")
rng = np.random.default_rng(0)


def case(m, n, p, dt, reps=8):
    A = cp.asarray(rng.uniform(-1, 1, (m, n)), dtype=dt)
    b = cp.asarray(rng.uniform(-1, 1, m), dtype=dt)
    Q, R = cp.linalg.qr(A, mode="complete")
    Rd = cp.concatenate([R, (Q.T @ b)[:, None]], axis=1)

    def upd():
        Q1, R1 = U._delete_rows(Q, Rd, 0, p, "full", ex, nc=1)
        return Q1, R1, solve_triangular(R1[:n, :n], R1[:n, n])
    res, times = {}, {False: [], True: []}
    for v in (False, True):
        G.GpuExecutor.copies_behind = v
        res[v] = upd()
    for r in range(reps):
        for v in (False, True):
            G.GpuExecutor.copies_behind = v
            cp.cuda.Device().synchronize()
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record(); upd(); e.record(); e.synchronize()
            times[v].append(cp.cuda.get_elapsed_time(s, e))
    same = all(bool(cp.array_equal(a, b)) for a, b in zip(res[False], res[True]))
    a, b = statistics.median(times[False]), statistics.median(times[True])
    print(f"{np.dtype(dt).name} {m}x{n} p={p}: before {a:.3f} behind {b:.3f} ms ({b / a - 1:+.1%})"
          f"  bitwise-equal {same}", flush=True)
    G.GpuExecutor.copies_behind = True


for dt in (np.float32, np.float64):
    for m, n, p in [(12000, 6000, 20), (12000, 6000, 60), (12000, 6000, 100), (12000, 10000, 20),
                    (12000, 10000, 100), (8000, 6000, 20), (8000, 6000, 100),
                    (16000, 6000, 20), (16000, 6000, 100)]:
        case(m, n, p, dt)
