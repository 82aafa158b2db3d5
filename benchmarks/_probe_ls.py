import time, numpy as np, cupy as cp, qrlab
from qrlab import graphs
rng = np.random.default_rng(0)
m, n = 2000, 200
X = cp.asarray(rng.standard_normal((m + 100, n)))
y = cp.asarray(rng.standard_normal(m + 100))
def t(label, fn, reps=5):
    fn(); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); cp.cuda.Device().synchronize(); ts.append(time.perf_counter() - t0)
    print(f"{label}: {1e3*np.median(ts):.2f} ms", flush=True)
with graphs.using(False):
    for q in ("full", "thin"):
        ls = qrlab.LeastSquaresQR(X[:m], y[:m], q=q)
        state = {"t": 0}
        def add():
            ls.add_rows(X[m], y[m:m + 1])
        def rem():
            ls.remove_rows(0, 1)
        def both():
            add(); rem()
        t(f"{q} add+remove", both)
        t(f"{q} solve", ls.solve)
        ls.add_rows(X[m], y[m:m + 1]); cp.cuda.Device().synchronize()
        t0 = time.perf_counter(); ls.remove_rows(0, 1); cp.cuda.Device().synchronize()
        print(q, "remove once", 1e3 * (time.perf_counter() - t0))
        t0 = time.perf_counter(); ls.add_rows(X[m], y[m:m + 1]); cp.cuda.Device().synchronize()
        print(q, "add once", 1e3 * (time.perf_counter() - t0))
        ls.remove_rows(0, 1)
        print(q, "layouts", ls.R.flags.c_contiguous, ls.R.flags.f_contiguous, ls.R.shape, ls.Q.shape, ls.Q.flags.c_contiguous)
        Q, R = ls.Q, ls.R[:, :n].copy() if q == "full" else ls.R[:, :n].copy()
        t(f"{q} public delete row", lambda: qrlab.qr_delete(Q, R, 0, 1, "row"))
        t(f"{q} public insert row end", lambda: qrlab.qr_insert(Q, R, X[m], m, "row"))
    from cupyx.profiler import benchmark
    ls = qrlab.LeastSquaresQR(X[:m], y[:m], q="full")
    print(benchmark(lambda: (ls.add_rows(X[m], y[m:m + 1]), ls.remove_rows(0, 1)), n_repeat=5))
