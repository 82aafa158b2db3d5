"""Every rotation of the Givens sweeps found by scans instead of wave after wave (NumPy):
its accuracy against the wave chain, and how long each chain is.

    python3 benchmarks/scan_rotations.py > benchmarks/results/scan-rotations.md

The sweeps of adding columns and removing rows (``qrlab.stages.Sweeps``) are found on
their driver lines D (N x p) before they are applied to Q and R.  Sweep s zeroes column s
of D bottom-up, rotation i acting on rows (i - 1, i), ``tops[s] < i < bottoms[s]``; the
GPU's rotation kernel (``kernels/strips.cu``) runs them as N + 2p dependent waves, and
on an H200 a wave takes 0.5 to 1 us, so removing 100 rows of 12000 x 10000 spends about
10^4 waves on that chain.  But the chain has a closed form:

* in column s, what rotation i + 1 carries up to row i is ``sign(x_i) ||x[i:b]||``
  (``c a + s b`` of ``qrlab.givens.givens`` has a's sign and the pair's norm), so
  rotation i is ``givens(x_{i-1}, sign(x_i) ||x[i:b]||)``: one suffix scan of squares
  (scaled by the column's largest entry) gives every rotation of a sweep at once;
* in a column t > s, sweep s carries ``y_{i-1} = c_i x_{i-1} + s_i y_i`` up and leaves
  ``c_i y_i - s_i x_{i-1}`` at row i: a first-order linear recurrence, one scan of affine
  maps.

So the rotations need 2p scans of N one after the other (sweep s waits only for sweep
s - 1 to reach column s), log2 N levels each, where the waves chain N + 2p steps.  This
script finds the rotations so, with the scans added as a GPU block would (Hillis-Steele,
a tree of additions, not left to right), applies them to Q and R as the reference
executor does, and compares the factors' errors with those of the wave chain, on
random, graded (singular values down to 1e-6, 1e-3 in float32) and row-graded matrices,
and matrices whose rows at k .. k + p are 1000 times the others (removed, they leave Q
rows of leverage near one; added as columns, nothing special).
"""
import numpy as np

from qrlab import updates
from qrlab.executor import Executor
from qrlab.givens import givens

CASES = [("delete_rows", 400, 200, 20, 50), ("delete_rows", 1200, 700, 40, 0),
         ("insert_cols", 500, 200, 30, 10), ("insert_cols", 900, 600, 60, 100)]


def suffix_scan(items, combine):
    """Inclusive suffix scan by Hillis-Steele: ``log2 n`` rounds of ``combine(items, d)``,
    each joining item j with item j + d."""
    n = len(items[0])
    d = 1
    while d < n:
        items = combine(items, d)
        d *= 2
    return items


def _add(items, d):
    (x,) = items
    y = x.copy()
    y[:-d] += x[d:]
    return (y,)


def _compose(items, d):
    # item j is the map y -> A_j y + B_j, applied after the maps of the items past it
    A, B = items
    A2, B2 = A.copy(), B.copy()
    A2[:-d] = A[:-d] * A[d:]
    B2[:-d] = A[:-d] * B[d:] + B[:-d]
    return A2, B2


def sweep_rotations(x, top, bottom):
    """``(c, s)`` of the rotations ``i = top + 1 .. bottom - 1`` that zero ``x`` bottom-up,
    from one suffix scan of its squares."""
    seg = x[top:bottom]
    scale = np.abs(seg).max()
    if scale == 0:
        return np.ones(len(seg) - 1, x.dtype), np.zeros(len(seg) - 1, x.dtype)
    (sq,) = suffix_scan(((seg / scale) ** 2,), _add)
    carried = np.where(seg < 0, -1, 1).astype(x.dtype) * np.sqrt(sq) * scale
    return givens(seg[:-1], carried[1:])


def apply_sweep(X, top, bottom, c, s):
    """One sweep's rotations applied bottom-up to the columns of ``X`` (rows ``top`` to
    ``bottom - 1``), by one scan of the affine maps ``y -> s_i y + c_i x_{i-1}``."""
    seg = X[top:bottom]
    A = np.zeros_like(seg)
    B = np.zeros_like(seg)
    A[:-1] = s[:, None]
    B[:-1] = c[:, None] * seg[:-1]
    B[-1] = seg[-1]                             # the bottom row enters as it is
    _, y = suffix_scan((A, B), _compose)        # y[j]: what reaches row top + j
    out = np.empty_like(seg)
    out[0] = y[0]
    out[1:] = c[:, None] * y[1:] - s[:, None] * seg[:-1]
    X[top:bottom] = out


class ScanExecutor(Executor):
    """The reference executor with the sweeps' rotations found by scans; ``chains``: per
    block of sweeps, its count of waves and of scans one after the other (2 a sweep)."""

    def __init__(self):
        super().__init__()
        self.chains = []

    def rotations(self, xp, op, D):
        found = {}
        for s, (top, bottom) in enumerate(zip(op.tops, op.bottoms)):
            if bottom - 1 > top:
                c, sn = sweep_rotations(D[:, s], top, bottom)
                apply_sweep(D[:, s:], top, bottom, c, sn)    # its column and those after
                D[top + 1:bottom, s] = 0
                found[s] = (top, c, sn)
        waves = []
        for wave in op.waves():
            ib = np.array([i for _, i in wave])
            c = np.array([found[s][1][i - found[s][0] - 1] for s, i in wave], D.dtype)
            sn = np.array([found[s][2][i - found[s][0] - 1] for s, i in wave], D.dtype)
            waves.append((ib - 1, ib, c, sn, int(ib.min()) - 1, int(ib.max()) + 1))
        self.chains.append((len(waves), 2 * len(found)))
        return waves


def matrix(rng, m, n, kind, dtype, rows=(0, 0)):
    if kind == "random":
        return rng.standard_normal((m, n)).astype(dtype)
    if kind == "heavy rows":            # the rows to remove 1000 times the others
        A = rng.standard_normal((m, n))
        A[rows[0]:rows[1]] *= 1e3
        return A.astype(dtype)
    low = -6 if dtype == np.float64 else -3
    U = np.linalg.qr(rng.standard_normal((m, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A = (U * np.logspace(0, low, n)) @ V.T
    if kind == "row-graded":
        A *= np.logspace(0, low, m)[:, None]
    return A.astype(dtype)


def errors(Q, R, A, eps):
    Q, R = Q.astype(np.float64), R.astype(np.float64)
    return (np.linalg.norm(Q.T @ Q - np.eye(Q.shape[1])) / eps,
            np.linalg.norm(Q @ R - A) / np.linalg.norm(A) / eps)


def main():
    rng = np.random.default_rng(0)
    print(__doc__.split("\n\n")[0].replace("\n", " ") + "\n")
    print("    python3 benchmarks/scan_rotations.py\n")
    print("Errors in units of the dtype's eps: `orth` is ||Q^T Q - I||_F, `back` "
          "||QR - A~||_F / ||A~||_F; `R differs` is max | |R_scan| - |R_waves| | / max |R|.  "
          "`waves`: the chain of the sweeps now (dependent waves); `scans`: the scans one "
          "after the other instead (two a sweep).\n")
    print("| dtype | matrix | update | m x n | p | k | waves orth | waves back | scans orth "
          "| scans back | R differs (eps) | waves | scans |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dtype in (np.float32, np.float64):
        eps = np.finfo(dtype).eps
        for kind in ("random", "graded", "row-graded", "heavy rows"):
            for op, m, n, p, k in CASES:
                A = matrix(rng, m, n, kind, dtype, (k, k + p))
                Q, R = (x.astype(dtype) for x in np.linalg.qr(A.astype(np.float64),
                                                              mode="complete"))
                U = rng.standard_normal((m, p)).astype(dtype)
                out = []
                scan = ScanExecutor()
                for ex in (Executor(), scan):
                    if op == "delete_rows":
                        Q1, R1 = updates._delete_rows(Q, R, k, p, "full", ex)
                        A1 = np.delete(A, range(k, k + p), axis=0)
                    else:
                        Q1, R1 = updates._insert_cols(Q, R, U, k, "full", ex)
                        A1 = np.insert(A, [k] * p, U, axis=1)
                    assert np.all(np.tril(R1, -1) == 0)
                    out.append((errors(Q1, R1, A1.astype(np.float64), eps), R1))
                (wo, wb), Rw = out[0]
                (so, sb), Rs = out[1]
                diff = np.abs(np.abs(Rs) - np.abs(Rw)).max() / np.abs(Rw).max() / eps
                waves, scans = (sum(c) for c in zip(*scan.chains))
                print(f"| {np.dtype(dtype).name} | {kind} | {op} | {m} x {n} | {p} | {k} | "
                      f"{wo:.1f} | {wb:.1f} | {so:.1f} | {sb:.1f} | {diff:.1f} | "
                      f"{waves} | {scans} |", flush=True)


if __name__ == "__main__":
    main()
