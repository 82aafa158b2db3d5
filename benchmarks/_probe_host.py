import statistics, time, cProfile, pstats, io
import numpy as np, cupy as cp
import qrlab.updates as U, qrlab.gpu as G
from qrlab.backend import executor_for, solve_triangular

marks = []
orig_coop = G.cooperative_kernels


class CK:
    def get_function(self, name):
        fn = orig_coop().get_function(name)
        if not name.startswith("sweep_strips"):
            return fn

        class W:
            def __setattr__(self, a, v):
                setattr(fn, a, v)

            def __call__(self, *a, **kw):
                marks.append(time.perf_counter())
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record(); fn(*a, **kw); e.record()
                marks.append((s, e))
        return W()


G.cooperative_kernels = lambda: CK()
ex = executor_for(cp, "blocked")
rng = np.random.default_rng(0)


def case(m, n, p, dt, reps=7, prof=False):
    A = cp.asarray(rng.uniform(-1, 1, (m, n)), dtype=dt)
    b = cp.asarray(rng.uniform(-1, 1, m), dtype=dt)
    Q, R = cp.linalg.qr(A, mode="complete")
    Rd = cp.concatenate([R, (Q.T @ b)[:, None]], axis=1)

    def upd():
        Q1, R1 = U._delete_rows(Q, Rd, 0, p, "full", ex, nc=1)
        return solve_triangular(R1[:n, :n], R1[:n, n])
    upd()
    rows = []
    for r in range(reps):
        cp.cuda.Device().synchronize()
        marks.clear()
        s, e = cp.cuda.Event(), cp.cuda.Event()
        h0 = time.perf_counter()
        s.record(); upd(); e.record()
        h1 = time.perf_counter()
        e.synchronize()
        a, z = marks[1]
        rows.append((cp.cuda.get_elapsed_time(s, e), (h1 - h0) * 1e3, (marks[0] - h0) * 1e3,
                     cp.cuda.get_elapsed_time(s, a), cp.cuda.get_elapsed_time(a, z)))
    med = [statistics.median(x[i] for x in rows) for i in range(5)]
    print(f"{np.dtype(dt).name} {m}x{n} p={p}: gpu total {med[0]:.3f}  host enqueue {med[1]:.3f}"
          f"  host at strips launch {med[2]:.3f}  gpu strips start {med[3]:.3f} dur {med[4]:.3f}",
          flush=True)
    if prof:
        cp.cuda.Device().synchronize()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(5):
            upd()
        pr.disable()
        cp.cuda.Device().synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
        print(s.getvalue()[:6000])


for dt in (np.float32, np.float64):
    for m, n, p in [(12000, 6000, 20), (12000, 6000, 100), (12000, 10000, 100), (16000, 6000, 100)]:
        case(m, n, p, dt)
