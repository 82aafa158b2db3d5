"""A least-squares problem kept factorized while its rows and columns change.

The papers carry ``d = Q^H b`` along with R (001 Section 1): ``min ||A x - b||`` is then
``R[:n] x = d[:n]``, and the residual norm is ``||d[n:]||``.  ``d`` travels through every
update as one more column of R, so it costs one column of work.
"""
from __future__ import annotations

from . import updates
from .backend import (array_module, executor_for, require_finite, run_update,
                      solve_triangular)

__all__ = ["LeastSquaresQR"]

_MODES = ("full", "thin", "none")


class LeastSquaresQR:
    """Least squares ``min ||A x - b||_2`` under added and removed rows and columns.

    Parameters
    ----------
    A : (m, n) array
        Data matrix (NumPy or CuPy).
    b : (m,) or (m, r) array
        Right-hand side(s), same array module and dtype family as ``A``.
    q : {'full', 'thin', 'none'}
        Which orthogonal factor to keep: full ``m x m`` Q (all updates; ``d = Q^H b`` has
        ``m`` entries), thin ``m x n`` Q (also keeps ``b``, which growing Q needs), or
        none: only the triangular factor of ``[A, b]`` is kept (``O(n^2)`` memory).  The
        Q-less form can add rows, remove columns, and remove rows through a Cholesky
        downdate given the removed rows; it cannot add columns (``Q^H u`` needs Q).
    method : {'blocked', 'paper'}
        Passed to the updates (see :func:`qrlab.qr_insert`).

    Notes
    -----
    Nothing is ever recomputed from scratch: each method is one block update of the
    factors.  With ``q='none'`` the kept factor is ``R`` of ``[A, b]``: its last
    column above the diagonal is ``d``, its corner entry the residual norm, and adding
    rows is a Q-less row insertion (on a GPU, for large enough factors, a rank-p
    Cholesky update of that triangle: :func:`qrlab.cholesky_update`'s structured method,
    or the chain of reflectors where that method's growth test fails).  Removing rows is
    then the downdate ``R~^H R~ = R^H R - [U e]^H [U e]``, which loses accuracy as
    ``cond(A)^2`` where the Q-carrying update loses ``cond(A)`` (see
    :func:`qrlab.cholesky_downdate`).
    Where that downdate fails in b's columns only (b fitted exactly, dependent residuals,
    fewer than ``n + r`` rows left), A's block is downdated alone and the residual's
    factor remade from its Gram matrix: the residual norms then carry an error of about
    ``sqrt(eps) ||b||``.  Rows and columns that are not finite, complex data for a real
    problem, more unknowns than rows, and new columns in the span of the others (SciPy's
    test of a thin Q's new columns, with either Q) raise before any work.  Without Q, rows
    can be removed from real problems only (the Cholesky downdate is real).

    Examples
    --------
    >>> import numpy as np
    >>> from qrlab import LeastSquaresQR
    >>> rng = np.random.default_rng(0)
    >>> A, b = rng.standard_normal((20, 4)), rng.standard_normal(20)
    >>> ls = LeastSquaresQR(A, b)
    >>> U, e = rng.standard_normal((3, 4)), rng.standard_normal(3)
    >>> ls.add_rows(U, e, k=5)
    >>> ls.remove_columns(1)
    >>> A1 = np.delete(np.insert(A, [5] * 3, U, axis=0), 1, axis=1)
    >>> b1 = np.insert(b, [5] * 3, e)
    >>> bool(np.allclose(ls.solve(), np.linalg.lstsq(A1, b1, rcond=None)[0]))
    True
    """

    def __init__(self, A, b, q: str = "full", method: str = "blocked"):
        if q not in _MODES:
            raise ValueError(f"q must be one of {_MODES}, not {q!r}")
        xp = array_module(A, b)
        A, b = xp.asarray(A), xp.asarray(b)
        if A.ndim != 2:
            raise ValueError(f"A must be 2-D, got shape {A.shape}")
        self._vector = b.ndim == 1
        b = b[:, None] if self._vector else b
        if b.ndim != 2 or b.shape[0] != A.shape[0]:
            raise ValueError(f"b must have {A.shape[0]} rows, got shape {b.shape}")
        updates._check_dtypes(None, A, b, names=("b",))
        require_finite(A, b)
        self.xp, self.q, self.method = xp, q, method
        self.m, self.n = A.shape
        self.r = b.shape[1]
        if self.m < self.n:
            raise ValueError(f"A has fewer rows ({self.m}) than columns ({self.n}): the "
                             "problem is underdetermined")
        if q == "none":
            if self.m < self.n + self.r:
                raise ValueError("q='none' needs at least n + r rows (the triangular factor "
                                 "of [A, b] must be square)")
            self.Q, self.b = None, None
            self.R = xp.linalg.qr(xp.concatenate([A, b], axis=1), mode="r")
        else:
            self.Q, R = xp.linalg.qr(A, mode="complete" if q == "full" else "reduced")
            self.R = xp.concatenate([R, self.Q.conj().T @ b], axis=1)
            self.b = b.copy() if q == "thin" else None

    # -- views ---------------------------------------------------------------------
    @property
    def d(self):
        """``Q^H b``: the right-hand side carried with R."""
        return self.R[:, self.n:]

    @property
    def shape(self):
        return (self.m, self.n)

    def solve(self):
        """The least-squares solution ``x`` (``(n,)`` or ``(n, r)``)."""
        n = self.n
        x = solve_triangular(self.R[:n, :n], self.R[:n, n:])
        return x[:, 0] if self._vector else x

    def residual_norm(self):
        """``||A x - b||_2`` for the least-squares ``x`` (one value per right-hand side)."""
        xp, n = self.xp, self.n
        if self.q == "full":
            res = xp.linalg.norm(self.R[n:, n:], axis=0)
        elif self.q == "thin":
            res = xp.linalg.norm(self.b - self.Q @ self.R[:, n:], axis=0)
        else:
            res = xp.linalg.norm(self.R[n:, n:], axis=0)
        return res[0] if self._vector else res

    # -- updates: checked here, run by the functions below (on CuPy through
    # run_update, so that a small update replays from a CUDA graph) ---------------------
    def _run(self, core, *arrays, **params):
        return run_update(core, arrays, q=self.q, method=self.method, n=self.n, r=self.r,
                          **params)

    def _data(self, a, name):
        """``a`` as an array of the factors' dtype, refusing complex values for real
        factors (a cast would drop their imaginary parts) and infs or NaNs."""
        a = self.xp.asarray(a)
        if a.dtype.kind == "c" and self.R.dtype.kind != "c":
            raise TypeError(f"{name} is complex and the problem real")
        a = a.astype(self.R.dtype, copy=False)
        require_finite(a)
        return a

    def _rows(self, U):
        """Rows of A, ``(p, n)`` or one as ``(n,)``, checked as :meth:`_data` does."""
        U = self._data(U, "U")
        U = U[None, :] if U.ndim == 1 else U
        if U.ndim != 2 or U.shape[1] != self.n:
            raise ValueError(f"U must be (p, {self.n}), got {U.shape}")
        return U

    def _rhs(self, e, p):
        """The right-hand sides of ``p`` rows: ``(p, r)``, or ``(p,)`` for one right-hand
        side, or ``(r,)`` for one row."""
        e = self._data(e, "e")
        flat = e.ndim <= 1 and (p == 1 or self.r == 1) and e.size == p * self.r
        if not (flat or e.shape == (p, self.r)):
            raise ValueError(f"e must be ({p}, {self.r}) for {p} row(s), got {e.shape}")
        return e.reshape(p, self.r)

    def add_rows(self, U, e, k=None):
        """Add the rows ``U`` (p x n) with right-hand sides ``e`` before row ``k``
        (default: at the end)."""
        xp = self.xp
        U = self._rows(U)
        p = U.shape[0]
        e = self._rhs(e, p)
        k = self.m if k is None else updates._position(k, self.m, self.m + 1)
        rows = xp.concatenate([U, e], axis=1)
        self.Q, self.R, self.b = self._run(_rows_added, self.Q, self.R, rows, self.b, k=k)
        self.m += p

    def remove_rows(self, k, p=1, U=None, e=None):
        """Remove rows ``k:k+p``.  With ``q='none'`` the removed rows ``U`` and their
        right-hand sides ``e`` must be given (the factor alone does not hold them)."""
        xp = self.xp
        k, p = updates._position(k, self.m, self.m), updates._index(p, "p")
        if p < 1 or k + p > self.m:
            raise ValueError("'p' is out of range")
        if self.m - p < self.n:
            raise ValueError(f"removing {p} rows would leave fewer rows than the {self.n} "
                             "unknowns")
        if self.q == "none":
            if U is None or e is None:
                raise ValueError("q='none' keeps no Q: pass the removed rows U and e")
            U = self._rows(U)
            if U.shape[0] != p:
                raise ValueError(f"U must be ({p}, {self.n}), got {U.shape}")
            rows = xp.concatenate([U, self._rhs(e, p)], axis=1)
            self.R = _rows_downdated(self.R, rows, self.n)
        else:
            self.Q, self.R, self.b = self._run(_rows_removed, self.Q, self.R, self.b, k=k,
                                               p=p)
        self.m -= p

    def add_columns(self, U, k=None):
        """Add the columns ``U`` (m x p) before column ``k`` (default: at the end)."""
        if self.q == "none":
            raise ValueError("adding columns needs Q (Q^H u); use q='full' or q='thin'")
        U = self._data(U, "U")
        U = U[:, None] if U.ndim == 1 else U
        if U.ndim != 2 or U.shape[0] != self.m:
            raise ValueError(f"U must be ({self.m}, p), got {U.shape}")
        if self.n + U.shape[1] > self.m:
            raise ValueError(f"adding {U.shape[1]} columns would leave fewer rows ({self.m}) "
                             "than unknowns")
        k = self.n if k is None else updates._position(k, self.n, self.n + 1)
        if self.q == "full":
            # SciPy's test of a thin Q's new columns (which _insert_cols makes there): a
            # column in the span of the others would leave x undetermined
            outside = self.Q[:, self.n:].conj().T @ U
            d = abs(self.xp.diagonal(self.xp.linalg.qr(outside, mode="r")))
            updates._rcond_check(U, d, None)
        self.Q, self.R = self._run(_columns_added, self.Q, self.R, U, self.b, k=k)
        self.n += U.shape[1]

    def remove_columns(self, k, p=1):
        """Remove columns ``k:k+p``."""
        k, p = updates._position(k, self.n, self.n), updates._index(p, "p")
        if p < 1 or k + p > self.n:
            raise ValueError("'p' is out of range")
        self.Q, self.R = self._run(_columns_removed, self.Q, self.R, k=k, p=p)
        self.n -= p


# -- the updates of the factors (Q None for q='none'; b: thin Q's right-hand sides) ----
def _rows_added(Q, R, rows, b, *, k, q, method, n, r):
    """``(Q, R, b)`` after adding ``rows = [U, e]`` before row ``k``."""
    executor = executor_for(array_module(R), method)
    if q == "none":
        R = updates._insert_rows(None, R, rows, 0, "none", executor, nc=r)[1]
        return None, R[: n + r], None
    Q, R = updates._insert_rows(Q, R, rows, k, q, executor, nc=r)
    if q == "thin":
        xp = array_module(R)
        return Q[:, :n], R[:n], xp.concatenate([b[:k], rows[:, n:], b[k:]], axis=0)
    return Q, R, None


def _rows_removed(Q, R, b, *, k, p, q, method, n, r):
    """``(Q, R, b)`` after removing rows ``k:k+p`` (with Q)."""
    del n
    Q, R = updates._delete_rows(Q, R, k, p, q, executor_for(array_module(R), method),
                                nc=r, rhs=b)
    if b is not None:
        b = array_module(b).concatenate([b[:k], b[k + p:]], axis=0)
    return Q, R, b


def _rows_downdated(R, rows, n):
    """The triangular factor of ``[A, b]`` (``R``, ``n`` columns of A) after removing
    ``rows = [U, e]``: the Cholesky downdate ``R~^T R~ = R^T R - rows^T rows``.

    Where that fails in b's columns only (a b that A fits exactly, right-hand sides whose
    residuals are dependent, fewer rows left than ``n + r``), the residuals' Gram
    matrix ``P^T P`` has become singular, and that is no fault of the problem: then A's
    block ``R_A`` is downdated alone (a failure there is a rank-deficient A, and raises,
    naming its column), ``D`` (the rows of ``R`` above ``P``) is found from
    ``R_A~^T D~ = R_A^T D - U^T e``, and ``P~`` from the Gram matrix
    ``P^T P + D^T D - e^T e - D~^T D~`` with its eigenvalues below zero (rounding) set to
    zero.  The residual norms then carry an error of about ``sqrt(eps) ||b||``."""
    from .cholesky import cholesky_downdate
    xp = array_module(R, rows)
    # sign-normalise so the factor is a Cholesky factor (positive diagonal)
    R = xp.where(xp.diagonal(R).real < 0, -1, 1).astype(R.dtype)[:, None] * R
    try:
        return cholesky_downdate(R, rows.conj().T)
    except updates.LinAlgError:
        pass
    U, e = rows[:, :n], rows[:, n:]
    R_A, D, P = R[:n, :n], R[:n, n:], R[n:, n:]
    R_A1 = cholesky_downdate(R_A, U.conj().T)
    D1 = solve_triangular(R_A1, R_A.conj().T @ D - U.conj().T @ e, trans=True)
    G = P.conj().T @ P + D.conj().T @ D - e.conj().T @ e - D1.conj().T @ D1
    w, V = xp.linalg.eigh((G + G.conj().T) / 2)
    P1 = xp.linalg.qr(xp.sqrt(xp.maximum(w, 0))[:, None] * V.conj().T, mode="r")
    top = xp.concatenate([R_A1, D1], axis=1)
    bottom = xp.concatenate([xp.zeros((P1.shape[0], n), dtype=R.dtype), P1], axis=1)
    return xp.concatenate([top, bottom], axis=0)


def _columns_added(Q, R, U, b, *, k, q, method, n, r):
    """``(Q, R)`` after adding the columns ``U`` before column ``k`` (with Q)."""
    del n
    return updates._insert_cols(Q, R, U, k, q, executor_for(array_module(R), method),
                                nc=r, rhs=b)


def _columns_removed(Q, R, *, k, p, q, method, n, r):
    """``(Q, R)`` after removing columns ``k:k+p``."""
    executor = executor_for(array_module(R), method)
    if q == "none":
        # b's column is part of the triangle of [A, b]: reduce it too, then the factor is
        # square again
        R = updates._delete_cols(None, R, k, p, "none", executor)[1]
        return None, R[: n - p + r]
    return updates._delete_cols(Q, R, k, p, q, executor, nc=r)
