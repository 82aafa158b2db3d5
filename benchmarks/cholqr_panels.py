"""The triangle of [S; B] (S square upper triangular, B p x n) by panels whose reflectors come
from a Cholesky factor of the panel's Gram matrix, not from a chain of column steps: how
accurate it is, against Householder QR (LAPACK's, as ``numpy.linalg.qr``).  NumPy only.

Adding rows and removing columns without Q (000 Tables 6 to 9) end in this triangle, and
on a GPU the chain of reflectors (``kernels/triangle.cu``) takes most of its time in the
panels' factorizations: 32 dependent column steps a panel, each a reduction over the
panel's rows.  Panel X = [S_pp; B_p] (w + p rows) by Cholesky QR instead:

    R_p = chol(X^T X),   Q1 = X R_p^{-1}                     (twice with ``refine``: CholeskyQR2)

Q1's top w x w block is upper triangular, so the reflectors follow with no LU (Householder
reconstruction with the top known): U = Q1_top - D (D = -sign(diag Q1_top)), Y = [I;
Q1_bot U^{-1}], and T from Y alone (T^{-1} + T^{-T} = Y^T Y), so that I - Y T Y^T is
orthogonal to rounding whatever Q1's loss of orthogonality.  Its critical path is a few
Gram products over the rows, one w x w Cholesky factor a pass, T's inverse and
triangular solves of the rows with w x w triangles, where the chain has w dependent
reductions over the rows.
The panel's own rows below w after I - Y T^T Y^T are dropped; their largest value,
relative to the panel's, is the "residual" column.

Problems: ``square_route.pivot_problem`` (one pivot of a well-conditioned R shrinking
against its row; s = 1000, p = 64 and s = 2000, p = 200), as it is and with the rows
scaled by the pivot's fraction (so that the pivot's panel is ill-conditioned too), and
graded R with ``--graded``.  Error: ||R1^T R1 - G|| / ||G||, G = [S; B]^T [S; B] in float64.

Usage: ``python3 benchmarks/cholqr_panels.py [--graded] [--out FILE.md]``
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.linalg as sl

from square_route import PIVOT_FRACTIONS, PIVOT_SIZES, gram, gram_error, pivot_problem


def panel_reflectors(X, h, refine):
    """The reflectors Y, T of panel X (h + p rows, h columns, the top h x h upper
    triangular) by Cholesky QR (the panel's R is then the top of (I - Y T Y^T)^T X)."""
    Rp = np.linalg.cholesky(X.T @ X).T
    Q1 = sl.solve_triangular(Rp, X.T, trans="T").T
    if refine:
        R2 = np.linalg.cholesky(Q1.T @ Q1).T
        Q1 = sl.solve_triangular(R2, Q1.T, trans="T").T
    d = -np.sign(np.diag(Q1[:h]))
    d[d == 0] = -1
    U = np.triu(Q1[:h]) - np.diag(d)
    Y = np.vstack([np.eye(h, dtype=X.dtype), sl.solve_triangular(U, Q1[h:].T, trans="T").T])
    G = Y.T @ Y
    T = sl.solve_triangular(np.triu(G, 1) + np.diag(np.diag(G) / 2), np.eye(h, dtype=X.dtype))
    return Y, T.astype(X.dtype)


def triangle_by_cholqr(S, B, w=32, refine=True):
    """The triangle of [S; B] (positive diagonal) by panels of w columns, and the largest
    residual of a panel's annihilated rows."""
    n = S.shape[0]
    R, B = np.zeros_like(S), B.copy()
    worst = 0.0
    for j in range(0, n, w):
        e = min(j + w, n)
        X = np.vstack([S[j:e, j:], B[:, j:]])
        Y, T = panel_reflectors(X[:, :e - j], e - j, refine)
        HX = X - Y @ (T.T @ (Y.T @ X))
        worst = max(worst, np.abs(HX[e - j:, :e - j]).max() / np.abs(X[:, :e - j]).max())
        R[j:e, j:] = HX[:e - j]
        R[j:e, j:e] = np.triu(R[j:e, j:e])
        B[:, e:] = HX[e - j:, e - j:]
    return np.sign(np.diag(R))[:, None] * R, worst


def graded_problem(s, p, cond, dtype, rng):
    """R of a 2s x s matrix with singular values from 1 to 1 / cond, and p rows of its size."""
    Q, _ = np.linalg.qr(rng.standard_normal((2 * s, s)))
    V, _ = np.linalg.qr(rng.standard_normal((s, s)))
    R = np.linalg.qr((Q * np.logspace(0, -np.log10(cond), s)) @ V.T, mode="r")
    return R.astype(dtype), (rng.standard_normal((p, s)) / np.sqrt(s)).astype(dtype)


def rows(cases):
    out = ["| dtype | s | p | problem | Householder | Cholesky QR | residual | CholeskyQR2 |"
           " residual |", "|---|---|---|---|---|---|---|---|---|"]
    for dtype, s, p, label, S, B in cases:
        G = gram(S, B)
        cells = [f"{gram_error(np.linalg.qr(np.vstack([S, B]), mode='r'), G):.1e}"]
        for refine in (False, True):
            try:
                R1, worst = triangle_by_cholqr(S, B, refine=refine)
                cells += [f"{gram_error(R1, G):.1e}", f"{worst:.1e}"]
            except np.linalg.LinAlgError:
                cells += ["not positive definite", ""]
        out.append(f"| {np.dtype(dtype).name} | {s} | {p} | {label} | " + " | ".join(cells)
                   + " |")
        print(out[-1], flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graded", action="store_true", help="also graded R, cond 1e2 to 1e12")
    ap.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = ap.parse_args(argv)
    cases = [(dtype, s, p, f"pivot {t:.0e}{', rows x pivot' if small else ''}", S,
              B * dtype(t) if small else B)
             for dtype in (np.float32, np.float64) for s, p in PIVOT_SIZES
             for small in (False, True) for t in PIVOT_FRACTIONS
             for S, B in [pivot_problem(s, p, t, dtype)]]
    if args.graded:
        rng = np.random.default_rng(3)
        cases += [(dtype, 1000, 64, f"cond {c:.0e}", *graded_problem(1000, 64, c, dtype, rng))
                  for dtype in (np.float32, np.float64) for c in (1e2, 1e6, 1e12)]
    table = rows(cases)
    if args.out:
        args.out.write_text("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
