"""The four block updates of ``A = QR`` and the rank-p update, SciPy-compatible.

``qr_insert``, ``qr_delete`` and ``qr_update`` take SciPy's arguments and return SciPy's
shapes, so ``from qrlab import qr_insert`` can replace ``from scipy.linalg import
qr_insert``.  Differences: a whole block of ``p`` rows or columns goes through in one
call (SciPy's p-column paths loop), ``Q=None`` gives the R-only update where the
algorithm allows it, CuPy arrays in give CuPy arrays out, and batched (3-D) input is not
supported.

Each update is three steps, written once against the array module of the inputs:

1. *setup*: form the working pair ``(Q_w, R_w)`` with ``A_new = P Q_w R_w`` (columns of
   ``Q^H U`` spliced into R, rows appended, rows of Q permuted to the top...);
2. *run* the update's :class:`~qrlab.stages.Plan` with an executor;
3. *finish*: cut the new factors out of the working pair.

The same setup, on boolean masks, drives the pattern executor that draws the figures.
On CuPy, the three steps of a small update are recorded once as a CUDA graph and
replayed at later calls with the same shapes (:mod:`qrlab.graphs`).
"""
from __future__ import annotations

import operator

import numpy as np

from . import stages
from .backend import (array_module, executor_for, host_constant, matmul, raise_if,
                      run_update, working_copy)

__all__ = ["qr_insert", "qr_delete", "qr_update"]

_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
LinAlgError = np.linalg.LinAlgError


# --------------------------------------------------------------------------------------
# validation (before any work; the caller's arrays are never touched here)
# --------------------------------------------------------------------------------------
def _as_arrays(*arrays):
    xp = array_module(*arrays)
    return [None if a is None else xp.asarray(a) for a in arrays]


def _check_dtypes(Q, R, *others, names=("u",)):
    for a in (Q, R, *others):
        if a is not None and a.dtype.type not in _DTYPES:
            raise ValueError("Only arrays with dtypes float32, float64, complex64, and "
                             "complex128 are supported.")
    if Q is not None and Q.dtype != R.dtype:
        raise ValueError("Q and R must have the same dtype")
    for name, a in zip(names, others):
        if a is not None and a.dtype != R.dtype:
            raise ValueError(f"'{name}' must have the same type as 'Q' and 'R'")


def _check_shapes(Q, R):
    """Return 'full', 'thin' or 'none' (Q-less) for a valid pair, else raise."""
    if R.ndim != 2 or (Q is not None and Q.ndim != 2):
        if R.ndim > 2 or (Q is not None and Q.ndim > 2):
            raise ValueError("Q and R must be 2-D (batched input is not supported by qrlab)")
        raise ValueError("Q and R must be 2-D")
    if Q is None:
        return "none"
    m, mq = Q.shape
    if mq == m and R.shape[0] == m:
        return "full"
    if m > mq and R.shape == (mq, mq):
        return "thin"
    raise ValueError("Q and R do not have compatible shapes. Expected (M,M) (M,N) or "
                     f"(M,N) (N,N) but found {Q.shape} {R.shape} for Q and R respectively")


def _index(k, name="k"):
    try:
        return operator.index(k)
    except TypeError:
        if isinstance(k, float) and k.is_integer():
            return int(k)
        raise TypeError(f"'{name}' must be an integer, not {type(k).__name__}") from None


def _position(k, size, stop):
    """SciPy's rule: ``-size <= k < stop``, negative ``k`` counted from the end."""
    k = _index(k)
    if not -size <= k < stop:
        raise ValueError("'k' is out of bounds")
    return k + size if k < 0 else k


def _which(which):
    if which not in ("row", "col"):
        raise ValueError("'which' must be either 'row' or 'col'")
    return which


# --------------------------------------------------------------------------------------
# shared pieces of setup
# --------------------------------------------------------------------------------------
def _extend_basis(Q, Y, width, executor):
    """Orthonormal ``Qy`` (m x width), orthogonal to ``Q``, with ``Y = Q C + Qy Ry``.

    Classical Gram-Schmidt twice ("twice is enough") against Q, then a Householder QR of
    the remainder's first ``width`` columns.  Where a column adds no new direction (a
    diagonal entry of that QR at or below ``100 eps m`` times the length of the
    remainder's column: a column zero after the projections, or in the span of the
    columns before it), a fixed pseudo-random direction (made once per shape),
    projected like ``Y``, takes its place, so that ``[Q, Qy]`` stays orthonormal, and the
    QR is taken again.  A column with a part outside ``Q`` however small keeps it (its
    remainder, projected twice, is orthogonal to ``Q`` to rounding), so ``Y = Q C + Qy Ry``
    holds to rounding; whether such a column is acceptable is the caller's test
    (:func:`_rcond_check`).  Each column of ``Y`` is first scaled by a power of two to a
    largest magnitude in [1, 2) (exactly; scaled back after), so that no square over- or
    underflows whatever its size.  Every step is an array operation whose
    shapes do not depend on the values, so a GPU runs it without reading the device (and
    a CUDA graph can record it).  Cost: ``8 m n (p + width)`` flops for the projections,
    two panel QRs of ``m x width`` and ``4 m width^2`` for ``Qy``.

    Returns ``C`` (Q.shape[1] x p), ``Qy`` and ``Ry`` (width x p), and ``d``, the
    ``|r_jj|`` of the first QR (width): how far each of those columns reaches outside
    ``Q`` and the columns before it (:func:`_rcond_check`).
    """
    xp = array_module(Q, Y)
    m, p = Y.shape
    scale = _column_scales(xp, Y)
    Y = Y / scale
    if width:           # the fallback directions ride along with Y through the projections
        fallback = host_constant(xp, _fallback_directions, m, width, np.dtype(Y.dtype).str)
        Y = xp.concatenate([Y, fallback], axis=1)
    Qh = Q.conj().T
    C = matmul(Qh, Y)
    Y = Y - matmul(Q, C)
    C2 = matmul(Qh, Y)
    Y = Y - matmul(Q, C2)
    C = (C + C2)[:, :p] * scale
    if width == 0:
        return C, Q[:, :0], Y[:0], xp.zeros(0, dtype=Y.real.dtype)
    Qy, Ry, d = executor.extend_basis(Y, width)      # QR, fallbacks where weak, QR again
    return C, Qy, Ry * scale, d * scale[:width]


def _column_scales(xp, Y):
    """A power of two per column of ``Y`` within a factor of two of its largest magnitude
    (1 for a column of zeros), in Y's real dtype: dividing by it is exact."""
    top = abs(Y).max(axis=0) if Y.shape[0] else xp.zeros(Y.shape[1], Y.real.dtype)
    exponent = xp.frexp(xp.where(top > 0, top, 1))[1]
    # (2^(e - 1) <= top < 2^e: the lower power, so that the largest finite values scale)
    return xp.ldexp(xp.ones_like(top), exponent - 1)


def _fallback_directions(m, w, dtype):
    """Fixed pseudo-random directions (m x w, NumPy) for :func:`_extend_basis`."""
    return np.random.default_rng(12345).standard_normal((m, w)).astype(dtype)


def _rcond_check(U, d, rcond):
    """SciPy's economic column-insert test: the reciprocal condition number of
    ``[Q, u/||u||]`` for each new column that still adds a dimension, from ``d`` of
    :func:`_extend_basis` (the length of each column's part outside Q and the columns
    before it; scaled by ``1/||u_j||`` it is that of ``u_j/||u_j||``).  Its
    ``LinAlgError`` comes through :func:`~qrlab.backend.raise_if` (on a GPU, one wait for
    the device; in a CUDA graph, after each replay)."""
    xp = array_module(U, d)
    q = d.shape[0]
    if q == 0:
        return
    scale = _column_scales(xp, U[:, :q])             # (no squares that underflow)
    norms = scale * xp.sqrt((abs(U[:, :q] / scale) ** 2).sum(axis=0))
    resid = xp.minimum(d / xp.where(norms == 0, 1, norms), 1)
    resid = xp.where(norms == 0, 0, resid)
    # [Q, u/||u||]'s singular values are sqrt(1 +- cos t), sin t = resid: their ratio is
    # tan(t / 2) = resid / (1 + cos t), taken so (not as sqrt((1 - cos) / (1 + cos)), which
    # cancels to 0 where resid is below the square root of eps)
    cos = xp.sqrt(xp.maximum(0, 1 - resid ** 2))
    rc = resid / (1 + cos)
    limit = np.finfo(U.real.dtype).eps if rcond is None else rcond
    smallest = rc.min()
    raise_if(smallest < limit, lambda: LinAlgError(
        "One of the columns of u lies in the span of Q. Found reciprocal condition number "
        f"of {float(smallest)} for Q augmented with u/||u||."))


# --------------------------------------------------------------------------------------
# the updates on validated working copies; R may carry ``nc`` right-hand-side columns
# --------------------------------------------------------------------------------------
def _delete_cols(Q, R, k, p, mode, executor, nc=0, nb=None):
    xp = array_module(Q, R)
    n = R.shape[1] - nc
    R_w = xp.concatenate([R[:, :k], R[:, k + p:]], axis=1)
    Q_w = None if Q is None else working_copy(Q)
    nb = nb or executor.panel_width(p, R.dtype)
    executor.run(stages.plan_delete_cols(R.shape[0], n, k, p, nb), Q_w, R_w)
    n_new = n - p
    if mode == "thin" or (mode == "none" and R.shape[0] == n):
        R_w = R_w[:n_new]
        Q_w = None if Q_w is None else Q_w[:, :n_new]
    return Q_w, R_w


def _insert_cols(Q, R, U, k, mode, executor, nc=0, rhs=None, rcond=None):
    """``rhs`` (m x nc): the right-hand sides, needed only to extend carried columns when
    a thin Q grows.  With a thin Q, SciPy's condition test of the new columns first
    (:func:`_rcond_check`, ``rcond`` as in :func:`qr_insert`)."""
    xp = array_module(Q, R, U)
    n = R.shape[1] - nc
    p = U.shape[1]
    if mode == "full":
        # (the copy of Q on a second stream beside this product, which reads the caller's
        # Q, saved nothing on an H100 at 000 Tables 2, 3 and 5: the product fills the SMs;
        # the GPU executor may make it beside the QR of W's rows below R instead,
        # GpuExecutor.copy_q_beside)
        Q_w = executor.working_copy_of_q(Q)
        W = matmul(Q.conj().T, U)
    else:
        m = Q.shape[0]
        q = min(p, m - n)
        C, Qy, Ry, d = _extend_basis(Q, U, q, executor)
        _rcond_check(U, d, rcond)
        Q_w = xp.concatenate([Q, Qy], axis=1)
        W = xp.concatenate([C, Ry], axis=0)
        extra = xp.zeros((q, R.shape[1]), dtype=R.dtype)
        if nc and rhs is not None:
            extra[:, n:] = matmul(Qy.conj().T, rhs)
        R = xp.concatenate([R, extra], axis=0)
    R_w = xp.concatenate([R[:, :k], W, R[:, k:]], axis=1)
    executor.run(stages.plan_insert_cols(R_w.shape[0], n, k, p), Q_w, R_w)
    return Q_w, R_w


def _insert_rows(Q, R, U, k, mode, executor, nb=None, nc=None):
    """``U`` carries the right-hand-side entries of the new rows in its last ``nc``
    columns (None: not known).  With Q, R's rows past its triangle are dense in those
    columns, which an executor must know to reduce the triangle in one launch."""
    xp = array_module(Q, R, U)
    n = R.shape[1]
    p = U.shape[0]
    m_r = R.shape[0]
    R_w = xp.concatenate([R, U], axis=0)
    Q_w = None
    if Q is not None:
        m, w = Q.shape
        Q_w = xp.zeros((m + p, w + p), dtype=Q.dtype)
        Q_w[:m, :w] = Q
        Q_w[m:, w:] = xp.eye(p, dtype=Q.dtype)
    nb = nb or executor.panel_width(p, R.dtype)
    # With a full Q the carried columns are dense below R's triangle, so a panel that
    # starts among them would mix rows with entries left of it: one carried column may
    # end the triangle (below its diagonal it holds the residual, left in place), but two
    # or more stay outside it, their rows reached by the panels' reflectors alone
    tri = n - nc if Q is not None and mode == "full" and nc and nc > 1 else n
    executor.run(stages.plan_insert_rows(m_r, tri, p, nb), Q_w, R_w, {"carried": nc})
    if Q_w is not None:
        m = Q.shape[0]
        # the new rows of A sit at k..k+p: move their rows of Q there (slices, not an index
        # array: nothing to upload, so a CUDA graph can record it)
        Q_w = xp.concatenate([Q_w[:k], Q_w[m:], Q_w[k:m]])
    return Q_w, R_w


def _delete_rows(Q, R, k, p, mode, executor, nc=0, rhs=None):
    """R carries ``nc`` right-hand-side columns; ``rhs`` (m x nc) as in
    :func:`_insert_cols`, needed only to extend them when a thin Q grows."""
    xp = array_module(Q, R)
    m = Q.shape[0]
    if mode == "thin":
        q = min(p, m - Q.shape[1])
        E = xp.zeros((m, p), dtype=Q.dtype)
        xp.fill_diagonal(E[k:k + p], 1)        # (contiguous rows: a view in place)
        Qy = _extend_basis(Q, E, q, executor)[1]
        extra = xp.zeros((q, R.shape[1]), dtype=R.dtype)
        if nc and rhs is not None:
            extra[:, R.shape[1] - nc:] = matmul(Qy.conj().T, rhs)
        Q = xp.concatenate([Q, Qy], axis=1)
        R = xp.concatenate([R, extra], axis=0)
    Q_w, R_w = executor.working_copies(Q, R, first=(k, p))   # the rows to remove on top
    plan = stages.plan_delete_rows(Q.shape[1], R.shape[1] - nc, p, nc,
                                   householder=executor.method != "paper")
    executor.run(plan, Q_w, R_w)
    return Q_w[p:, p:], R_w[p:]


def _rank_update(Q, R, U, V, mode, executor, nb=None):
    xp = array_module(Q, R, U, V)
    n = R.shape[1]
    p = U.shape[1]
    if mode == "full":
        Q_w = working_copy(Q)
        R_w = xp.concatenate([R, matmul(Q.conj().T, U)], axis=1)
    else:
        q = min(p, Q.shape[0] - n)
        C, Qy, Ry, _ = _extend_basis(Q, U, q, executor)
        Q_w = xp.concatenate([Q, Qy], axis=1)
        top = xp.concatenate([R, C], axis=1)
        bottom = xp.concatenate([xp.zeros((q, n), dtype=R.dtype), Ry], axis=1)
        R_w = xp.concatenate([top, bottom], axis=0)
    nb = nb or executor.panel_width(p, R.dtype)
    executor.run(stages.plan_rank_update(R_w.shape[0], n, p, nb), Q_w, R_w, {"V": V})
    if mode == "thin":
        return Q_w[:, :n], R_w[:n, :n]
    return Q_w, R_w[:, :n]


def _updated(Q, R, U, V, *, update, k, p, mode, method, rcond=None):
    """The factors after ``update`` of validated arrays (what the public functions hand to
    :func:`~qrlab.backend.run_update`): ``R1``, or ``(Q1, R1)`` when Q is given.
    ``rcond``: as in :func:`qr_insert`, for an economic column insertion."""
    executor = executor_for(array_module(R), method)
    n = R.shape[1]
    if update == "insert rows":
        Q1, R1 = _insert_rows(Q, R, U, k, mode, executor, nc=0)
        if mode == "thin":
            Q1, R1 = Q1[:, :n], R1[:n]
        elif mode == "none" and R.shape[0] == n:
            R1 = R1[:n]
    elif update == "insert cols":
        Q1, R1 = _insert_cols(Q, R, U, k, mode, executor, rcond=rcond)
    elif update == "delete cols":
        Q1, R1 = _delete_cols(Q, R, k, p, mode, executor)
    elif update == "delete rows":
        Q1, R1 = _delete_rows(Q, R, k, p, mode, executor)
    else:
        Q1, R1 = _rank_update(Q, R, U, V, mode, executor)
    return R1 if Q is None else (Q1, R1)


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------
def qr_insert(Q, R, u, k, which="row", rcond=None, overwrite_qru=False, check_finite=True,
              *, method="blocked"):
    """QR update on row or column insertions.

    If ``A = Q R`` is the QR factorization of ``A``, return the QR factorization of ``A``
    with a block of rows or columns inserted before row or column ``k``.  The arguments,
    shapes and exceptions are those of :func:`scipy.linalg.qr_insert`; ``Q=None`` gives the
    R-only (Q-less) row insertion, and CuPy arrays in give CuPy arrays out.

    Parameters
    ----------
    Q : (M, M) or (M, N) array_like or None
        Unitary/orthogonal factor of ``A``, full or economic.  ``None`` for an R-only row
        insertion (columns cannot be inserted without Q).
    R : (M, N) or (N, N) array_like
        Upper trapezoidal factor of ``A``.
    u : (N,), (p, N), (M,) or (M, p) array_like
        Rows or columns to insert.
    k : int
        Index before which ``u`` is inserted (``-M <= k <= M`` for rows, ``-N <= k <= N``
        for columns; negative values count from the end, as in SciPy).
    which : {'row', 'col'}, optional
        Insert rows or columns (default 'row').
    rcond : float, optional
        Lower bound on the reciprocal condition number of ``Q`` augmented with
        ``u/||u||``; only used for economic column insertion.  Default: machine epsilon.
    overwrite_qru : bool, optional
        Accepted for compatibility; qrlab always works on copies (the factors change
        shape, so they cannot be updated in place).
    check_finite : bool, optional
        Check that the inputs contain only finite numbers (default True).
    method : {'blocked', 'paper'}, keyword-only
        How Givens sweeps are applied: in groups of waves (default; on NumPy each group
        accumulated into a block applied by matrix products, on a GPU applied by one
        fused kernel), or one wave of rotations at a time as in the papers.

    Returns
    -------
    Q1 : ndarray
        Updated orthogonal factor (not returned when ``Q`` is None).
    R1 : ndarray
        Updated upper triangular factor.

    Raises
    ------
    ValueError
        Bad shapes, dtypes, ``k`` or ``which``, non-finite values with
        ``check_finite``, or a ``u`` with no rows or columns to insert (SciPy returns
        the factors unchanged for no columns with a full ``Q``, and raises otherwise).
    TypeError
        NumPy and CuPy arrays mixed, or a non-integer ``k``.
    LinAlgError
        Economic column insertion where a column of ``u`` lies (within ``rcond``) in the
        span of ``Q``.

    Notes
    -----
    *Rows* (001 Section 3.3): the new rows are permuted to the bottom,
    ``[Q^H 0; 0 I] P A_new = [R; U]``, and ``n`` Householder reflectors, each touching
    one diagonal row and the ``p`` new rows, restore the triangle.  They are grouped in
    panels of ``nb`` and applied in compact WY form ``I - V T V^H``.  Cost about
    ``2 p n^2`` flops on R and ``4 (m + p) p n`` on Q, independent of ``k``.

    *Columns* (001 Section 3.1): ``Q^H A_new = [R[:, :k], Q^H U, R[:, k:]]``.  Stage 1
    reduces the rows of ``Q^H U`` below R by Householder QR; Stage 2 removes the rest
    of ``Q^H U`` below the diagonal by ``p`` pipelined Givens sweeps (Householder would fill
    the shifted columns of R).  With ``method='blocked'`` the rotations of about ``2p``
    consecutive waves are multiplied into one small orthogonal matrix and applied to R
    and Q by matrix products.  Cost about ``2 m p (m - n)`` for Stage 1 and
    ``6 p (n - k) (m + n)`` for Stage 2 (rotations), the latter run at matrix-product
    speed.  An economic Q first grows by the part of ``U`` orthogonal to it.

    Examples
    --------
    >>> import numpy as np
    >>> import qrlab
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((6, 3))
    >>> Q, R = np.linalg.qr(A, mode="complete")
    >>> U = rng.standard_normal((2, 3))
    >>> Q1, R1 = qrlab.qr_insert(Q, R, U, 2, which="row")
    >>> bool(np.allclose(Q1 @ R1, np.insert(A, 2, U, axis=0)))
    True
    >>> R1 = qrlab.qr_insert(None, R, U, 2, which="row")       # R only
    >>> bool(np.allclose(abs(R1[:3]), abs(np.linalg.qr(np.insert(A, 2, U, axis=0))[1])))
    True
    """
    del overwrite_qru
    which = _which(which)
    Q, R, u = _as_arrays(Q, R, u)
    mode = _check_shapes(Q, R)
    _check_dtypes(Q, R, u)
    m, n = (Q.shape[0] if Q is not None else R.shape[0]), R.shape[1]
    if which == "row":
        if u.ndim == 1 and u.shape[0] == n:
            u = u[None, :]
        if u.ndim != 2 or u.shape[1] != n:
            raise ValueError("'u' should be either (N,) or (p,N) when inserting rows. "
                             f"Found {u.shape}.")
        k = _position(k, m, m + 1)
    else:
        if Q is None:
            raise ValueError("inserting columns needs Q: the new columns enter R as Q^H u")
        if u.ndim == 1 and u.shape[0] == m:
            u = u[:, None]
        if u.ndim != 2 or u.shape[0] != m:
            raise ValueError("'u' should be either (M,) or (M,p) when inserting columns. "
                             f"Found {u.shape}.")
        k = _position(k, n, n + 1)
    if u.shape[0 if which == "row" else 1] == 0:
        raise ValueError(f"'u' holds no {which}s to insert")
    return run_update(_updated, (Q, R, u, None), check_finite, update=f"insert {which}s",
                      k=k, p=None, mode=mode, method=method, rcond=rcond)


def qr_delete(Q, R, k, p=1, which="row", overwrite_qr=False, check_finite=True,
              *, method="blocked"):
    """QR downdate on row or column deletions.

    If ``A = Q R`` is the QR factorization of ``A``, return the QR factorization of ``A``
    with ``p`` rows or columns removed starting at row or column ``k``.  Arguments,
    shapes and exceptions follow :func:`scipy.linalg.qr_delete`; ``Q=None`` gives the
    R-only column deletion.

    Parameters
    ----------
    Q : (M, M) or (M, N) array_like or None
        Unitary/orthogonal factor, full or economic; ``None`` for an R-only column
        deletion (rows cannot be removed without Q; see :func:`qrlab.cholesky_downdate`
        for the Q-less route).
    R : (M, N) or (N, N) array_like
        Upper trapezoidal factor.
    k : int
        Index of the first row or column to delete (negative counts from the end).
    p : int, optional
        Number of rows or columns to delete (default 1).
    which : {'row', 'col'}, optional
        Delete rows or columns (default 'row').
    overwrite_qr : bool, optional
        Accepted for compatibility; qrlab always works on copies.
    check_finite : bool, optional
        Check that the inputs contain only finite numbers (default True).
    method : {'blocked', 'paper'}, keyword-only
        As in :func:`qr_insert`.

    Returns
    -------
    Q1 : ndarray
        Updated orthogonal factor (not returned when ``Q`` is None).
    R1 : ndarray
        Updated upper triangular factor.

    Raises
    ------
    ValueError
        Bad shapes or dtypes, ``k``/``p`` out of range, bad ``which``, non-finite values.
    TypeError
        NumPy and CuPy arrays mixed, or non-integer ``k``/``p``.

    Notes
    -----
    *Columns* (001 Section 3.2): deleting columns leaves R with ``p`` subdiagonals from
    column ``k`` on.  Householder panels of ``nb`` columns, each over ``p + nb`` rows
    (the papers' ``(p + nb + 1) x nb`` blocks), restore the triangle; Q only needs the
    same reflectors on ``p + nb`` of its columns per panel.  Cost about
    ``2 p (n - k)^2`` flops on R and ``4 m p (n - k)`` on Q; none of it depends on ``m``
    for R alone.

    *Rows* (001 Section 3.4): the rows of Q that belong to the removed rows are permuted
    to the top (the strip ``Z``); ``p`` pipelined Givens sweeps zero ``Z`` right to left
    while the same rotations act on the rows of R, which gains ``p`` subdiagonals; then
    ``Q[p:, p:]`` and ``R[p:]`` are the new factors.  The rotations are computed on ``Z``
    alone and, with ``method='blocked'``, applied to Q and R in blocks by matrix
    products.  Cost about ``6 p m (m + n)`` flops as rotations (``method='paper'``).
    With ``method='blocked'`` and ``m - n > p``, a first stage reduces ``Z``'s columns
    past ``n`` by ``p`` Householder reflectors (LQ), which fill nothing since R is zero
    on those rows; the sweeps then cover ``n + p`` columns: about
    ``4 m (m - n) p`` flops as matrix products and ``6 p (n + p) (m + n)`` as rotations.
    An economic Q is first completed by ``p`` columns spanning the removed unit vectors.

    Examples
    --------
    >>> import numpy as np
    >>> import qrlab
    >>> rng = np.random.default_rng(1)
    >>> A = rng.standard_normal((7, 5))
    >>> Q, R = np.linalg.qr(A, mode="complete")
    >>> Q1, R1 = qrlab.qr_delete(Q, R, 1, 2, which="col")
    >>> bool(np.allclose(Q1 @ R1, np.delete(A, [1, 2], axis=1)))
    True
    >>> Q1, R1 = qrlab.qr_delete(Q, R, 3, 2, which="row")
    >>> bool(np.allclose(Q1 @ R1, np.delete(A, [3, 4], axis=0)))
    True
    """
    del overwrite_qr
    which = _which(which)
    Q, R = _as_arrays(Q, R)
    mode = _check_shapes(Q, R)
    _check_dtypes(Q, R)
    m, n = (Q.shape[0] if Q is not None else R.shape[0]), R.shape[1]
    p = _index(p, "p")
    size = m if which == "row" else n
    k = _position(k, size, size)
    if p < 1 or k + p > size:
        raise ValueError("'p' is out of range")
    if which == "row" and Q is None:
        raise ValueError("removing rows needs Q (or use qrlab.cholesky_downdate on R, "
                         "the Q-less route)")
    return run_update(_updated, (Q, R, None, None), check_finite, update=f"delete {which}s",
                      k=k, p=p, mode=mode, method=method)


def qr_update(Q, R, u, v, overwrite_qruv=False, check_finite=True, *, method="blocked"):
    """Rank-k QR update: the factorization of ``A + u v^H`` from that of ``A``.

    Arguments, shapes and exceptions follow :func:`scipy.linalg.qr_update` (which
    writes ``A + u v^T`` for real input), but for the rank: any ``p`` works here, where
    SciPy refuses ``p > min(M, N)``.  All ``p`` columns of ``u`` and ``v`` go through in
    one blocked pass.

    Parameters
    ----------
    Q : (M, M) or (M, N) array_like
        Unitary/orthogonal factor, full or economic.
    R : (M, N) or (N, N) array_like
        Upper trapezoidal factor.
    u : (M,) or (M, p) array_like
    v : (N,) or (N, p) array_like
    overwrite_qruv : bool, optional
        Accepted for compatibility; qrlab always works on copies.
    check_finite : bool, optional
        Check that the inputs contain only finite numbers (default True).
    method : {'blocked', 'paper'}, keyword-only
        As in :func:`qr_insert`.

    Returns
    -------
    Q1, R1 : ndarray
        The factors of ``A + u v^H``.

    Notes
    -----
    With ``W = Q^H u``: with a full Q, a Householder QR first compresses W's ``m - n``
    rows below R's triangle (R is zero there) to ``p``; then ``p`` pipelined Givens sweeps
    reduce ``W`` to its top ``p`` rows, leaving R with ``p`` subdiagonals (the rotations
    also act on Q); ``W[:p] v^H`` is added to the top ``p`` rows; and the band is removed
    with the Householder panels of column deletion (Golub & Van Loan Section 12.5.1,
    blocked; on a GPU one launch of the triangle kernel, Q's columns then by two matrix
    products).  Cost about ``4 p m (m - n)`` flops for the first reflectors on Q,
    ``6 p (n + p) (m + n)`` for the sweeps and ``4 p m n`` for the panels.

    Examples
    --------
    >>> import numpy as np
    >>> import qrlab
    >>> rng = np.random.default_rng(2)
    >>> A = rng.standard_normal((6, 4))
    >>> Q, R = np.linalg.qr(A, mode="complete")
    >>> u, v = rng.standard_normal((6, 2)), rng.standard_normal((4, 2))
    >>> Q1, R1 = qrlab.qr_update(Q, R, u, v)
    >>> bool(np.allclose(Q1 @ R1, A + u @ v.T))
    True
    """
    del overwrite_qruv
    Q, R, u, v = _as_arrays(Q, R, u, v)
    if Q is None:
        raise ValueError("qr_update needs Q")
    mode = _check_shapes(Q, R)
    _check_dtypes(Q, R, u, v, names=("u", "v"))
    if u.ndim != v.ndim:
        raise ValueError("u and v must have the same number of dimensions")
    if u.ndim == 1:
        u, v = u[:, None], v[:, None]
    if u.ndim != 2:
        raise ValueError("u and v must be 1-D or 2-D")
    if u.shape[0] != Q.shape[0]:
        raise ValueError("u.shape[0] must equal Q.shape[0]")
    if v.shape[0] != R.shape[1]:
        raise ValueError("v.shape[0] must equal R.shape[1]")
    if u.shape[1] != v.shape[1]:
        raise ValueError("Second dimension of u and v must be the same")
    return run_update(_updated, (Q, R, u, v), check_finite, update="rank", k=None, p=None,
                      mode=mode, method=method)
