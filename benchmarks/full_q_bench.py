"""Time adding rows, removing columns and rank-p updates with the full Q on a GPU: one
triangle launch and two GEMMs of Q (``GpuExecutor.triangle_keeps_q``, the default) against
the same update panel by panel, and against recomputing the full QR of the new matrix
(cuSOLVER).

For each case, device-resident data, CUDA events, one warm-up run, the median of
--reps runs, a 256 MiB buffer rewritten before each so that no run starts with a warm
L2 cache (``cholesky_bench.Clock``).  Each run is checked: ||Q1 R1 - A1|| / ||A1|| and
max |Q1^T Q1 - I| for both paths.  Prints a markdown table and writes it to --out.

Usage (GPU): python3 benchmarks/full_q_bench.py --out benchmarks/results/full-q.md
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import qrlab  # noqa: E402
from qrlab.backend import gpu_name  # noqa: E402
from cholesky_bench import Clock, median_ms  # noqa: E402  (this folder)

# (update, m, n, p, k): a row or column at the front, the middle, and the papers' sizes
CASES = [("insert rows", 2000, 200, 1, 100), ("insert rows", 8000, 1000, 1, 500),
         ("insert rows", 8000, 1000, 16, 500), ("insert rows", 8000, 3000, 500, 0),
         ("delete cols", 2000, 200, 1, 0), ("delete cols", 8000, 1000, 1, 0),
         ("delete cols", 8000, 1000, 1, 500), ("delete cols", 12000, 3000, 500, 0),
         ("rank update", 2000, 200, 1, 0), ("rank update", 8000, 1000, 1, 0),
         ("rank update", 8000, 1000, 16, 0), ("rank update", 12000, 3000, 32, 0)]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    p.add_argument("--reps", type=int, default=7, help="timed repetitions (median; >= 5)")
    p.add_argument("--out", type=Path, required=True, help="markdown file to write")
    return p.parse_args(argv)


def run_case(cp, clock, dtype, case, reps):
    from qrlab.gpu import GpuExecutor
    op, m, n, p, k = case
    rng = np.random.default_rng(m + n + p + k)
    A = cp.asarray(rng.standard_normal((m, n)), dtype=dtype)
    Q, R = cp.linalg.qr(A, mode="complete")
    if op == "insert rows":
        U = cp.asarray(rng.standard_normal((p, n)), dtype=dtype)
        A1 = cp.concatenate([A[:k], U, A[k:]], axis=0)
        update = lambda: qrlab.qr_insert(Q, R, U, k, "row")            # noqa: E731
    elif op == "delete cols":
        A1 = cp.concatenate([A[:, :k], A[:, k + p:]], axis=1)
        update = lambda: qrlab.qr_delete(Q, R, k, p, "col")            # noqa: E731
    else:
        U, V = (cp.asarray(rng.standard_normal((s, p)), dtype=dtype) for s in (m, n))
        A1 = A + U @ V.T
        update = lambda: qrlab.qr_update(Q, R, U, V)                   # noqa: E731
    row = {"update": op, "m": m, "n": n, "p": p, "k": k}
    eye = cp.eye(A1.shape[0], dtype=dtype)
    for key, keeps_q in (("one", True), ("panels", False)):
        GpuExecutor.triangle_keeps_q = keeps_q
        try:
            row[key] = median_ms(clock, tuple, update, reps)[0]
            Q1, R1 = update()
        finally:
            GpuExecutor.triangle_keeps_q = True
        row[key + "_err"] = float(cp.linalg.norm(Q1 @ R1 - A1) / cp.linalg.norm(A1))
        row[key + "_orth"] = float(cp.abs(Q1.T @ Q1 - eye).max())
        del Q1, R1
    row["qr"] = median_ms(clock, tuple, lambda: cp.linalg.qr(A1, mode="complete"), reps)[0]
    return row


def main(argv=None):
    args = parse_args(argv)
    import cupy as cp
    name = gpu_name()
    clock = Clock(cp)
    lines = [f"# Full-Q updates on the GPU: one triangle launch vs panel by panel ({name})",
             "",
             f"Command: `python3 benchmarks/full_q_bench.py --reps {args.reps} --out ...`  ",
             f"CuPy {cp.__version__}; CUDA events, median of {args.reps} runs after a "
             "warm-up, L2 flushed before each; times in ms.",
             "",
             "| dtype | update | m | n | p | k | one launch | panel by panel | speed-up "
             "| QR recomputed | error one / panels | orthogonality one / panels |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for dtype in args.dtypes:
        for case in CASES:
            r = run_case(cp, clock, np.dtype(dtype).type, case, args.reps)
            line = (f"| {dtype} | {r['update']} | {r['m']} | {r['n']} | {r['p']} | {r['k']} "
                    f"| {r['one']:.2f} | {r['panels']:.2f} | {r['panels'] / r['one']:.1f} "
                    f"| {r['qr']:.1f} | {r['one_err']:.1e} / {r['panels_err']:.1e} "
                    f"| {r['one_orth']:.1e} / {r['panels_orth']:.1e} |")
            lines.append(line)
            print(line, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
