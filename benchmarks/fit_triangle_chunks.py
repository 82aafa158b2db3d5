"""How many chunks of rows the one-launch triangle update should take: measure, then fit.

    PYTHONPATH=. python benchmarks/fit_triangle_chunks.py --out FILE.json     (on a GPU)
    PYTHONPATH=. python benchmarks/fit_triangle_chunks.py --fit FILE.json

``GpuExecutor.triangle_update`` (``qrlab/kernels/triangle.cu``) reduces ``[R; B]`` with B's
k rows taken in chunks; ``qrlab.gpu._triangle_chunks`` picks the count from a model with
four constants per value size (``qrlab.gpu._TRIANGLE_MODEL``).  The first form times the
update for every count the model may pick, on the shapes where the one launch runs in the
papers' tables (removing columns, adding rows: an n x (n + 1) triangle and its right-hand
side) and in rank-k Cholesky updates (k = 256), both dtypes (CUDA events, the median of
5 runs after a warm-up).  The second finds, by a grid search, the constants whose picks
lose least against the fastest count measured for each shape (the mean relative loss),
and prints them with the loss of the constants in use.
"""
import argparse
import itertools
import json
import sys

import numpy as np

#: (n, ncols - n, k): 000 Tables 6-9 (n columns left, p rows or columns of B) and
#: the Cholesky update with k = 256 (no right-hand side)
SHAPES = [(2500, 1, 500), (3000, 1, 500), (2900, 1, 100), (2000, 1, 1000), (1000, 1, 2000),
          (2400, 1, 100), (2000, 1, 500), (1500, 1, 1000), (500, 1, 2000),
          (1000, 1, 200), (1000, 1, 1500), (3000, 1, 200), (3000, 1, 1500), (5000, 1, 200),
          (5000, 1, 1500), (7000, 1, 200), (7000, 1, 1500), (1000, 0, 256), (2000, 0, 256),
          (5000, 0, 256), (10000, 0, 256), (20000, 0, 256), (3000, 0, 64), (10000, 0, 64),
          (5000, 0, 1000), (3000, 1, 2000)]
MOST_CHUNKS = 24                      # counts tried: the fewest that fit, up to this many


def launch_ms(ex, R, W, reps=5):
    """The triangle update of ``[R; W]`` by ``ex`` (one launch), in ms: CUDA events, the
    median of ``reps`` runs on fresh copies after one untimed run."""
    import cupy as cp

    runs = []
    for rep in range(reps + 1):
        R1, W1 = R.copy(), W.copy()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        ex.triangle_update(R1, W1, 1, check=False)
        stop.record()
        stop.synchronize()
        if rep:                                 # the first is a warm-up
            runs.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(runs))


def measure(out):
    import cupy as cp

    import qrlab.gpu as gpu
    from qrlab.gpu import GpuExecutor

    rng = np.random.default_rng(0)
    nsm = gpu._sm_count()
    rows = []
    for dtype in ("float32", "float64"):
        size = np.dtype(dtype).itemsize
        for n, extra, k in SHAPES:
            ncols = n + extra
            R = cp.asarray(np.triu(rng.standard_normal((n, ncols))), dtype=dtype)
            R += 2 * n * cp.eye(n, ncols, dtype=dtype)
            W = cp.asarray(rng.standard_normal((k, ncols)), dtype=dtype)
            fewest = -(-k // gpu._triangle_rows_max(size))
            counts = range(fewest, max(fewest, min(-(-k // 32), MOST_CHUNKS)) + 1)
            ex = GpuExecutor()
            times = {}
            for chunks in counts:
                ex.triangle_chunk = -(-k // chunks)
                got = ex.triangle_chunks(n, ncols, k, dtype)
                if got in times:
                    continue
                times[got] = launch_ms(ex, R, W)
            best = min(times, key=times.get)
            print(f"{dtype} n={n} ncols={ncols} k={k}: best {best} chunks "
                  f"{times[best]:.3f} ms, model's pick "
                  f"{gpu._triangle_chunks(-(-n // 32), -(-ncols // 32), k, size, nsm)}",
                  flush=True)
            rows.append(dict(dtype=dtype, n=n, ncols=ncols, k=k,
                             ms={str(c): t for c, t in times.items()}))
    with open(out, "w") as f:
        json.dump(dict(device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                       sms=nsm, shapes=rows), f, indent=1)


def loss(rows, size, nsm, model):
    """Mean relative time lost by the model's picks against the fastest counts."""
    import qrlab.gpu as gpu

    saved = dict(gpu._TRIANGLE_MODEL)
    gpu._TRIANGLE_MODEL[size] = model
    gpu._triangle_chunks.cache_clear()
    try:
        lost = []
        for r in rows:
            ms = {int(c): t for c, t in r["ms"].items()}
            pick = gpu._triangle_chunks(-(-r["n"] // 32), -(-r["ncols"] // 32), r["k"], size,
                                        nsm)
            # a pick outside the measured counts is scored as the nearest one measured
            near = min(ms, key=lambda c: abs(c - pick))
            lost.append(ms[near] / min(ms.values()) - 1)
        return float(np.mean(lost)), float(np.max(lost))
    finally:
        gpu._TRIANGLE_MODEL.update(saved)
        gpu._triangle_chunks.cache_clear()


def fit(path):
    import qrlab.gpu as gpu

    data = json.load(open(path))
    nsm = data["sms"]
    for dtype in ("float32", "float64"):
        size = np.dtype(dtype).itemsize
        rows = [r for r in data["shapes"] if r["dtype"] == dtype]
        now = gpu._TRIANGLE_MODEL[size]
        # coarse, then finer around the best (ties go to the first: the smaller constants)
        steps = np.array([2.0, 0.025, 1.0, 0.01])
        centre = np.array([20.0, 0.1, 6.0, 0.05])
        for half in (10, 2):
            axes = [np.maximum(0, c + s * np.arange(-half, half + 1))
                    for c, s in zip(centre, steps)]
            grid = {tuple(np.round(m, 5)) for m in itertools.product(*axes)}
            centre = np.array(min(sorted(grid),
                                  key=lambda m: loss(rows, size, nsm, tuple(m))))
            steps = steps / 4
        best = tuple(round(float(v), 4) for v in centre)
        mean_now, max_now = loss(rows, size, nsm, now)
        mean_best, max_best = loss(rows, size, nsm, best)
        print(f"{dtype}: in use {now}: mean loss {mean_now:.1%} (largest {max_now:.1%}); "
              f"fitted {best}: mean {mean_best:.1%} (largest {max_best:.1%}) "
              f"over {len(rows)} shapes")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="measure on this machine's GPU, write JSON here")
    ap.add_argument("--fit", help="fit the model's constants to a JSON file of timings")
    args = ap.parse_args(argv)
    if args.out:
        measure(args.out)
    if args.fit:
        fit(args.fit)
    if not (args.out or args.fit):
        ap.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
