"""Accuracy of the updates in the papers' terms (001 Tables 3-5, 000 Tables 12-15).

For a least-squares problem ``min ||A x - b||`` updated by adding or removing ``p`` rows
or columns at ``k``:

* forward error ``||x - x^|| / ||x||`` of the solution from the updated factors against a
  solution from a fresh QR factorization of the updated matrix (Table 3);
* orthogonality ``||Q~^H Q~ - I||_2`` (Table 4; the updates that form Q);
* backward error ``||Q~ R~ - A~||_2 / ||A||_2`` (Table 5).

``python -m qrlab.accuracy`` prints the table at the papers' size (m = 4000, n = 2000,
k = 0, p in 100..900) on the default backend; ``--small`` shrinks it tenfold.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from . import updates
from .backend import default_module, executor_for, solve_triangular

__all__ = ["PAPER_SERIAL", "update_errors", "accuracy_table"]

# 001 Tables 3-5, the "Serial" columns (float32), keyed by p.
PAPER_SERIAL = {
    "forward": {"insert_rows": dict(zip((100, 300, 500, 700, 900), (3e-6, 2e-6, 3e-6, 3e-6, 3e-6))),
                "delete_cols": dict(zip((100, 300, 500, 700, 900), (3e-6, 3e-6, 2e-6, 2e-6, 2e-6))),
                "delete_rows": dict(zip((100, 300, 500, 700, 900), (4e-6, 4e-6, 4e-6, 5e-6, 5e-6))),
                "insert_cols": dict(zip((100, 300, 500, 700, 900), (3e-6, 5e-6, 6e-6, 6e-6, 8e-6)))},
    "orthogonality": {"delete_rows": dict(zip((100, 300, 500, 700, 900),
                                              (1.62e-4, 1.76e-4, 1.85e-4, 1.90e-4, 1.93e-4))),
                      "insert_cols": dict(zip((100, 300, 500, 700, 900),
                                              (1.68e-4, 4.67e-4, 6.00e-4, 2.29e-4, 2.46e-4)))},
    "backward": {"delete_rows": dict(zip((100, 300, 500, 700, 900),
                                         (7.40e-5, 1.87e-4, 3.04e-4, 4.12e-4, 5.00e-4))),
                 "insert_cols": dict(zip((100, 300, 500, 700, 900),
                                         (5.00e-5, 6.10e-5, 6.90e-5, 7.70e-5, 8.30e-5)))},
}

OPS = ("insert_rows", "delete_cols", "delete_rows", "insert_cols")


def _norm2(xp, X):
    return float(xp.linalg.norm(X, 2))


def update_errors(xp, op, m, n, p, k, dtype, seed=0):
    """The three errors of one update (orthogonality and backward error only where the
    update forms Q, as in the papers)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)

    def rand(*shape):
        return xp.asarray(rng.uniform(-1, 1, shape), dtype=dt)

    A, b = rand(m, n), rand(m)
    ex = executor_for(xp)
    Q, R = xp.linalg.qr(A, mode="complete")
    Rd = xp.concatenate([R, (Q.T @ b)[:, None]], axis=1)
    if op == "insert_cols":
        U = rand(m, p)
        Q1, R1 = updates._insert_cols(Q, Rd, U, k, "full", ex, nc=1)
        A1, b1, n1 = xp.concatenate([A[:, :k], U, A[:, k:]], axis=1), b, n + p
    elif op == "delete_cols":
        Q1, R1 = updates._delete_cols(Q, Rd, k, p, "full", ex, nc=1)
        A1, b1, n1 = xp.concatenate([A[:, :k], A[:, k + p:]], axis=1), b, n - p
    elif op == "insert_rows":
        U, e = rand(p, n), rand(p)
        Q1, R1 = updates._insert_rows(Q, Rd, xp.concatenate([U, e[:, None]], axis=1), k,
                                      "full", ex, nc=1)
        A1 = xp.concatenate([A[:k], U, A[k:]], axis=0)
        b1, n1 = xp.concatenate([b[:k], e, b[k:]]), n
    else:
        Q1, R1 = updates._delete_rows(Q, Rd, k, p, "full", ex, nc=1)
        A1 = xp.concatenate([A[:k], A[k + p:]], axis=0)
        b1, n1 = xp.concatenate([b[:k], b[k + p:]]), n
    x_hat = solve_triangular(R1[:n1, :n1], R1[:n1, n1])
    Qr, Rr = xp.linalg.qr(A1)
    x = solve_triangular(Rr, Qr.T @ b1)
    out = {"forward": float(xp.linalg.norm(x - x_hat) / xp.linalg.norm(x))}
    if op in ("insert_cols", "delete_rows"):
        I = xp.eye(Q1.shape[1], dtype=dt)
        out["orthogonality"] = _norm2(xp, Q1.T @ Q1 - I)
        out["backward"] = _norm2(xp, Q1 @ R1[:, :n1] - A1) / _norm2(xp, A)
    return out


def accuracy_table(xp=None, dtype="float32", m=4000, n=2000, k=0,
                   ps=(100, 300, 500, 700, 900)):
    """Rows ``{op, p, forward, orthogonality?, backward?, paper: {...}}``."""
    xp = xp or default_module()
    rows = []
    for p in ps:
        for op in OPS:
            errs = update_errors(xp, op, m, n, p, k, dtype)
            paper = {what: PAPER_SERIAL[what].get(op, {}).get(p) for what in errs}
            rows.append(dict(op=op, p=p, dtype=str(np.dtype(dtype)), **errs, paper=paper))
    return rows


def markdown(rows):
    lines = ["| update | p | dtype | forward (paper serial) | ||Q^T Q - I|| (paper) | "
             "backward (paper) |", "|---|---|---|---|---|---|"]

    def cell(r, what):
        if what not in r:
            return "-"
        ref = r["paper"].get(what)
        return f"{r[what]:.1e}" + (f" ({ref:.1e})" if ref is not None else "")

    for r in rows:
        lines.append(f"| {r['op']} | {r['p']} | {r['dtype']} | {cell(r, 'forward')} | "
                     f"{cell(r, 'orthogonality')} | {cell(r, 'backward')} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description="accuracy of the updates, 001 Tables 3-5")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--small", action="store_true", help="m, n and p ten times smaller")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    args = ap.parse_args(argv)
    scale = 10 if args.small else 1
    rows = accuracy_table(dtype=args.dtype, m=4000 // scale, n=2000 // scale,
                          ps=tuple(p // scale for p in (100, 300, 500, 700, 900)))
    print(markdown(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
