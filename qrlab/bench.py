"""Timing harness: update against recomputation, on the GPU, in the papers' cases.

``python -m qrlab.bench --suite paper --dtype float32 --out benchmarks/results``

For every case of the papers' timing tables (000 Tables 2, 3, 5-11, mapped to ``m`` rows
and ``n`` columns), with CUDA events, ``--warmup`` untimed runs (default one) and the
median of ``--reps`` runs on fresh random blocks, everything resident on the device:

* ``t_update``: the update of the factors the case needs (Q, R and ``d = Q^T b`` for
  adding columns and removing rows; R and ``d`` for removing columns and adding rows, as
  in the papers, there kept as the triangle of ``[A, b]``, whose corner entry is the
  residual norm) plus the triangular solve for ``x``;
* ``t_gels``: the papers' baseline, a QR least-squares solve of the updated matrix
  (cuSOLVER ``geqrf`` + ``ormqr`` + ``trsm``);
* ``t_same``: recomputation producing the same factors (``cupy.linalg.qr`` complete
  when the update returns Q, ``geqrf`` + ``ormqr`` otherwise);
* the floor ``max(flops / GEMM rate, bytes / copy bandwidth)`` with both rates measured
  in the same run, and ``t_update / floor``;
* the paper's speed-up for the same cell where its table survives.

It also runs on NumPy (``--cpu``, smaller sizes) so the harness itself is tested in CI.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from . import updates
from .backend import executor_for, gpu_name, solve_triangular

# The papers' tables, as (table, op, m, n, p, k, paper CULA seconds, paper update seconds).
# 000 writes n rows and m columns; these are already in qrlab's m rows, n columns.
_T2_CULA = {4000: 0.380, 8000: 1.000, 12000: 1.594}
_T2_UPD = {4000: {0: 2.357, 500: 1.887, 1000: 1.464, 1500: 1.075, 2000: 0.725, 2500: 0.404,
                  3000: 0.155},
           8000: {0: 3.867, 500: 3.219, 1000: 2.636, 1500: 2.046, 2000: 1.499, 2500: 1.021,
                  3000: 0.613},
           12000: {0: 5.670, 500: 4.825, 1000: 4.048, 1500: 3.360, 2000: 2.667, 2500: 1.941,
                   3000: 1.445}}
_T3_CULA = {8000: 1.797, 12000: 3.003, 16000: 4.241}
_T3_UPD = {8000: [8.585, 7.670, 6.730, 5.951, 5.112, 4.393, 3.720, 3.068, 2.458, 1.876, 1.388,
                  0.911, 0.503],
           12000: [11.385, 10.280, 9.162, 8.152, 7.249, 6.307, 5.423, 4.562, 3.865, 3.055,
                   2.414, 1.675, 1.177],
           16000: [14.458, 13.184, 11.930, 10.642, 9.639, 8.551, 7.512, 6.534, 5.425, 4.660,
                   3.717, 2.953, 2.187]}
_T5 = {5000: [(100, 0.500, 0.180), (300, 0.528, 0.323), (500, 0.555, 0.428),
              (700, 0.564, 0.526), (900, 0.603, 0.643), (1100, 0.620, 0.731),
              (1300, 0.648, 0.848), (1500, 0.683, 0.954)],
       8000: [(100, 0.870, 0.386), (300, 0.919, 0.732), (500, 0.973, 0.967),
              (700, 1.028, 1.198), (900, 1.085, 1.392), (1100, 1.149, 1.606),
              (1300, 1.221, 1.885), (1500, 1.230, 2.027)]}
_T6 = [(6000, 0.562, 0.591), (7000, 0.672, 0.600), (8000, 0.753, 0.592), (9000, 0.871, 0.596),
       (10000, 0.959, 0.597), (11000, 1.101, 0.616), (12000, 1.193, 0.620)]
_T8 = [(8000, 1.174, 1.006), (9000, 1.300, 0.991), (10000, 1.440, 1.021),
       (11000, 1.583, 1.015), (12000, 1.717, 1.019), (13000, 1.845, 0.999),
       (14000, 2.002, 1.040)]
_T10 = {6000: [(20, 2.999, 3.068), (40, 2.895, 4.646), (60, 2.963, 6.417), (80, 2.921, 8.111),
               (100, 2.954, 9.752)],
        8000: [(20, 4.240, 3.325), (40, 4.185, 5.189), (60, 4.202, 6.989), (80, 4.088, 8.851),
               (100, 4.144, 10.706)],
        10000: [(20, 5.680, 3.592), (40, 5.563, 5.631), (60, 5.631, 7.674),
                (80, 5.435, 9.679), (100, 5.575, 11.742)]}


def paper_cases(full: bool = False):
    """The cases of 000's timing tables.  ``full=False`` thins the long k sweeps of Tables
    2 and 3 to every second (third) k to fit a short device run."""
    cases = []

    def add(table, op, m, n, p, k, cula=None, upd=None):
        cases.append(dict(table=table, op=op, m=m, n=n, p=p, k=k,
                          paper_cula=cula, paper_update=upd,
                          paper_speedup=None if cula is None else cula / upd))

    for m, row in _T2_UPD.items():
        for k, t in row.items():
            if full or k % 1000 == 0:
                add("T2", "insert_cols", m, 3000, 200, k, _T2_CULA[m], t)
    for m, times in _T3_UPD.items():
        for i, t in enumerate(times):
            if full or i % 3 == 0:
                add("T3", "insert_cols", m, 6000, 200, 500 * i, _T3_CULA[m], t)
    for m, rows in _T5.items():
        for p, cula, upd in rows:
            if full or p in (100, 500, 900, 1500):
                add("T5", "insert_cols", m, 3000, p, 2980, cula, upd)
    for m, cula, upd in _T6:
        add("T6", "delete_cols", m, 3000, 500, 0, cula, upd)
    for p in (100, 500, 1000, 2000):          # 000 Table 7 survives only as a figure
        for k in (0, 500):
            add("T7", "delete_cols", 6000, 3000, p, k)
    for m, cula, upd in _T8:
        add("T8", "insert_rows", m, 3000, 500, 0, cula, upd)
    for n in (1000, 3000, 5000, 7000):        # Table 9 survives only as 001 Fig. 12
        for p in (200, 1500):
            add("T9", "insert_rows", 8000, n, p, 0)
    for n, rows in _T10.items():
        for p, cula, upd in rows:
            add("T10", "delete_rows", 12000, n, p, 0, cula, upd)
    for m in (8000, 12000, 16000):           # Table 11 survives only as 001 Fig. 14
        for p in (20, 100):
            add("T11", "delete_rows", m, 6000, p, 0)
    return cases


def quick_cases():
    return [dict(table="quick", op=op, m=m, n=n, p=p, k=k, paper_cula=None,
                 paper_update=None, paper_speedup=None)
            for op, m, n, p, k in [("insert_cols", 3000, 1000, 50, 200),
                                   ("delete_cols", 3000, 1000, 100, 0),
                                   ("insert_rows", 3000, 1000, 100, 0),
                                   ("delete_rows", 3000, 1000, 20, 0)]]


def cost(op, m, n, p, k, itemsize):
    """(flops, bytes) of the update: the two numbers of the floor."""
    if op == "insert_cols":
        rot = p * (n - k)
        flops = 2 * m * m * p + 4 * m * (m - n) * p + 6 * rot * (m + n + p - k)
        nbytes = itemsize * (2 * m * m + m * p + 2 * n * (n + p - k))
    elif op == "delete_cols":
        w = n - k - p
        flops = 2 * (p + 1) * w * w
        nbytes = itemsize * 2 * n * (n - k)
    elif op == "insert_rows":
        flops = 2 * (p + 1) * n * n
        nbytes = itemsize * (n * n + 2 * p * n)
    else:
        # reflectors on Q's columns past n, then p sweeps of n + p rotations (without the
        # first stage, m - n <= p: p sweeps of m)
        reflect, swept = (4 * m * (m - n) * p, n + p) if m - n > p else (0, m)
        flops = reflect + 6 * p * swept * (m + n)
        nbytes = itemsize * 2 * (m * m + m * n)
    return flops, nbytes


# ---------------------------------------------------------------------------------------
class Timer:
    """Median wall time of a device callable with CUDA events (or perf_counter on CPU),
    after ``warmup`` untimed calls."""

    def __init__(self, xp, warmup=1):
        self.xp = xp
        self.warmup = warmup

    def __call__(self, fn, prepare, reps):
        xp = self.xp
        for _ in range(self.warmup):          # warm-up: compilation, handles, caches
            fn(*prepare())
        times = [timed_call(xp, fn, prepare()) for _ in range(reps)]
        return statistics.median(times), times


def interleaved_times(xp, fn, prepare, variants, reps, warmup=2):
    """Milliseconds of ``fn(*prepare())`` under each variant, timed in turn repetition by
    repetition (``variants``: name -> a callable that switches to it), so that a drift of
    the machine reaches every variant alike: ``warmup`` untimed calls of each first, then
    ``reps`` rounds, each variant first in one round after the other.  Returns
    {name: [ms, ...]}."""
    names = list(variants)
    times = {name: [] for name in names}
    for name in names:
        variants[name]()
        for _ in range(warmup):
            fn(*prepare())
    for r in range(reps):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            variants[name]()
            times[name].append(1e3 * timed_call(xp, fn, prepare()))
    return times


def timed_call(xp, fn, args):
    """Seconds that ``fn(*args)`` takes: CUDA events around it on the device (nothing
    queued before it), ``perf_counter`` on NumPy."""
    if xp is np:
        t0 = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t0
    start, stop = xp.cuda.Event(), xp.cuda.Event()
    xp.cuda.Device().synchronize()
    start.record()
    fn(*args)
    stop.record()
    stop.synchronize()
    return xp.cuda.get_elapsed_time(start, stop) / 1e3


def gels(xp, A, b):
    """QR least squares: the papers' baseline (geqrf, Q^T b, triangular solve)."""
    if xp is np:
        import scipy.linalg as sl
        qr, tau = sl.qr(A, mode="raw")[0]
        n = A.shape[1]
        y = sl.lapack.get_lapack_funcs("ormqr", (qr,))(
            "L", "T", qr, tau, b[:, None], max(1, 64 * n), overwrite_c=0)[0]
        return sl.solve_triangular(qr[:n, :n], y[:n, 0], lower=False)
    from cupy_backends.cuda.libs import cublas, cusolver
    from cupy.cuda import device
    m, n = A.shape
    a = xp.asfortranarray(A)
    c = xp.asfortranarray(b[:, None])
    tau = xp.empty(n, dtype=A.dtype)
    info = xp.empty(1, dtype=np.int32)
    h = device.get_cusolver_handle()
    x = "s" if A.dtype == np.float32 else "d"      # cuSOLVER's single/double entry points
    geqrf, ormqr = getattr(cusolver, x + "geqrf"), getattr(cusolver, x + "ormqr")
    size = getattr(cusolver, x + "geqrf_bufferSize")(h, m, n, a.data.ptr, m)
    work = xp.empty(size, dtype=A.dtype)
    geqrf(h, m, n, a.data.ptr, m, tau.data.ptr, work.data.ptr, size, info.data.ptr)
    side, trans = cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_OP_T
    size = getattr(cusolver, x + "ormqr_bufferSize")(h, side, trans, m, 1, n, a.data.ptr, m,
                                                     tau.data.ptr, c.data.ptr, m)
    work = xp.empty(size, dtype=A.dtype)
    ormqr(h, side, trans, m, 1, n, a.data.ptr, m, tau.data.ptr, c.data.ptr, m, work.data.ptr,
          size, info.data.ptr)
    # the library's triangular solve (cuBLAS trsm), not qrlab's back_solve: the baseline
    # is what cuSOLVER and cuBLAS give
    from cupyx.scipy.linalg import solve_triangular as trsm
    return trsm(xp.triu(a[:n, :n]), c[:n, 0], lower=False)


def measure_ceilings(xp, dtype):
    """GEMM rate (flop/s) and copy bandwidth (bytes read + written per second)."""
    t = Timer(xp)
    size = 8192 if xp is not np else 1024
    a = xp.asarray(np.random.default_rng(0).standard_normal((size, size)), dtype=dtype)
    tg, _ = t(lambda x: x @ x, lambda: (a,), 5)
    n_copy = (1 << 28) // np.dtype(dtype).itemsize if xp is not np else 1 << 22
    src = xp.ones(n_copy, dtype=dtype)
    dst = xp.empty_like(src)
    tc, _ = t(lambda s, d: d.__setitem__(Ellipsis, s), lambda: (src, dst), 5)
    return 2 * size ** 3 / tg, 2 * src.nbytes / tc


def case_setup(xp, case, dtype, method="blocked"):
    """One case's inputs (seeded) and the functions that :func:`run_case` times.

    Returns ``(update, new_matrix, make, needs_q)``: ``update(*make())`` is the timed
    update (the factors the case needs, then the triangular solve for x), ``make()``
    draws its fresh inputs (the columns or rows to add), ``new_matrix(*args)`` forms the
    updated ``A`` and ``b`` for the baseline, and ``needs_q`` says whether the update
    keeps the full Q."""
    rng = np.random.default_rng(1)
    m, n, p, k, op = case["m"], case["n"], case["p"], case["k"], case["op"]
    dt = np.dtype(dtype)

    def rand(*shape):
        return xp.asarray(rng.uniform(-1, 1, shape), dtype=dt)

    A = rand(m, n)
    b = rand(m)
    ex = executor_for(xp, method)
    needs_q = op in ("insert_cols", "delete_rows")
    if needs_q:
        Q, R = xp.linalg.qr(A, mode="complete")
        Rd = xp.concatenate([R, (Q.T @ b)[:, None]], axis=1)
    else:
        # without Q, the triangle of [A, b] (n + 1 square): R, d's first n entries in its
        # last column and the residual norm in its corner, as LeastSquaresQR(q='none')
        Rd = xp.linalg.qr(xp.concatenate([A, b[:, None]], axis=1), mode="r")

    if op == "insert_cols":
        def update(U):
            Q1, R1 = updates._insert_cols(Q, Rd, U, k, "full", ex, nc=1)
            nn = n + p
            return solve_triangular(R1[:nn, :nn], R1[:nn, nn])

        def new_matrix(U):
            return xp.concatenate([A[:, :k], U, A[:, k:]], axis=1), b
        make = lambda: (rand(m, p),)                                   # noqa: E731
    elif op == "delete_cols":
        def update():
            R1 = updates._delete_cols(None, Rd, k, p, "none", ex, nc=1)[1]
            nn = n - p
            return solve_triangular(R1[:nn, :nn], R1[:nn, nn])

        def new_matrix():
            return xp.concatenate([A[:, :k], A[:, k + p:]], axis=1), b
        make = lambda: ()                                               # noqa: E731
    elif op == "insert_rows":
        def update(U, e):
            R1 = updates._insert_rows(None, Rd, xp.concatenate([U, e[:, None]], axis=1), k,
                                      "none", ex, nc=1)[1]
            return solve_triangular(R1[:n, :n], R1[:n, n])

        def new_matrix(U, e):
            return (xp.concatenate([A[:k], U, A[k:]], axis=0),
                    xp.concatenate([b[:k], e, b[k:]]))
        make = lambda: (rand(p, n), rand(p))                            # noqa: E731
    else:
        def update():
            Q1, R1 = updates._delete_rows(Q, Rd, k, p, "full", ex, nc=1)
            return solve_triangular(R1[:n, :n], R1[:n, n])

        def new_matrix():
            return (xp.concatenate([A[:k], A[k + p:]], axis=0),
                    xp.concatenate([b[:k], b[k + p:]]))
        make = lambda: ()                                               # noqa: E731
    return update, new_matrix, make, needs_q


def run_case(xp, case, dtype, reps, method="blocked", warmup=1):
    """Time one case (``warmup`` untimed calls of each timed function first); returns the
    case dict with timings added."""
    m, n, p, k, op = case["m"], case["n"], case["p"], case["k"], case["op"]
    dt = np.dtype(dtype)
    update, new_matrix, make, needs_q = case_setup(xp, case, dtype, method)
    timer = Timer(xp, warmup)
    t_update, runs = timer(update, make, reps)
    # accuracy of this case's solution against the recomputed one
    args = make()
    x_upd = update(*args)
    A1, b1 = new_matrix(*args)
    x_ref = gels(xp, A1, b1)
    err = float(xp.linalg.norm(x_upd - x_ref) / xp.linalg.norm(x_ref))
    # A~ is formed (random draws on the host included) before each timed solve: it is not
    # the baseline's work, and its host time varies far more than the solve takes
    t_gels, _ = timer(lambda A1, b1: gels(xp, A1, b1), lambda: new_matrix(*make()), reps)
    if needs_q:
        t_same, _ = timer(lambda A1: xp.linalg.qr(A1, mode="complete"),
                          lambda: (new_matrix(*make())[0],), reps)
    else:
        t_same = t_gels
    flops, nbytes = cost(op, m, n, p, k, dt.itemsize)
    return dict(case, dtype=dt.name, t_update=t_update, t_update_runs=runs, t_gels=t_gels,
                t_same=t_same, speedup_gels=t_gels / t_update, speedup_same=t_same / t_update,
                flops=flops, bytes=nbytes, rel_err_x=err)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=["paper", "paper-full", "quick"], default="quick")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed calls before the timed ones (each timed function)")
    ap.add_argument("--tables", default="", help="comma-separated tables, e.g. T2,T6")
    ap.add_argument("--cpu", action="store_true", help="run on NumPy with small sizes")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--method", default="blocked", choices=["blocked", "paper"])
    ap.add_argument("--report", nargs="*", help="only write reports for these JSON files")
    args = ap.parse_args(argv)
    if args.report:
        for path in report(args.report):
            print(f"wrote {path}")
        return None

    if args.cpu:
        xp = np
        cases = [dict(c, m=c["m"] // 10, n=c["n"] // 10, p=max(1, c["p"] // 10),
                      k=c["k"] // 10) for c in quick_cases()]
        device = f"cpu-{platform.machine()}"
    else:
        import cupy as xp
        cases = {"paper": paper_cases(False), "paper-full": paper_cases(True),
                 "quick": quick_cases()}[args.suite]
        device = gpu_name().replace(" ", "-")
    if args.tables:
        keep = set(args.tables.split(","))
        cases = [c for c in cases if c["table"] in keep]

    gemm, bw = measure_ceilings(xp, args.dtype)
    print(f"# {device} {args.dtype}: GEMM {gemm / 1e12:.1f} TFLOP/s, copy {bw / 1e12:.2f} TB/s",
          flush=True)
    results = []
    for case in cases:
        r = run_case(xp, case, args.dtype, args.reps, args.method, args.warmup)
        r["floor"] = max(r["flops"] / gemm, r["bytes"] / bw)
        r["over_floor"] = r["t_update"] / r["floor"]
        results.append(r)
        paper = "" if r["paper_speedup"] is None else f" paper {r['paper_speedup']:.2f}x"
        print(f"{r['table']:4s} {r['op']:12s} m={r['m']:6d} n={r['n']:6d} p={r['p']:5d} "
              f"k={r['k']:5d}  upd {r['t_update'] * 1e3:9.2f} ms  gels "
              f"{r['t_gels'] * 1e3:9.2f} ms  same {r['t_same'] * 1e3:9.2f} ms  "
              f"x{r['speedup_gels']:6.2f}{paper}  floor x{r['over_floor']:5.1f}  "
              f"err {r['rel_err_x']:.1e}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{device}-{args.dtype}{'-' + args.tables.replace(',', '') if args.tables else ''}.json"
    path.write_text(json.dumps(dict(device=device, dtype=args.dtype, suite=args.suite,
                                    method=args.method, reps=args.reps,
                                    warmup=args.warmup, gemm_flops=gemm,
                                    copy_bytes_per_s=bw, command="python -m qrlab.bench "
                                    + " ".join(argv if argv is not None else
                                               __import__("sys").argv[1:]),
                                    results=results), indent=1))
    print(f"wrote {path}")
    for extra in report([path]):
        print(f"wrote {extra}")
    return results


# ---------------------------------------------------------------------------------------
# report: markdown table and speed-up figures from the JSON results
# ---------------------------------------------------------------------------------------
def report(paths, out_dir=None):
    """Write ``<name>.md`` (tables, targets) and ``<name>.png`` (speed-up per table, in
    the papers' style) next to each JSON result file, or into ``out_dir``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for path in map(Path, paths):
        data = json.loads(path.read_text())
        rows = data["results"]
        dest = Path(out_dir) if out_dir else path.parent
        lines = [f"# {data['device']}, {data['dtype']}",
                 "",
                 f"Command: `{data['command']}`  ",
                 f"GEMM {data['gemm_flops'] / 1e12:.1f} TFLOP/s, copy "
                 f"{data['copy_bytes_per_s'] / 1e12:.2f} TB/s (measured in the same run); "
                 f"median of {data['reps']} runs, CUDA events.",
                 "",
                 "| table | update | m | n | p | k | t_update ms | t_gels ms | t_same ms | "
                 "speed-up (gels) | paper speed-up | t_update / floor | rel. err x |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            paper = "-" if r["paper_speedup"] is None else f"{r['paper_speedup']:.2f}"
            lines.append(f"| {r['table']} | {r['op']} | {r['m']} | {r['n']} | {r['p']} | "
                         f"{r['k']} | {r['t_update'] * 1e3:.2f} | {r['t_gels'] * 1e3:.2f} | "
                         f"{r['t_same'] * 1e3:.2f} | {r['speedup_gels']:.2f} | {paper} | "
                         f"{r['over_floor']:.1f} | {r['rel_err_x']:.1e} |")
        sp = [r["speedup_gels"] for r in rows]
        won = [r for r in rows if r["paper_speedup"] and r["paper_speedup"] > 1]
        lines += ["", "## Targets", "",
                  f"- every cell faster than recomputation (gels): "
                  f"{sum(s > 1 for s in sp)} of {len(sp)} cells",
                  f"- median speed-up over all cells: {statistics.median(sp):.2f}x",
                  f"- cells where the papers won, ours at least twice theirs: "
                  f"{sum(r['speedup_gels'] >= 2 * r['paper_speedup'] for r in won)} of "
                  f"{len(won)}"]
        tables = sorted({r["table"] for r in rows})
        for t in tables:
            sub = [r for r in rows if r["table"] == t]
            big = max(sub, key=lambda r: (r["m"] * r["n"], r["p"]))
            lines.append(f"- {t}: t_update / floor at its largest case "
                         f"(m={big['m']}, n={big['n']}, p={big['p']}, k={big['k']}): "
                         f"{big['over_floor']:.1f}")
        md = dest / (path.stem + ".md")
        md.write_text("\n".join(lines) + "\n")

        fig, axes = plt.subplots(1, len(tables), figsize=(3.2 * len(tables), 3), dpi=80,
                                 squeeze=False)
        for ax, t in zip(axes[0], tables):
            sub = [r for r in rows if r["table"] == t]
            xs = range(len(sub))
            ax.plot(xs, [r["speedup_gels"] for r in sub], "o-", label="qrlab")
            if any(r["paper_speedup"] for r in sub):
                ax.plot(xs, [r["paper_speedup"] or np.nan for r in sub], "s--",
                        label="paper (M2050)")
            ax.axhline(1, color="gray", lw=0.8)
            ax.set_yscale("log")
            ax.set_title(f"{t}: {sub[0]['op']}", fontsize=9)
            ax.set_xticks(list(xs))
            ax.set_xticklabels([f"{r['m']}/{r['n']}\np{r['p']} k{r['k']}" for r in sub],
                               fontsize=5, rotation=90)
            ax.set_ylabel("speed-up over QR solve", fontsize=8)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"{data['device']} {data['dtype']}: update vs recomputation", fontsize=10)
        fig.tight_layout()
        png = dest / (path.stem + ".png")
        fig.savefig(png)
        plt.close(fig)
        written += [md, png]
    return written


if __name__ == "__main__":
    main()
