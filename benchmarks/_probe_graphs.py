import time, numpy as np, cupy as cp, qrlab
from qrlab import graphs

def wall(call, n=50):
    for _ in range(3): call()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            call(); cp.cuda.Device().synchronize()
        ts.append((time.perf_counter() - t0) / n * 1e3)
    return np.median(ts)

def host(call, n=50):
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    t1 = time.perf_counter()
    cp.cuda.Device().synchronize()
    return (t1 - t0) / n * 1e3

rng = np.random.default_rng(0)
for dt in (np.float64,):
    for m, n in ((500, 50), (2000, 200)):
        A = cp.asarray(rng.standard_normal((m, n)), dtype=dt)
        Q, R = cp.linalg.qr(A, mode="complete")
        row = cp.asarray(rng.standard_normal(n), dtype=dt)
        for name, f in (("delete col", lambda cf: qrlab.qr_delete(Q, R, n // 2, 1, "col", check_finite=cf)),
                        ("insert row", lambda cf: qrlab.qr_insert(Q, R, row, m // 2, "row", check_finite=cf)),
                        ("delete row", lambda cf: qrlab.qr_delete(Q, R, m // 2, 1, "row", check_finite=cf))):
            graphs.clear()
            with graphs.using(True):
                a = wall(lambda: f(True)); b = wall(lambda: f(False))
                h = host(lambda: f(False))
                (key, g), = graphs._graphs.items()
                s = cp.cuda.get_current_stream()
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                for _ in range(3): g.graph.launch(s)
                e0.record(); 
                for _ in range(20): g.graph.launch(s)
                e1.record(); e1.synchronize()
                gpu = cp.cuda.get_elapsed_time(e0, e1) / 20
                hl = host(lambda: g.graph.launch(s))
                hr = host(lambda: g.replay((Q, R, None, None) if name != "insert row" else (Q, R[None] if False else R, row[None], None), s)) if name == "delete col" else float('nan')
            print(f"{dt.__name__} {m}x{n} {name}: wall {a:.3f} ms, no finite check {b:.3f}, host/call (no sync) {h:.3f}, graph GPU {gpu:.3f} ms, launch host {hl:.3f}, replay host {hr:.3f}", flush=True)
