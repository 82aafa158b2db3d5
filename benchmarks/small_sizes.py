"""Time one-row/one-column updates of small factorizations on a GPU, call by call, with
and without CUDA graphs (:mod:`qrlab.graphs`), against recomputing the QR with cuSOLVER
(``cupy.linalg.qr``, the same mode).

At these sizes the GPU's work takes microseconds and, without a graph, a call's time is
the host's: the Python and CuPy calls that queue an update's 20 to 100 operations.  So
each update is timed as a caller sees it: wall-clock time per call, the device
synchronised after each, the median of 9 blocks of 10 calls after 3 warm-up calls (which
record the graph).  The two ways alternate block by block, so that drifts of the host's
speed fall on both.  Each result is checked against the updated matrix
(||Q1 R1 - A1|| / ||A1||, the larger of the two ways').

A second table times one step of a sliding window of least squares
(:class:`qrlab.LeastSquaresQR`: the newest row added, the oldest removed, solved) the
same way, against cuSOLVER's QR of the window and a triangular solve.

Usage (GPU): python3 benchmarks/small_sizes.py --out benchmarks/results/small-sizes.md
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import qrlab  # noqa: E402
from qrlab import graphs  # noqa: E402
from qrlab.backend import gpu_name  # noqa: E402

SIZES = [(500, 50), (2000, 200)]


def cases(cp, dtype, m, n):
    """(update, Q, call, updated A, recomputation) for one row or column at the middle,
    and rank 1, with full and thin Q."""
    rng = np.random.default_rng(m + n)
    A = cp.asarray(rng.standard_normal((m, n)), dtype=dtype)
    u, col = (cp.asarray(rng.standard_normal(m), dtype=dtype) for _ in range(2))
    v, row = (cp.asarray(rng.standard_normal(n), dtype=dtype) for _ in range(2))
    i, j = m // 2, n // 2
    updated = {"qr_update": A + cp.outer(u, v),
               "qr_insert row": cp.concatenate([A[:i], row[None], A[i:]]),
               "qr_delete row": cp.concatenate([A[:i], A[i + 1:]]),
               "qr_insert col": cp.concatenate([A[:, :j], col[:, None], A[:, j:]], axis=1),
               "qr_delete col": cp.concatenate([A[:, :j], A[:, j + 1:]], axis=1)}
    for q, mode in (("full", "complete"), ("thin", "reduced")):
        Q, R = cp.linalg.qr(A, mode=mode)
        calls = {"qr_update": lambda Q=Q, R=R: qrlab.qr_update(Q, R, u, v),
                 "qr_insert row": lambda Q=Q, R=R: qrlab.qr_insert(Q, R, row, i, "row"),
                 "qr_delete row": lambda Q=Q, R=R: qrlab.qr_delete(Q, R, i, 1, "row"),
                 "qr_insert col": lambda Q=Q, R=R: qrlab.qr_insert(Q, R, col, j, "col"),
                 "qr_delete col": lambda Q=Q, R=R: qrlab.qr_delete(Q, R, j, 1, "col")}
        for name, call in calls.items():
            A1 = updated[name]
            yield name, q, call, A1, lambda A1=A1, mode=mode: cp.linalg.qr(A1, mode=mode)


class Window:
    """A sliding-window least-squares problem (:class:`qrlab.LeastSquaresQR`): each call
    adds the next row of a stream at the end, removes the oldest, and solves."""

    def __init__(self, X, y, m, q):
        self.X, self.y, self.m, self.t = X, y, m, 0
        self.ls = qrlab.LeastSquaresQR(X[:m], y[:m], q=q)
        self.q = q

    def __call__(self):
        X, y, t, m = self.X, self.y, self.t, self.m
        self.ls.add_rows(X[m + t], y[m + t:m + t + 1])
        if self.q == "none":
            self.ls.remove_rows(0, 1, U=X[t], e=y[t:t + 1])
        else:
            self.ls.remove_rows(0, 1)
        self.t += 1
        return self.ls.solve()

    def window(self):
        return self.X[self.t:self.t + self.m], self.y[self.t:self.t + self.m]


def window_cases(cp, dtype, m, n, steps=400):
    """(q, window without graphs, window with graphs, recomputation on a window): one
    step of a sliding window each call; the recomputation is cuSOLVER's QR of the window
    and the triangular solve (cupyx.scipy.linalg.solve_triangular)."""
    from cupyx.scipy.linalg import solve_triangular
    rng = np.random.default_rng(m + n + 1)
    X = cp.asarray(rng.standard_normal((m + steps, n)), dtype=dtype)
    y = cp.asarray(rng.standard_normal(m + steps), dtype=dtype)

    def recompute(W=X[:m], b=y[:m]):
        Q, R = cp.linalg.qr(W)
        return solve_triangular(R, Q.T @ b)
    for q in ("full", "thin", "none"):
        yield q, Window(X, y, m, q), Window(X, y, m, q), recompute


def per_call_ms(cp, calls, blocks=9, count=10):
    """Median wall-clock ms per call of each of ``calls``, their blocks interleaved."""
    for call in calls:
        for _ in range(3):
            call()
    times = [[] for _ in calls]
    for _ in range(blocks):
        for call, took in zip(calls, times):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(count):
                call()
                cp.cuda.Device().synchronize()
            took.append((time.perf_counter() - t0) / count * 1e3)
    return [float(np.median(took)) for took in times]


def with_graphs(flag, call):
    def run():
        with graphs.using(flag):
            return call()
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--out", type=Path, required=True, help="markdown file to write")
    args = parser.parse_args(argv)
    import cupy as cp
    name = gpu_name()
    lines = [f"# Small updates on the GPU, call by call ({name})", "",
             "Command: `python3 benchmarks/small_sizes.py --out ...`  ",
             f"CuPy {cp.__version__}; wall-clock ms per call, device synchronised after "
             "each, median of 9 blocks of 10 calls, the three ways' blocks interleaved. "
             "graph: whether the update was replayed from a CUDA graph (no: its recording "
             "was refused, and it ran as without graphs).", "",
             "| dtype | m | n | update | Q | update ms, no graph | update ms, graphs | graph "
             "| QR recomputed ms | error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    refusals = set()
    for dtype in args.dtypes:
        for m, n in SIZES:
            for update, q, call, A1, recompute in cases(cp, dtype, m, n):
                graphs.clear()
                plain, graphed = with_graphs(False, call), with_graphs(True, call)
                t_plain, t_graph, t_qr = per_call_ms(cp, [plain, graphed, recompute])
                replayed = graphs.info()["replayed"] > 0
                refusals.update(graphs.info()["refusals"])
                err = max(float(cp.linalg.norm(Q1 @ R1 - A1) / cp.linalg.norm(A1))
                          for Q1, R1 in (plain(), graphed()))
                line = (f"| {dtype} | {m} | {n} | {update} | {q} | {t_plain:.2f} "
                        f"| {t_graph:.2f} | {'yes' if replayed else 'no'} | {t_qr:.2f} "
                        f"| {err:.1e} |")
                lines.append(line)
                print(line, flush=True)
    lines += ["", "## A sliding window of least squares, step by step", "",
              "One call: `LeastSquaresQR.add_rows` (the newest row, at the end), "
              "`remove_rows(0, 1)` (the oldest; for q = none a Cholesky downdate, which "
              "is not recorded) and `solve()`; against cuSOLVER's QR of the window and a "
              "triangular solve. error: the last solution against NumPy's lstsq of its "
              "window, relative.", "",
              "| dtype | m | n | Q | step ms, no graph | step ms, graphs | recompute ms "
              "| error |", "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines[-6:]), flush=True)
    for dtype in args.dtypes:
        for m, n in SIZES:
            for q, plain, graphed, recompute in window_cases(cp, dtype, m, n):
                graphs.clear()
                t_plain, t_graph, t_qr = per_call_ms(
                    cp, [with_graphs(False, plain), with_graphs(True, graphed), recompute])
                refusals.update(graphs.info()["refusals"])
                err = 0.0
                for way in (plain, graphed):
                    W, b = (a.get().astype(np.float64) for a in way.window())
                    x = np.linalg.lstsq(W, b, rcond=None)[0]
                    err = max(err, float(np.linalg.norm(way.ls.solve().get() - x)
                                         / np.linalg.norm(x)))
                line = (f"| {dtype} | {m} | {n} | {q} | {t_plain:.2f} | {t_graph:.2f} "
                        f"| {t_qr:.2f} | {err:.1e} |")
                lines.append(line)
                print(line, flush=True)
    lines += ["", "Why the updates without a graph were not recorded:", ""]
    lines += [f"- {reason}" for reason in sorted(refusals)] or ["- (none)"]
    print("\n".join(lines[-len(refusals) - 3:]), flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
