"""``python -m qrlab``: one update walked through in the terminal, then checked on numbers.

No browser and no GPU needed.  The update's fill pattern is printed stage by stage as
text grids (the papers' symbols: ``*`` nonzero, ``0`` zero, ``-`` made zero by the stage,
``+`` fill-in), then the same update runs on random data through the public
``qr_insert`` / ``qr_delete`` / ``qr_update`` and one line reports the residual, the
orthogonality of the new Q and the shape of the new R.  The exit status is 0 when the
check passes, 1 when it fails.

Examples
--------
Remove ``p=2`` columns at ``k=1`` (0-based) from an 8x5 matrix, the default::

    python -m qrlab
    python -m qrlab --op insert-rows --m 6 --n 4 --p 2 --k 3
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

OPS = {"insert-cols": "insert_cols", "delete-cols": "delete_cols",
       "insert-rows": "insert_rows", "delete-rows": "delete_rows",
       "rank-update": "rank_update"}


def _parser():
    ap = argparse.ArgumentParser(
        prog="python -m qrlab",
        description="Walk one QR update stage by stage as text fill patterns, then check "
                    "it on random numbers. Indices are 0-based (the papers count from 1).")
    ap.add_argument("--op", choices=list(OPS), default="delete-cols",
                    help="the update (default: delete-cols)")
    ap.add_argument("--m", type=int, default=8, help="rows of A (default 8)")
    ap.add_argument("--n", type=int, default=5, help="columns of A (default 5)")
    ap.add_argument("--p", type=int, default=2,
                    help="rows or columns added or removed, or the rank (default 2)")
    ap.add_argument("--k", type=int, default=1,
                    help="0-based index of the first row or column (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--waves", action="store_true",
                    help="one grid per Givens wave and Householder panel, not per stage")
    return ap


def _numeric(kind, m, n, p, k, rng):
    """Run the public update on random data: ``(Q~, R~, A~)``."""
    from .updates import qr_delete, qr_insert, qr_update
    A = rng.standard_normal((m, n))
    Q, R = np.linalg.qr(A, mode="complete")
    if kind == "insert_cols":
        U = rng.standard_normal((m, p))
        Q1, R1 = qr_insert(Q, R, U, k, which="col")
        A1 = np.concatenate([A[:, :k], U, A[:, k:]], axis=1)
    elif kind == "insert_rows":
        U = rng.standard_normal((p, n))
        Q1, R1 = qr_insert(Q, R, U, k, which="row")
        A1 = np.concatenate([A[:k], U, A[k:]], axis=0)
    elif kind == "delete_cols":
        Q1, R1 = qr_delete(Q, R, k, p, which="col")
        A1 = np.delete(A, range(k, k + p), axis=1)
    elif kind == "delete_rows":
        Q1, R1 = qr_delete(Q, R, k, p, which="row")
        A1 = np.delete(A, range(k, k + p), axis=0)
    else:
        U, V = rng.standard_normal((m, p)), rng.standard_normal((n, p))
        Q1, R1 = qr_update(Q, R, U, V)
        A1 = A + U @ V.T
    return Q1, R1, A1


def check_line(Q1, R1, A1):
    """``(line, ok)``: residual, orthogonality and triangularity of the new factors."""
    eps = np.finfo(A1.dtype).eps
    tol = 100 * eps * max(A1.shape + (1,))
    resid = np.linalg.norm(Q1 @ R1 - A1) / (np.linalg.norm(A1) or 1.0)
    orth = np.linalg.norm(Q1.T @ Q1 - np.eye(Q1.shape[1]))
    upper = not np.tril(R1, -1).any()
    ok = resid <= tol and orth <= tol and upper
    line = (f"check: ||Q~R~ - A~|| / ||A~|| = {resid:.1e}, ||Q~^T Q~ - I|| = {orth:.1e}, "
            f"R~ upper triangular: {'yes' if upper else 'no'} -> {'OK' if ok else 'FAILED'}")
    return line, ok


def main(argv=None) -> int:
    """Print the walk-through and the check; return the exit status (0 OK, 1 failed)."""
    from .patterns import describe, limits, trace
    from .viz import text
    ap = _parser()
    args = ap.parse_args(argv)
    kind = OPS[args.op]
    m, n, p, k = args.m, args.n, args.p, args.k
    if m < 1 or n < 1:
        ap.error("--m and --n must be at least 1")
    lim = limits(kind, m, n, p)
    p_max = m - 1 if kind == "delete_rows" else lim["p"][1]     # keep one row to check
    if not 1 <= p <= p_max:
        ap.error(f"--p must lie in 1..{p_max} for {args.op}")
    if kind != "rank_update" and not lim["k"][0] <= k <= lim["k"][1]:
        ap.error(f"--k must lie in {lim['k'][0]}..{lim['k'][1]} for {args.op} (0-based)")
    frames = trace(kind, m, n, p, k, detail=args.waves)
    print(f"{describe(kind, m, n, p, k)}: the fill pattern before each of its "
          f"{len(frames) - 2} step(s), then the result")
    print()
    for frame in frames:
        print(text(frame))
        print()
    Q1, R1, A1 = _numeric(kind, m, n, p, k, np.random.default_rng(args.seed))
    line, ok = check_line(Q1, R1, A1)
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
