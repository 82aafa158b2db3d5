"""The structured Cholesky update's growth test on the GPU: what it catches, what it costs.

    python3 benchmarks/growth_test.py --accuracy --cost --out FILE.md

``qrlab.cholesky_update`` on CuPy arrays takes the structured method
(``kernels/structured.cu``), which loses accuracy where its small factorizations cancel.
Its kernels measure that growth (``GpuExecutor.growth_max``; ``st_growth``) and hand such
an update to the chain of reflectors.

``--accuracy``: families of inputs that make the method cancel, n = 1000, k = 1, 4, 16 and
64, float32 and float64: one diagonal entry of R small beside its row (ratio r), for an
update and for a downdate back to such an R; R = I - c triu(1) (nearly singular with every
pivot large); V a multiple of R's scale, added or (after adding it) removed. For each: the
backward error ``||R1^T R1 - A1|| / ||A1||`` (A1 formed in float64 from the rounded
inputs) of the structured update with no test, of the chain of reflectors, and of
``cholesky_update`` as it is; whether the test reports at growth_max = 10, 100 (the
default) and 1000.

``--cost``: the same update on well-conditioned inputs (which pass) with the test and
without it (growth_max = 0), into a new array, in one process, in rounds of alternating
order: cholesky_bench.py's Clock (CUDA events, the L2 cache flushed before each call, a
warm-up call first), the median of each round, then the median over rounds.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np


def families(n, k, rng):
    """(family, parameter, R, V, sgn) in float64."""
    def gauss_r(t):
        R = np.linalg.qr(rng.standard_normal((2 * n, n)), mode="r")
        R *= np.sign(np.diag(R))[:, None]
        R[n // 2, n // 2] = t * np.abs(R[n // 2]).max()
        return R
    for t in (1e-1, 1e-2, 1e-3, 1e-4):
        par = f"r = {t:.0e}"
        yield "one small pivot, update", par, gauss_r(t), rng.standard_normal((n, k)), 1
        V = 0.3 * rng.standard_normal((n, k))
        R = np.linalg.qr(np.vstack([gauss_r(t), V.T]), mode="r")
        yield "one small pivot, downdate to it", par, R * np.sign(np.diag(R))[:, None], V, -1
    for c in (0.005, 0.01, 0.02):
        R = np.eye(n) - c * np.triu(np.ones((n, n)), 1)
        yield "R = I - c triu(1), update", f"c = {c}", R, rng.standard_normal((n, k)), 1
    for scale in (1, 100, 1000):
        R = gauss_r(1.0)
        yield "V = s randn, update", f"s = {scale}", R, scale * rng.standard_normal((n, k)), 1
    for scale in (1, 3, 10):
        V = scale * rng.standard_normal((n, k))
        R = np.linalg.qr(np.vstack([gauss_r(1.0), V.T]), mode="r")
        yield "V = s randn, downdate", f"s = {scale}", R * np.sign(np.diag(R))[:, None], V, -1


def accuracy(dtypes, n, ks, only=None):
    import cupy as cp

    from qrlab.cholesky import cholesky_update
    from qrlab.gpu import GpuExecutor
    lines = [f"Backward error ||R1^T R1 - A1|| / ||A1||, n = {n}; reports: the growth test at "
             "growth_max = 10, 100, 1000 (x: reports)", "",
             "| dtype | family | k | parameter | structured, no test | chain | cholesky_update |"
             " ratio | reports |", "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for dtype in dtypes:
        for k in ks:
            rng = np.random.default_rng(k)
            for fam, par, R, V, sgn in families(n, k, rng):
                if only and only not in fam:
                    continue
                R, V = R.astype(dtype), V.astype(dtype)
                R64, V64 = R.astype(np.float64), V.astype(np.float64)
                A1 = R64.T @ R64 + sgn * V64 @ V64.T
                nrm = np.linalg.norm(A1)

                def err(R1):
                    if R1 is None:
                        return float("nan")
                    R1 = cp.asnumpy(R1).astype(np.float64)
                    return np.linalg.norm(R1.T @ R1 - A1) / nrm
                R_d, W = cp.asarray(R), cp.asarray(V).T
                rep = []
                for gmax in (0, 10, 100, 1000):
                    out = cp.empty((n, n), dtype)
                    fail, zero, bits, grew = GpuExecutor().structured_update(
                        R_d, W, sgn, out, growth_max=gmax)
                    if gmax == 0:
                        forced = out if fail < 0 and zero < 0 and not bits else None
                    else:
                        rep.append("x" if grew else ".")
                saved = GpuExecutor.structured_k_max
                GpuExecutor.structured_k_max = 0
                try:
                    chain = cholesky_update(R_d, cp.asarray(V), downdate=sgn < 0)
                except np.linalg.LinAlgError:
                    chain = None
                finally:
                    GpuExecutor.structured_k_max = saved
                try:
                    default = cholesky_update(R_d, cp.asarray(V), downdate=sgn < 0)
                except np.linalg.LinAlgError:
                    default = None
                e_s, e_c, e_d = err(forced), err(chain), err(default)
                line = (f"| {np.dtype(dtype).name} | {fam} | {k} | {par} | {e_s:.1e} | "
                        f"{e_c:.1e} | {e_d:.1e} | {e_d / e_c:.1f} | {''.join(rep)} |")
                lines.append(line)
                print(line, flush=True)
    return lines


def cost(dtypes, ns, ks, rounds, reps):
    import cupy as cp

    from cholesky_bench import Clock
    from qrlab.cholesky import cholesky_update
    from qrlab.gpu import GpuExecutor
    clock = Clock(cp)
    lines = ["Time of cholesky_update into a new array, ms, without the test and with it", "",
             "| dtype | n | k | no test ms | test ms | ratio | rounds' ratios |",
             "|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    default = GpuExecutor.growth_max
    for dtype in dtypes:
        for n in ns:
            rng = cp.random.RandomState(n)
            X = rng.standard_normal((n, n))
            R = cp.ascontiguousarray(cp.linalg.cholesky(X.T @ X / n + cp.eye(n)).T)
            R = R.astype(dtype)
            del X
            for k in ks:
                V = (rng.standard_normal((n, k)) * (0.9 / (n * k) ** 0.5)).astype(dtype)
                times = {0.0: [], default: []}
                for r in range(rounds):
                    for gmax in ((0.0, default) if r % 2 == 0 else (default, 0.0)):
                        GpuExecutor.growth_max = gmax
                        each = []
                        for rep in range(reps + 1):
                            clock.sync()
                            ms, _ = clock(lambda: cholesky_update(R, V))
                            if rep:
                                each.append(ms)
                        times[gmax].append(statistics.median(each))
                GpuExecutor.growth_max = default
                off, on = (statistics.median(times[g]) for g in (0.0, default))
                each = ", ".join(f"{b / a:.3f}" for a, b in zip(times[0.0], times[default]))
                line = (f"| {dtype} | {n} | {k} | {off:.3f} | {on:.3f} | {on / off:.3f} | "
                        f"{each} |")
                lines.append(line)
                print(line, flush=True)
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--cost", action="store_true")
    ap.add_argument("--n", nargs="+", type=int, default=[5000, 10000, 20000],
                    help="sizes for --cost (--accuracy: n = 1000)")
    ap.add_argument("--k", nargs="+", type=int, default=[1, 4, 16, 64])
    ap.add_argument("--family", help="only the families whose name contains this")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", help="write the tables here (markdown) as well")
    args = ap.parse_args(argv)
    import cupy as cp
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    given = argv if argv is not None else sys.argv[1:]
    argv_s = " ".join(a for i, a in enumerate(given)
                      if a != "--out" and (i == 0 or given[i - 1] != "--out"))
    lines = [f"Command: `python3 benchmarks/growth_test.py {argv_s}`; device: {device}", ""]
    if args.accuracy:
        lines += accuracy(args.dtypes, 1000, args.k, args.family) + [""]
    if args.cost:
        lines += cost(args.dtypes, args.n, args.k, args.rounds, args.reps)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
