"""Givens rotations: the stable construction (seed 003) and elimination schedules.

A rotation on rows ``(a, b)`` is ``G = [[c, s], [-conj(s), c]]`` with ``c`` real; it is
chosen so that ``G [x_a; x_b] = [r; 0]``.  ``c`` and ``s`` come from ``hypot``, which scales
to avoid the overflow and underflow of ``sqrt(x_a^2 + x_b^2)`` (003 Section 2).
"""
from __future__ import annotations

from .backend import array_module

__all__ = ["givens", "rotate_rows", "schedule_column_order", "schedule_wavefront",
           "schedule_two_row_strips"]


def givens(a, b):
    """Rotation coefficients that zero ``b`` against ``a`` (elementwise over arrays).

    Returns ``c`` (real) and ``s`` with ``c a + s b = r`` and ``-conj(s) a + c b = 0``,
    ``|r| = hypot(|a|, |b|)``.  ``a = b = 0`` gives the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from qrlab.givens import givens
    >>> c, s = givens(np.array([3.0]), np.array([4.0]))
    >>> float(c[0]), float(s[0])
    (0.6, 0.8)
    >>> bool(np.isclose(c[0] * 3 + s[0] * 4, 5)), bool(abs(-s[0] * 3 + c[0] * 4) < 1e-15)
    (True, True)
    """
    xp = array_module(a, b)
    abs_a, abs_b = abs(a), abs(b)
    r = xp.hypot(abs_a, abs_b)
    safe_r = xp.where(r == 0, 1, r)
    c = xp.where(r == 0, 1, abs_a / safe_r)
    if a.dtype.kind == "c":
        phase = xp.where(abs_a == 0, 1, a / xp.where(abs_a == 0, 1, abs_a))
        s = xp.where(r == 0, 0, phase * b.conj() / safe_r)
    else:
        # a = 0, b != 0: c = 0, s = sign(b) keeps r = |b| >= 0 ...
        sign_a = xp.where(a < 0, -1, 1)
        s = xp.where(r == 0, 0, sign_a * b / safe_r)
    return c.astype(a.real.dtype), s.astype(a.dtype)


def rotate_rows(X, ia, ib, c, s):
    """Apply rotations in place to rows ``ia`` and ``ib`` of ``X`` (row index arrays)."""
    Xa, Xb = X[ia], X[ib]
    c = c[:, None]
    s = s[:, None]
    X[ia] = c * Xa + s * Xb
    X[ib] = c * Xb - s.conj() * Xa


def schedule_column_order(m: int, n: int):
    """Step numbers of Givens QR eliminating column by column, bottom-up (003 eq. 6).

    Returns an ``m x n`` list of lists: entry ``(i, j)`` below the diagonal is the step at
    which it is zeroed (rotation of rows ``i-1, i``); 0 elsewhere.  ``max`` of the grid is
    the number of sequential steps.
    """
    grid = [[0] * n for _ in range(m)]
    step = 0
    for j in range(min(n, m - 1)):
        for i in range(m - 1, j, -1):
            step += 1
            grid[i][j] = step
    return grid


def schedule_wavefront(m: int, n: int):
    """Step numbers of the parallel (wavefront) Givens schedule (003 eq. 7).

    Column ``j`` starts two steps after column ``j-1``, so entry ``(i, j)`` is zeroed at
    step ``(m - 1 - i) + 2 j + 1``; rotations of one step touch disjoint pairs of rows.
    """
    grid = [[0] * n for _ in range(m)]
    for j in range(min(n, m - 1)):
        for i in range(m - 1, j, -1):
            grid[i][j] = (m - 1 - i) + 2 * j + 1
    return grid


def schedule_two_row_strips(m: int, n: int):
    """The papers' GPU scheme (001 Fig. 1, 000 Fig. 5): each thread owns a strip of two
    rows; within a stage every strip zeroes one entry, strips start one stage apart in
    each column.  Entry ``(i, j)`` is zeroed at stage ``(m - 1 - i) + 2 j + 1`` like the
    wavefront, and each stage costs two kernel launches (makeGivens, applyGivens).
    """
    return schedule_wavefront(m, n)
