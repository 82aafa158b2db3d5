"""Adding rows to a square R and removing its columns without Q, on a GPU: the structured
Cholesky update (``GpuExecutor._square_triangle``) against the chain of reflectors
(``kernels/triangle.cu``), in one process.

``--ab DTYPE ...``: the papers' Q-less cases (000 Tables 6 to 9, as ``python -m
qrlab.bench`` runs them: the triangle of ``[A, b]`` carried) that
``GpuExecutor.square_passes`` sends to the structured update, each timed by
``qrlab.bench.run_case`` four times, the route alternating (chain, structured, chain,
structured); prints both ``t_update`` of each route, the ratio of their best, and each
route's error in ``x`` against the QR least-squares solution.

``--pivots``: the accuracy of both routes (the structured one forced at every size, with
no test of the pivots) as one diagonal entry of a well-conditioned R shrinks against the
rest of its row: the Gram matrix's backward error
``||R1^T R1 - [R; U]^T [R; U]|| / ||[R; U]^T [R; U]||`` of adding 64 or 200 rows.

``--conds``: both routes (the structured one forced) on least-squares problems with
graded singular values: adding 64 rows to 3000 x 1500, the error of ``x`` against
NumPy's float64 ``lstsq`` and the Gram matrix's backward error.

Usage (GPU): ``python3 benchmarks/square_route.py --ab float64 float32 --pivots --conds``
"""
from __future__ import annotations

import argparse

import numpy as np


def forced(GpuExecutor):
    """Every size to the structured update, whatever its pivots."""
    GpuExecutor.square_min_n = {4: 0, 8: 0}
    GpuExecutor.square_wide_n = {4: 0, 8: 0}
    GpuExecutor.square_rows_per_pass = {4: 1, 8: 1}
    GpuExecutor.growth_max = 0.0


def ab(dtypes):
    import cupy as cp

    from qrlab import bench
    from qrlab.gpu import GpuExecutor
    cases = [c for c in bench.paper_cases(False) if c["table"] in ("T6", "T7", "T8", "T9")]
    pick = {("T6", 6000), ("T6", 12000), ("T8", 8000), ("T8", 14000)}
    sel = [c for c in cases if (c["table"], c["m"]) in pick or c["table"] in ("T7", "T9")]

    def chosen(c, dtype):
        s = c["n"] + 1 - (c["p"] if c["op"] == "delete_cols" else 0) - c["k"]
        return GpuExecutor().square_passes(np.dtype(dtype), s, c["p"]) > 0

    for dtype in dtypes:
        for c in [c for c in sel if chosen(c, dtype)]:
            row = {}
            for flag in (False, True, False, True):
                GpuExecutor.square_by_structured = flag
                r = bench.run_case(cp, c, dtype, 5)
                row.setdefault(flag, []).append((r["t_update"] * 1e3, r["rel_err_x"]))
            GpuExecutor.square_by_structured = True
            old = min(t for t, _ in row[False])
            new = min(t for t, _ in row[True])
            print(f"{dtype} {c['table']} m={c['m']} n={c['n']} p={c['p']} k={c['k']}: "
                  f"chain {[round(t, 3) for t, _ in row[False]]} structured "
                  f"{[round(t, 3) for t, _ in row[True]]} ratio {new / old:.3f} "
                  f"err {row[False][0][1]:.1e} / {row[True][0][1]:.1e} "
                  f"gels {r['t_gels'] * 1e3:.2f}", flush=True)


def routes(R, U):
    """R1 (float64, the first rows) by the chain, then by the structured update."""
    import cupy as cp

    from qrlab import updates
    from qrlab.gpu import GpuExecutor
    out = []
    for flag in (False, True):
        GpuExecutor.square_by_structured = flag
        Rg = updates._insert_rows(None, cp.asarray(R), cp.asarray(U), 0, "none",
                                  GpuExecutor())[1]
        out.append(Rg)
    GpuExecutor.square_by_structured = True
    return out


#: the pivots' cases: (s, p) and the pivot as a fraction of its row's largest entry
PIVOT_SIZES = ((1000, 64), (2000, 200))
PIVOT_FRACTIONS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7)


def pivot_problem(s, p, t, dtype):
    """R (s x s, that of a 2s x s Gaussian matrix, pivot s/2 set to t times its row's
    largest entry) and p Gaussian rows U to add to it."""
    rng = np.random.default_rng(7)
    R = np.linalg.qr(rng.standard_normal((2 * s, s)), mode="r")
    R[s // 2, s // 2] = t * np.abs(R[s // 2]).max()
    return R.astype(dtype), rng.standard_normal((p, s)).astype(dtype)


def gram(R, U):
    """[R; U]^T [R; U] in float64: the matrix whose Cholesky factor adding U to R gives."""
    W = np.vstack([R, U]).astype(np.float64)
    return W.T @ W


def gram_error(R1, G):
    """The Gram matrix's backward error ||R1^T R1 - G|| / ||G|| (R1 taken in float64)."""
    R1 = R1.astype(np.float64)
    return np.linalg.norm(R1.T @ R1 - G) / np.linalg.norm(G)


def pivots():
    from qrlab.gpu import GpuExecutor
    forced(GpuExecutor)
    for dtype in ("float32", "float64"):
        for s, p in PIVOT_SIZES:
            for t in PIVOT_FRACTIONS:
                R, U = pivot_problem(s, p, t, dtype)
                G = gram(R, U)
                errs = [gram_error(Rg[:s].get(), G) for Rg in routes(R, U)]
                print(f"{dtype} s={s} p={p} pivot/rowmax {t:.0e}: chain {errs[0]:.1e} "
                      f"structured {errs[1]:.1e} ratio {errs[1] / errs[0]:.1f}", flush=True)


def conds():
    from qrlab.backend import solve_triangular
    from qrlab.gpu import GpuExecutor
    forced(GpuExecutor)
    rng = np.random.default_rng(5)
    for dtype, cs in (("float32", (1e2, 1e4, 1e6)), ("float64", (1e4, 1e8, 1e12))):
        for cond in cs:
            m, n, p = 3000, 1500, 64
            Uq, _ = np.linalg.qr(rng.standard_normal((m + p, n)))
            Wq, _ = np.linalg.qr(rng.standard_normal((n, n)))
            Afull = (Uq * np.logspace(0, -np.log10(cond), n)) @ Wq.T
            bfull = Afull @ rng.standard_normal(n) + 1e-3 * rng.standard_normal(m + p)
            xref = np.linalg.lstsq(Afull, bfull, rcond=None)[0]
            Rd = np.linalg.qr(np.column_stack([Afull[:m], bfull[:m]]).astype(dtype), mode="r")
            rows = np.column_stack([Afull[m:], bfull[m:]]).astype(dtype)
            G = np.column_stack([Afull, bfull]).astype(dtype).astype(np.float64)
            out = []
            for Rg in routes(Rd, rows):
                x = solve_triangular(Rg[:n, :n], Rg[:n, n]).get().astype(np.float64)
                R1 = Rg[:n + 1].get().astype(np.float64)
                out.append((np.linalg.norm(x - xref) / np.linalg.norm(xref),
                            np.linalg.norm(R1.T @ R1 - G.T @ G) / np.linalg.norm(G) ** 2))
            print(f"{dtype} cond {cond:.0e}: chain x err {out[0][0]:.1e} gram {out[0][1]:.1e} "
                  f"| structured x err {out[1][0]:.1e} gram {out[1][1]:.1e}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ab", nargs="*", default=[], help="dtypes for the timings")
    ap.add_argument("--pivots", action="store_true")
    ap.add_argument("--conds", action="store_true")
    args = ap.parse_args(argv)
    if args.ab:
        ab(args.ab)
    if args.pivots:
        pivots()
    if args.conds:
        conds()


if __name__ == "__main__":
    main()
