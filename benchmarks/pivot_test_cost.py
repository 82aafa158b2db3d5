"""What the structured Cholesky update's pivot test costs on the GPU.

    python3 benchmarks/pivot_test_cost.py --out FILE.md

``qrlab.cholesky_update`` on CuPy arrays takes the structured method
(``kernels/structured.cu``), whose error grows as ``eps / ratio^2`` where a diagonal entry
of R is small beside the rest of its row.  Its kernels test for that
(``GpuExecutor.pivot_min``: each block of the solve reads its 64 rows once its own work is
done) and hand such an R to the chain of reflectors.  This times the same update, on the
same well-conditioned inputs (which pass the test), with the test (``pivot_min = 1e-2``)
and without it (``pivot_min = 0``: the kernels skip it), into a new array (one launch) or
in place (``--overwrite``: a copy of R made before each call, untimed), in one process, in
rounds of alternating order: cholesky_bench.py's Clock (CUDA events, the L2 cache flushed
before each call, a warm-up call first), the median of each round, then the median over
rounds.
"""
from __future__ import annotations

import argparse
import statistics


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--n", nargs="+", type=int, default=[2000, 5000, 10000, 20000])
    ap.add_argument("--k", nargs="+", type=int, default=[1, 16, 64, 256])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--overwrite", action="store_true", help="in place (a copy of R each call)")
    ap.add_argument("--out", help="write the table here (markdown) as well")
    args = ap.parse_args(argv)

    import cupy as cp

    from cholesky_bench import Clock
    from qrlab.cholesky import cholesky_update
    from qrlab.gpu import GpuExecutor

    clock = Clock(cp)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    how = " --overwrite" if args.overwrite else ""
    lines = [f"Command: `python3 benchmarks/pivot_test_cost.py{how}` (rounds {args.rounds}, "
             f"reps {args.reps}); device: {device}",
             "", "| dtype | n | k | no test ms | test ms | ratio | rounds' ratios |",
             "|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for dtype in args.dtypes:
        for n in args.n:
            rng = cp.random.RandomState(n)
            X = rng.standard_normal((n, n))
            R = cp.ascontiguousarray(cp.linalg.cholesky(X.T @ X / n + cp.eye(n)).T)
            R = R.astype(dtype)
            del X
            for k in args.k:
                V = (rng.standard_normal((n, k)) * (0.9 / (n * k) ** 0.5)).astype(dtype)
                rounds = {0.0: [], 1e-2: []}
                for r in range(args.rounds):
                    for pmin in ((0.0, 1e-2) if r % 2 == 0 else (1e-2, 0.0)):
                        GpuExecutor.pivot_min = pmin
                        times = []
                        for rep in range(args.reps + 1):
                            Rc = R.copy() if args.overwrite else R
                            clock.sync()
                            ms, _ = clock(lambda: cholesky_update(Rc, V,
                                                                  overwrite=args.overwrite))
                            if rep:
                                times.append(ms)
                        rounds[pmin].append(statistics.median(times))
                GpuExecutor.pivot_min = 1e-2
                off, on = (statistics.median(rounds[p]) for p in (0.0, 1e-2))
                each = ", ".join(f"{b / a:.3f}" for a, b in zip(rounds[0.0], rounds[1e-2]))
                line = (f"| {dtype} | {n} | {k} | {off:.3f} | {on:.3f} | {on / off:.3f} | "
                        f"{each} |")
                lines.append(line)
                print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
