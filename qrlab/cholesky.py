"""Rank-k Cholesky update and downdate, on NumPy and on the GPU through CuPy (seed 004).

Given the upper triangular Cholesky factor ``R`` of ``A = R^T R`` and an ``n x k`` matrix
``V``, :func:`cholesky_update` returns the factor of ``A + V V^T`` and
:func:`cholesky_downdate` the factor of ``A - V V^T``, in O(k n^2) operations instead of the
O(n^3) of factoring the modified matrix again.

Two families of algorithms share one interface:

* ``method='blocked'`` (default, fast): Householder reflectors (plain for an update,
  hyperbolic for a downdate) gathered into compact WY blocks, so that the bulk of the work is
  matrix products. Each panel of ``block_size`` columns is factored by one Cholesky
  factorization whose result is checked (``panel='cholesky'``, about 30 array operations
  per panel), or column by column (``panel='householder'``, about 15 per column).
* ``method='structured'``: no chain of reflectors: ``R1 = M R`` with ``M`` the structured
  Cholesky factor of ``I +- P P^T``, ``P = R^{-T} V``, built block by block (the method of
  the GPU kernels, ``qrlab/kernels/structured.cu``, as array operations), with its growth
  test; where that test reports, the blocked method does the update.
* ``method='rotations-A'`` / ``'rotations-B'``: Walder's Algorithm 1 (seed 004), the
  column-oriented and row-oriented orderings of the same hyperbolic rotations, written for
  reading, not for speed.

The array code is written once against the array module of the inputs (NumPy or CuPy).
"""
from __future__ import annotations

import numpy as np

from .backend import array_module, executor_for, solve_triangular, to_numpy, working_copy

__all__ = ["cholesky_update", "cholesky_downdate", "DEFAULT_BLOCK_SIZE"]

#: Panel width of ``method='blocked'`` when ``block_size`` is not given, by array module:
#: narrow on a CPU, where the extra ``b n^2`` flops of wide panels cost time; wide on a
#: GPU, where the time goes into the fixed cost of each panel's small operations (Notes).
DEFAULT_BLOCK_SIZE = {"numpy": 64, "cupy": 256}

_METHODS = ("blocked", "structured", "rotations-A", "rotations-B")
_PANELS = ("cholesky", "householder")
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def cholesky_update(R, V, downdate=False, overwrite=False, check_finite=True,
                    method="blocked", block_size=None, panel="cholesky"):
    r"""Rank-k update or downdate of an upper triangular Cholesky factor.

    Given ``R`` with ``A = R^T R``, compute the upper triangular ``R1`` with positive diagonal
    such that ``R1^T R1 = A + V V^T`` (update) or ``R1^T R1 = A - V V^T`` (downdate).

    Parameters
    ----------
    R : (n, n) array_like
        Upper triangular Cholesky factor of ``A``; only its upper triangle is read. Rows
        whose diagonal entry is negative are accepted and flipped in the result
        (``A = R^T R`` does not change when a row of ``R`` changes sign), so any triangular
        factor with a nonzero diagonal will do.
    V : (n, k) or (n,) array_like
        The modification: ``k >= 1`` columns, or one vector. Same dtype as `R`.
    downdate : bool, optional
        Subtract ``V V^T`` instead of adding it. Default False.
    overwrite : bool, optional
        Allow `R` to be used as the output buffer (saves the n x n allocation of the
        result, not time; the strict lower triangle of `R` serves as workspace). On success
        `R` holds the result and is returned. If a downdate fails, the upper triangle of
        `R` is left bit for bit as it was and its strict lower triangle is zero (with CuPy
        arrays and ``block_size=None``, all of `R` is left as it was), so a triangular `R` is
        unchanged. `V` is never modified. Default False.
    check_finite : bool, optional
        Check that `R` and `V` contain only finite numbers. Disabling this may give a
        performance gain (it saves a pass over the inputs), but a non-finite input then
        gives a LinAlgError or a result full of nan. Default True.
    method : {'blocked', 'structured', 'rotations-A', 'rotations-B'}, optional
        ``'blocked'``: compact-WY Householder panels, matrix products (see Notes).
        ``'structured'``: the structured method of the GPU kernels (see Notes) as array
        operations, blocks of `block_size` rows (default 64), for teaching and checking:
        where its growth test reports, or a downdate breaks down, the result is the
        blocked method's.
        ``'rotations-A'`` / ``'rotations-B'``: Walder's CholeskyModifyA / CholeskyModifyB
        (seed 004, Algorithm 1), hyperbolic rotations in Python loops, for teaching and
        small n. Default ``'blocked'``.
    block_size : int, optional
        Panel width of the blocked method. Default ``min(n, 64)`` for NumPy arrays and
        ``min(n, 256)`` for CuPy arrays (``DEFAULT_BLOCK_SIZE``, see Notes); for
        ``method='structured'`` the rows per block (default 64). Ignored by the rotation
        methods. With CuPy arrays and ``block_size=None`` the blocked method
        runs in fused kernels instead (the structured method, one or two launches per 64
        columns of V, or where that is slower one launch whatever k; see Notes); giving a
        `block_size` selects the array-operation panels.
    panel : {'cholesky', 'householder'}, optional
        How the blocked method factors each panel (the results agree to rounding):
        ``'cholesky'`` (default) by one Cholesky factorization of the panel's b x b
        J-Gram matrix, checked, falling back to ``'householder'`` on a panel where the
        check fails; ``'householder'`` by b reflector steps, one column at a time.
        Ignored by the rotation methods.

    Returns
    -------
    R1 : (n, n) ndarray
        Upper triangular (exact zeros below the diagonal) with a positive diagonal, same
        dtype and array module (NumPy or CuPy) as `R`. It is `R` itself when `overwrite`
        is True.

    Raises
    ------
    TypeError
        If `R` and `V` mix NumPy and CuPy arrays, or a dtype is not float32 or float64
        (integer, float16 and complex inputs are not supported).
    ValueError
        If `R` is not a non-empty square 2-D array, `V` is not ``(n, k)`` with ``k >= 1``
        or ``(n,)``, `R` and `V` do not have the same dtype, an input holds inf or nan
        (with `check_finite`), or `method`, `block_size` or `panel` is invalid.
    numpy.linalg.LinAlgError
        If `R` has a zero on its diagonal (``A`` is then singular, not positive definite),
        or if a downdate would leave ``A - V V^T`` not positive definite. The message
        names the first failing column (0-based): the first ``j`` whose leading
        ``(j+1) x (j+1)`` block of ``A - V V^T`` is not positive definite. NumPy's class
        is raised for CuPy inputs too. `R` is not modified (see `overwrite`).

    See Also
    --------
    cholesky_downdate : the same with ``downdate=True``.
    scipy.linalg.qr_insert : adding rows to a full QR factorization.

    Notes
    -----
    **The problem as a QR factorization.** ``R1^T R1 = R^T R + s V V^T`` with ``s = +1``
    (update) or ``s = -1`` (downdate) says that ``R1`` is the triangular factor of the
    ``(n + k) x n`` matrix ``M = [R; V^T]`` under the signature ``J = diag(I_n, s I_k)``:
    find ``H`` with ``H^T J H = J`` and ``H M = [R1; 0]``. For an update ``J = I`` and ``H``
    is orthogonal, so this is the Q-less QR update for appending the rows ``V^T`` to a
    least-squares matrix (``R^T R = X^T X`` for ``X = QR``): adding rows is an update,
    removing rows a downdate. For a downdate ``H`` is *hyperbolic* (J-orthogonal).

    **Blocked method.** Column ``j`` of ``M`` is ``x = [alpha; y]``, with ``alpha = R[j, j]``
    and ``y`` the current ``W[:, j]`` (``W`` starts as ``V^T``). The reflector
    ``H_j = I - tau u u^T J``, ``u = [1; v]``, touches only row ``j`` of ``R`` and the ``k``
    rows of ``W`` (the ``[I; 0; v]`` structure of seed 001, Section 3.3), and maps ``x`` to
    ``[beta; 0]`` with ``beta^2 = x^T J x = alpha^2 + s ||y||^2``, for ``s = -1`` the
    hyperbolic Householder reflector. ``H_j^T J H_j = J`` holds for any ``u`` with
    ``u^T J u != 0``. With ``beta = -sign(alpha) sqrt(alpha^2 + s ||y||^2)``,
    ``alpha - beta`` has no cancellation, ``v = y / (alpha - beta)`` and
    ``tau = (beta - alpha) / beta``. Rows of ``R`` are read with the sign that makes their
    diagonal negative, so every ``beta`` comes out positive with no final pass. A downdate
    fails exactly when some ``alpha^2 - ||y||^2 <= 0``, the pivot of column ``j``.

    The columns are taken in panels of ``b = block_size``. The ``b`` reflectors of a panel
    form the compact WY product ``H_{b-1} ... H_0 = I - Y T^T Y^T J`` with
    ``Y = [I_b; Vp]`` (``Vp`` is ``k x b``) and ``T^{-1} = triu(s Vp^T Vp, 1) + diag(1/tau)``
    (the UT transform of Joffrain et al., with ``J``), applied to the ``m`` trailing
    columns by three matrix products::

        P = T^T (C + s Vp^T W_t);   C -= P;   W_t -= Vp P

    **On a GPU: the structured method** (CuPy arrays, ``block_size=None``,
    ``qrlab/kernels/structured.cu``; ``method='structured'`` runs the same algorithm as
    array operations on either module, blocks of ``block_size`` rows, for reading and
    checking: its ``k = 1`` factor of ``C`` by Cholesky, not the kernels' closed form).
    ``R^T R + s V V^T = R^T (I + s P P^T) R`` with
    ``P = R^{-T} V``, so ``R1 = M R`` where ``M`` is the Cholesky factor of
    ``I + s P P^T``, a matrix with structure: eliminating the rows before a block ``I``
    of rows leaves ``I + s P' S^{-1} P'^T`` with ``S = I_k + s sum p_i p_i^T`` over the
    rows before it, so ``M``'s diagonal block is ``chol(I + s X X^T)`` with
    ``X = P_I chol(S)^{-T}``, and its blocks to the right are ``Wm_I P_J^T`` with
    ``Wm_I = s M_II^{-T} X chol(S)^{-1}`` (Gill, Golub, Murray and Saunders' method C1,
    1974, in blocks). Since ``P^T R = V^T``, row block ``I`` of the result is
    ``M_II R_I + Wm_I (V^T - sum_{J <= I} P_J^T R_J)``. The only chain left is the
    triangular solve for ``P``, one 64-row block per step; everything else is matrix
    products (for ``k = 1`` in float32, ``M_II`` is a diagonal plus a rank-one upper
    part in closed form, so ``M_II R_I`` is a running sum down the rows). Cost: at most
    ``(3 k + 32) n^2`` flops, ``R`` read twice and written once.
    The kernels take up to 64 columns of ``V``; more go in passes of 64, each updating
    the result of the one before (``A + s V V^T = (A + s V_1 V_1^T) + s V_2 V_2^T ...``),
    queued back to back, where that is faster than the chain of reflectors below: on an
    H100, up to ``max(6, n / 400)`` passes in float32 and ``max(8, n / 200)`` in float64,
    which made k = 256 1.1 to 2.1 times faster in float32 and 1.5 to 2.9 times in float64
    at n = 1000 to 10000 (``GpuExecutor.structured_passes``). In a downdate each
    intermediate matrix is the final one plus a positive semidefinite term, so a pass
    breaks down only if the whole downdate does, but it may do so at a later column; a
    breakdown in passes is redone by the chain of reflectors, which names the first
    failing column.
    The solve (which also factors each diagonal block of ``M``) and the product ``M R``
    run in one launch, the product's thread blocks starting on their rows as soon as
    the solve has passed them; in place (``overwrite``) the product is a second launch,
    after the whole solve, so that a failure leaves ``R`` untouched. Values and the
    diagonal are checked inside the kernels, so `check_finite` costs no extra pass, and
    ``R`` is written only if the whole update succeeded. The error is within a few
    times that of the reflectors unless the small factorizations of the method cancel:
    where a diagonal entry of R is small beside the rest of its row (a ratio r to its
    row's largest entry) ``P`` grows as 1 / r and ``M R`` cancels (measured on an H100,
    the backward error of ``R1^T R1`` was 2 to 3 times the reflectors' at r = 1e-2, 50
    to 180 times at 1e-3 and about ``eps / r^2`` below,
    ``benchmarks/results/square-route-*.md``), and so it does for an R nearly singular
    with every pivot large, a downdate towards such an R, or a V much larger than R.
    So the kernels measure that cancellation on the way, at no extra pass (the growth
    test: the largest ``S_qq / L_qq^2`` of ``S = L L^T``, and ``C_rr`` and
    ``1 / U_rr^2`` of ``C = I + s X X^T = U^T U``, over the blocks), and an update whose
    growth exceeds ``GpuExecutor.growth_max`` (100) is done by the chain of reflectors
    below instead, the structured result discarded: the error then stayed within 5.4
    times the reflectors' (3.1 in float64) in every family of inputs measured
    (``benchmarks/results/growth-test-*.md``). Not caught: a float32 downdate that
    removes a V ten times R's scale (1 < k <= 16), 27 times the reflectors' error
    relative to ``||A - V V^T||`` (within bounds relative to ``||A|| + ||V||^2``).

    Without Q, adding rows to a square R (the triangle of ``[A, b]``) and removing its
    columns are such updates too, and go to the structured method where it is faster
    (``GpuExecutor.square_passes``, ``GpuExecutor._square_triangle``), with the same
    growth test.

    **On a GPU, larger k at small n** (and the Q-less adding of rows and removing of
    columns otherwise) the whole update is one launch of ``qrlab/kernels/triangle.cu`` (panels of
    32 columns): one thread block per SM owns tiles of 32 columns of ``[R; W]``; a
    panel's reflectors are built by one to sixteen warps, with the panel's columns in
    registers, and published through device memory in the compact WY form above, and
    every block applies them to its tiles while the next panel is already being
    factored. The rows of ``W`` go in chunks of a few dozen to a few hundred (as many as
    a model of the launch predicts fastest), each chunk a rank-k_c update (or downdate)
    of the result of the chunks before it, and the chunks pipelined in the same launch:
    chunk c factors panel J while chunk c + 1 factors panel J - 1, so the critical path
    is n / 32 + chunks panel steps of a chunk's rows, not n / 32 steps of all k. ``W`` is
    read and written once per panel. A breakdown is recorded on the device and raised at
    the end (one synchronisation per call).

    ``C`` (``b x m``) is the panel's rows of ``R``: each row of ``R`` is read and written
    once in the whole update, while ``W_t`` (``k x m``) is read and written once per panel.
    A failing downdate is detected at the end of its panel, before anything is written to
    `R`.

    The panel itself, ``[Rp; Wp]`` (``b x b`` triangle on ``k x b``), is factored in one of
    two ways. ``panel='householder'`` loops over its ``b`` columns, builds each reflector
    and applies it to the rest of the panel (vector operations of length ``k``; about 15
    array operations per column). ``panel='cholesky'`` (default) computes the new
    triangle at once as the Cholesky factor of ``Rp^T Rp + s Wp^T Wp`` and recovers the
    reflectors that produce it from ``Wp = Vp (Rp - R1p)`` (Householder reconstruction,
    Ballard et al. 2015), with ``tau_i = 2 / (1 + s ||v_i||^2)``. Forming that Gram matrix
    squares the panel's condition number, so the result is certified: ``Q`` is applied to
    the panel itself and must give ``[R1p; 0]`` to ``(b + k) eps (||Rp|| + ||Wp||)``.
    A panel that fails the check (ill-conditioned, or a downdate that breaks down there)
    is redone column by column, which also names the failing column. Both ways give
    results of the same accuracy; the Cholesky panel needs about 30 array operations per
    panel instead of about 15 per column.

    **Cost.** Per panel with ``m`` trailing columns: about ``4 b k m + 2 b^2 m`` flops in
    matrix products (``Vp^T W_t``, ``T^T X``, ``Vp P``) plus ``O(k b^2 + b^3)`` in the
    panel. Summed over ``n / b`` panels: ``(2 k + b) n^2`` flops, against ``3 k n^2`` for
    the rotations and ``k n^2 + n^3 / 3`` for forming ``A +- V V^T`` and factoring it again.
    Bytes moved: ``R`` once in and once out (``n^2`` items), ``W`` in and out once per
    panel (about ``k n^2 / b`` items). The default block size is 64 for NumPy, where the
    extra ``b n^2`` flops of ``T`` cost time, and 256 for CuPy, where the fixed cost of
    each panel's operations dominates (on an H100, 256 ran 3 to 4 times faster than 64;
    512 was no faster).

    **Why blocking matters on a GPU, and what still limits it.** The rotation algorithms
    apply ``k n^2 / 2`` dependent 2 x 2 transformations; as array operations that is a
    small kernel per row or per element, and launches (microseconds each) dominate.
    Walder's GPU code (seed 004) therefore fuses them into a few kernels per panel. The
    blocked method gets part of that with stock library calls: a handful of GEMMs per
    panel. Its time on a GPU is still set by the number of array operations, not by the
    bytes of ``R``. On an H100 with CuPy each small operation costs 10 to 40 us of host
    time and a small cuSOLVER call 60 to 800 us, so the column-by-column panel spends
    about 0.5 ms per column and the Cholesky panel 2 to 4 ms per panel. Measured
    (``benchmarks/cholesky_bench.py``, float64, k = 16): at ``n = 20000`` about 180 ms
    per update with 256-wide panels, 600 ms with 64-wide ones, against 115 ms for
    cuSOLVER to form and refactor ``A +- V V^T`` and a bandwidth floor of about 2 ms; at
    ``n = 5000``, 45 ms against 8 ms. So on a GPU, refactoring wins up to at least
    ``n = 20000``, and the update only pays off beyond that (the O(n^3) refactorization
    grows faster). On that machine's 16 CPU cores, the NumPy path and
    ``scipy.linalg.cholesky`` of the modified matrix took similar times for ``n = 1000``
    to 5000 and ``k <= 64`` (``n = 5000, k = 16``: 96 against 202 ms in float32), the
    update gaining as ``n`` grows. A fused panel kernel (one launch per panel, as in
    seed 004) is the way to the bandwidth floor.

    **Rotation methods (seed 004, Algorithm 1).** ``Compute`` turns ``(R[i, i], V[i, p])``
    into ``w = sqrt(R[i, i]^2 + s V[i, p]^2)``, ``c = w / R[i, i]``,
    ``s_ip = V[i, p] / R[i, i]`` and sets ``R[i, i] = w``; ``Apply`` updates an entry of
    row ``i`` and the matching entry of ``V`` as ``R[i, j] = (R[i, j] + s s_ip V[j, p]) / c``,
    ``V[j, p] = c V[j, p] - s_ip R[i, j]`` (using the new ``R[i, j]``, the stable form for
    hyperbolic rotations). The two orderings do the same arithmetic on each entry, so they
    give identical results; they differ in memory access:

    * ``'rotations-A'`` (CholeskyModifyA, column by column, Walder's choice for the GPU):
      for each column ``i``, first apply the stored rotations of rows ``0 .. i-1`` to
      ``R[0:i, i]`` and ``V[i, :]``, then compute the rotations of row ``i``. Only
      ``c``, ``s`` and one column of ``R`` are read in the inner loop. (The listing in
      seed 004 calls ``Compute`` before the inner loop; ``V[i]`` must first receive the
      earlier rotations, otherwise the result is wrong, so Compute comes after it here.)
    * ``'rotations-B'`` (CholeskyModifyB, row by row, LINPACK ``dchud`` style): for each
      row ``i``, compute its rotation and sweep it along row ``i`` of ``R`` and ``V[i+1:]``.

    For ``k > 1`` the ``k`` rotations of a row are applied one vector after another inside
    the loop over rows/columns, so both orderings and the blocked method report the same
    failing column. These loops read device scalars: on CuPy each step is a kernel launch
    and each breakdown test a synchronisation; use them on small problems.

    Squares of entries are formed, so the entries of ``A`` and ``V V^T`` must be
    representable (no over- or underflow of ``R[j, j]^2``).

    Examples
    --------
    >>> import numpy as np
    >>> from qrlab.cholesky import cholesky_update, cholesky_downdate
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((8, 5))
    >>> A = X.T @ X + 5 * np.eye(5)
    >>> R = np.linalg.cholesky(A).T          # upper triangular, A = R^T R
    >>> V = rng.standard_normal((5, 2))
    >>> R1 = cholesky_update(R, V)
    >>> np.allclose(R1.T @ R1, A + V @ V.T)
    True
    >>> bool(np.all(np.diag(R1) > 0)) and np.array_equal(R1, np.triu(R1))
    True

    A downdate by the same ``V`` undoes the update, and the rotation algorithm agrees:

    >>> np.allclose(cholesky_downdate(R1, V), R)
    True
    >>> np.allclose(cholesky_update(R, V, method='rotations-A'), R1)
    True

    A downdate that would destroy positive definiteness says where:

    >>> cholesky_downdate(R, 2 * R[3])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    numpy.linalg.LinAlgError: downdate fails at column 3 (0-based): the leading 4 x 4 block...

    (``A - 4 R[3]^T R[3] = R^T (I - 4 e_3 e_3^T) R``: its leading 3 x 3 block is that of
    ``A``, its leading 4 x 4 block is indefinite.)
    """
    xp = array_module(R, V)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if block_size is not None and (isinstance(block_size, bool)
                                   or not isinstance(block_size, (int, np.integer))
                                   or block_size < 1):
        raise ValueError(f"block_size must be a positive integer or None, got {block_size!r}")
    if panel not in _PANELS:
        raise ValueError(f"panel must be one of {_PANELS}, got {panel!r}")
    R, V2 = _validate(xp, R, V)
    n = R.shape[0]
    s = -1 if downdate else 1
    executor = executor_for(xp)
    if (method == "blocked" and block_size is None
            and executor.structured_passes(R.dtype, n, V2.shape[1])):
        return _structured(executor, R, V2, s, overwrite, check_finite)
    _scan(xp, R, V2, check_finite)

    if method == "structured":
        R1 = _structured_arrays(R, V2, s, min(n, block_size or 64), executor.growth_max)[0]
        if R1 is not None:
            if overwrite:
                R[...] = R1
                return R
            return R1
        method = "blocked"                     # (the growth test reported, or a breakdown)
        block_size = None
    if method == "blocked":
        if block_size is None and executor.fuses_triangle(R.dtype, V2.shape[1]):
            return _fused(executor, R, V2, s, overwrite)
        nb = min(n, DEFAULT_BLOCK_SIZE[xp.__name__] if block_size is None else int(block_size))
        W = V2.T.copy()                         # private working copy, k x n (C order)
        if overwrite:
            _blocked(R, W, s, nb, panel, out=R, staged=True)
            return R
        out = xp.zeros_like(R)
        _blocked(R, W, s, nb, panel, out=out, staged=False)
        return out

    # Rotations: a private copy with positive diagonal (row sign flips keep R^T R).
    Rw = xp.triu(R) * xp.sign(xp.diagonal(R))[:, None]
    _rotations(Rw, V2.copy(), s, ordering=method[-1])
    if overwrite:
        R[...] = Rw
        return R
    return Rw


def cholesky_downdate(R, V, **kwargs):
    """Rank-k downdate: the upper triangular factor of ``R^T R - V V^T``.

    Same as ``cholesky_update(R, V, downdate=True, **kwargs)``; see :func:`cholesky_update`
    for the parameters, the exceptions (a LinAlgError naming the first failing column when
    ``R^T R - V V^T`` is not positive definite) and the algorithms.

    Examples
    --------
    >>> import numpy as np
    >>> from qrlab.cholesky import cholesky_downdate
    >>> R = np.array([[2.0, 1.0], [0.0, 3.0]])
    >>> v = np.array([1.0, 0.5])
    >>> R1 = cholesky_downdate(R, v)
    >>> np.allclose(R1.T @ R1, R.T @ R - np.outer(v, v))
    True
    """
    if "downdate" in kwargs:
        raise TypeError("cholesky_downdate() got an unexpected keyword argument 'downdate'")
    return cholesky_update(R, V, downdate=True, **kwargs)


# --------------------------------------------------------------------------- validation

def _validate(xp, R, V):
    """Check shapes and dtypes; return R and V as arrays, V as n x k."""
    R = xp.asarray(R)
    V = xp.asarray(V)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise ValueError(f"R must be a non-empty square 2-D array, got shape {R.shape}")
    n = R.shape[0]
    if V.ndim == 1 and V.shape[0] == n:
        V2 = V[:, None]
    elif V.ndim == 2 and V.shape[0] == n and V.shape[1] >= 1:
        V2 = V
    else:
        raise ValueError(f"V must have shape ({n}, k) with k >= 1 or shape ({n},) to match "
                         f"R of shape {R.shape}, got shape {V.shape}")
    for name, a in (("R", R), ("V", V)):
        if a.dtype not in _DTYPES:
            raise TypeError(f"{name} has dtype {a.dtype}; only float32 and float64 are "
                            "supported (not integer, float16 or complex)")
    if R.dtype != V.dtype:
        raise ValueError(f"R and V must have the same dtype, got {R.dtype} and {V.dtype}")
    return R, V2


def _scan(xp, R, V, check_finite):
    """Check the values before any work: finite (with ``check_finite``), no zero on R's
    diagonal."""
    if check_finite:
        for name, a in (("R", R), ("V", V)):
            if not bool(xp.isfinite(a).all()):
                raise _non_finite(name)
    zero = to_numpy(xp.diagonal(R) == 0)
    if zero.any():
        raise _zero_diagonal(int(np.argmax(zero)))


def _non_finite(name):
    return ValueError(f"{name} contains non-finite values (inf or nan)")


def _zero_diagonal(j):
    return np.linalg.LinAlgError(
        f"R has a zero on its diagonal at index {j} (0-based): A = R^T R is singular, "
        "not positive definite")


def _breakdown(j, s):
    """The LinAlgError for a non-positive (or non-finite) pivot in column j."""
    if s < 0:
        return np.linalg.LinAlgError(
            f"downdate fails at column {j} (0-based): the leading {j + 1} x {j + 1} block "
            "of A - V V^T is not positive definite (or not finite)")
    return np.linalg.LinAlgError(
        f"update broke down at column {j} (0-based): a non-finite pivot (non-finite input "
        "with check_finite=False, or overflow)")


# --------------------------------------------------------------------------- blocked

def _blocked(R, W, s, nb, panel, out, staged):
    """Blocked (hyperbolic) Householder update of R by W = V^T (k x n, overwritten).

    R is only read. Each panel's new rows go to ``out`` as soon as the panel is done:
    directly (``staged=False``), or, when ``out`` is R itself, transposed into R's strict
    lower triangle plus a diagonal vector (``staged=True``), because rows of R that later
    panels no longer read must stay intact until the whole downdate is known to succeed.
    """
    xp = array_module(R)
    n = R.shape[0]
    # Reading each row with the sign that makes its diagonal negative lets the stable
    # reflector (beta = -sign(alpha) r) produce a positive diagonal directly.
    flip = -xp.sign(xp.diagonal(R))
    panels = [(j0, min(j0 + nb, n)) for j0 in range(0, n, nb)]
    diag = xp.empty(n, R.dtype) if staged else None
    try:
        for j0, j1 in panels:
            b = j1 - j0
            rows = R[j0:j1, j0:] * flip[j0:j1, None]      # a copy of the panel's rows
            rows[:, :b] = xp.triu(rows[:, :b])            # only the upper triangle is data
            Rp, Wp = rows[:, :b], W[:, j0:j1]
            YT = _cholesky_panel(Rp, Wp, s) if panel == "cholesky" else None
            if YT is None:       # asked for, or the Cholesky panel failed its check
                YT = _householder_panel(Rp, Wp, s, j0)    # raises on a breakdown
            if j1 < n:
                _apply_panel(*YT, rows[:, b:], W[:, j1:], s)
            if staged:
                lower = xp.tri(b, b, -1, dtype=bool)
                R[j0:j1, j0:j1][lower] = Rp.T[lower]
                R[j1:, j0:j1] = rows[:, b:].T
                diag[j0:j1] = xp.diagonal(Rp)
            else:
                out[j0:j1, j0:] = rows
    except np.linalg.LinAlgError:
        if staged:  # give back the workspace: the upper triangle was never written
            for j0, j1 in panels:
                R[j0:j1, j0:j1][xp.tri(j1 - j0, j1 - j0, -1, dtype=bool)] = 0
                R[j1:, j0:j1] = 0
        raise
    if staged:  # success: move the transposed rows up, panel by panel (no n x n temporary)
        for j0, j1 in panels:
            R[j0:j1, j1:] = R[j1:, j0:j1].T
            R[j1:, j0:j1] = 0
            R[j0:j1, j0:j1] = xp.triu(R[j0:j1, j0:j1].T, 1) + xp.diag(diag[j0:j1])


def _fused(executor, R, V, s, overwrite):
    """The blocked method in fused kernels (a GPU executor): one launch for the whole
    update (``qrlab/kernels/triangle.cu``, several for k > 512, 256 in float64); see
    ``GpuExecutor.triangle_update``. R is only read until the whole update has
    succeeded."""
    xp = array_module(R)
    flip = -xp.sign(xp.diagonal(R))            # negative diagonal in, positive out
    R1 = working_copy(R, upper=True, scale=flip)   # one pass over R
    W = V.T.copy()                             # k x n, C order; V is the caller's
    j = executor.triangle_update(R1, W, s)
    if j >= 0:
        raise _breakdown(j, s)
    if overwrite:
        R[...] = R1
        return R
    return R1


def _structured(executor, R, V, s, overwrite, check_finite):
    """The structured update in fused kernels (a GPU executor; see
    ``GpuExecutor.structured_update``): no chain of reflectors, R read as it is (its
    upper triangle, rows flipped to a positive diagonal), R and V checked inside the
    kernels, and the result written only when the whole update has succeeded.

    V's columns go in passes of at most ``executor.structured_k_max``, each updating the
    result of the one before: ``A + s V V^T = (A + s V_1 V_1^T) + s V_2 V_2^T + ...``.
    In a downdate every intermediate matrix is the final one plus a positive
    semidefinite term, so a pass breaks down only if the whole downdate does; but it may
    break down at a later column than the first failing one of ``A - V V^T``, so a
    breakdown in several passes is redone by the chain of reflectors, which names it.
    So is an update that fails the growth test (where the structured update's small
    factorizations cancel, and it loses accuracy as that growth times ``eps``), or that
    breaks down, which only rounding can make it do (an S singular to working precision,
    with the growth test off)."""
    xp = array_module(R)
    npass = -(-V.shape[1] // executor.structured_k_max)
    # (the kernels take rows that are contiguous and go forward in memory)
    forward = R.strides[1] == R.itemsize and R.strides[0] > 0
    source = R if forward else xp.ascontiguousarray(R)
    in_place = overwrite and source is R and npass == 1
    out = R if in_place else xp.empty(R.shape, R.dtype)
    # a pass after one that failed has run on its result (into new arrays, so R is as it
    # was), and the reports are read in order
    for j, zero, nonfinite, grew in executor.structured_update_passes(
            source, V.T, s, out, check_finite=check_finite):
        if nonfinite and check_finite:
            raise _non_finite("R" if nonfinite & 1 else "V")
        if zero >= 0:
            raise _zero_diagonal(zero)
        # (an update breaks down only by rounding, where its small factorizations cancel)
        if grew or (j >= 0 and (npass > 1 or s > 0)):
            _scan(xp, R, V, check_finite)
            return _fused(executor, R, V, s, overwrite)
        if j >= 0:
            raise _breakdown(j, s)
    if overwrite and not in_place:
        R[...] = out
        return R
    return out


def _structured_arrays(R, V, s, nb, growth_max):
    """The structured update in array operations, blocks of ``nb`` rows: returns
    ``(R1, growth)``, ``R1`` None where the growth exceeds ``growth_max`` (0: no test) or
    a small factorization fails (a downdate that breaks down; the blocked method then
    names the column).

    With ``P = R^{-T} V`` and, for the block ``I`` of rows from ``i0``, ``S`` the k x k
    sum ``I + s sum_{J < I} P_J^T P_J = Us^T Us`` and ``X = P_I Us^{-1}``, the block's rows of
    ``M`` (``M^T M = I + s P P^T``) are ``U = chol(I + s X X^T)`` on the diagonal and
    ``Wm P_J^T`` to the right (``Wm = s U^{-T} X Us^{-T}``), so ``R1_I = U R_I + Wm Z`` with
    ``Z = V^T - sum_{J <= I} P_J^T R_J``.  Growth: the largest ``S_qq / Us_qq^2``, ``C_rr``
    and ``1 / U_rr^2`` (``C = I + s X X^T``) over the blocks, how much these small
    factorizations cancel, and so ``M R``."""
    xp = array_module(R)
    n, k = V.shape
    Rp = xp.triu(R) * xp.sign(xp.diagonal(R))[:, None]     # positive diagonal
    P = solve_triangular(Rp, V, check=False, trans=True)     # (R checked by _scan)
    S = xp.eye(k, dtype=R.dtype)
    Z = V.T.copy()
    out = xp.zeros_like(Rp)
    growth = 1.0
    for i0 in range(0, n, nb):
        PI, RI = P[i0:i0 + nb], Rp[i0:i0 + nb, i0:]
        Us = _upper_factor(xp, S)
        if Us is None:
            return None, growth
        X = solve_triangular(Us, PI.T, check=False, trans=True).T
        C = xp.eye(X.shape[0], dtype=R.dtype) + s * (X @ X.T)
        U = _upper_factor(xp, C)
        if U is None:
            return None, growth
        block = xp.concatenate([xp.diagonal(S) / xp.diagonal(Us) ** 2, xp.diagonal(C),
                                xp.diagonal(U) ** -2.0])
        growth = max(growth, float(block.max()))      # (one read of the device a block)
        if growth_max and growth > growth_max:
            return None, growth
        Wm = s * solve_triangular(Us, solve_triangular(U, X, False, trans=True).T, False).T
        Z = Z[:, -RI.shape[1]:] - PI.T @ RI            # (its columns from i0 on)
        out[i0:i0 + nb, i0:] = U @ RI + Wm @ Z
        S = S + s * (PI.T @ PI)
    return xp.triu(out), growth


def _upper_factor(xp, A):
    """The upper triangular Cholesky factor of ``A``, or None if ``A`` is not (numerically)
    positive definite."""
    try:
        U = xp.linalg.cholesky(A).T
    except np.linalg.LinAlgError:
        return None
    d = xp.diagonal(U)
    return U if bool(xp.all(xp.isfinite(d) & (d > 0))) else None


def _householder_panel(Rp, Wp, s, j0):
    """Reduce the panel [Rp; Wp] (b x b upper, k x b) to [R1p; 0] in place, column by column.

    Returns the reflectors as (Y, T): Y (k x b) holds v_i of u_i = [e_i; v_i] in column i,
    T the compact WY factor. Raises LinAlgError, naming column j0 + i, if a pivot
    alpha^2 + s ||y||^2 is not positive; the check runs once per panel, so a GPU
    synchronises once per panel.
    """
    xp = array_module(Rp)
    k, b = Wp.shape
    Y = xp.empty((k, b), Rp.dtype)
    tau = xp.empty(b, Rp.dtype)
    pivots = xp.empty(b, Rp.dtype)
    with np.errstate(all="ignore"):  # a breakdown shows up as nan here, caught below
        for i in range(b):
            alpha = Rp[i, i]                        # negative, see _blocked
            y = Wp[:, i]
            d = alpha * alpha + s * (y @ y)         # x^T J x = beta^2
            pivots[i] = d
            r = xp.sqrt(d)                          # beta = -sign(alpha) r = r
            Y[:, i] = y / (alpha - r)               # alpha - beta: no cancellation
            tau[i] = (r - alpha) / r                # (beta - alpha) / beta
            Rp[i, i] = r
            if i + 1 < b:                           # apply H_i to the rest of the panel
                w = (Rp[i, i + 1:] + s * (Y[:, i] @ Wp[:, i + 1:])) * tau[i]
                Rp[i, i + 1:] -= w
                Wp[:, i + 1:] -= xp.outer(Y[:, i], w)
        ok = to_numpy(xp.isfinite(pivots) & (pivots > 0))
    if not ok.all():
        raise _breakdown(j0 + int(np.argmin(ok)), s)
    return Y, _t_factor(Y, tau, s)


def _cholesky_panel(Rp, Wp, s):
    """Reduce [Rp; Wp] to [R1p; 0] through R1p^T R1p = Rp^T Rp + s Wp^T Wp, if that is accurate.

    One Cholesky factorization replaces the b dependent reflector steps. The reflectors
    that produce R1p are then recovered from it: the bottom block of Q [Rp; Wp] = [R1p; 0]
    reads Wp = Y (Rp - R1p), where Rp - R1p is triangular with diagonal alpha_i - beta_i,
    never small (Householder reconstruction, as in Ballard et al., "Reconstructing
    Householder vectors from tall-skinny QR"). tau_i = 2 / (1 + s ||y_i||^2) makes each
    H_i exactly J-orthogonal whatever the rounding in Y. Forming the Gram matrix squares
    the panel's condition number, so the result is certified by applying Q to the panel
    itself: unless Q [Rp; Wp] equals [R1p; 0] to (b + k) eps (||Rp|| + ||Wp||), or the
    Cholesky factorization fails (not positive definite, or merely too ill-conditioned),
    return None and leave Rp alone; the caller then runs the column-by-column panel.
    Otherwise write R1p into Rp and return (Y, T).
    """
    xp = array_module(Rp)
    k, b = Wp.shape
    with np.errstate(all="ignore"):
        try:
            R1 = xp.linalg.cholesky(Rp.T @ Rp + s * (Wp.T @ Wp)).T
            Y = xp.linalg.solve((Rp - R1).T, Wp.T).T
        except np.linalg.LinAlgError:   # NumPy; CuPy returns nan or garbage instead
            return None
        tau = 2 / (1 + s * (Y * Y).sum(axis=0))
        T = _t_factor(Y, tau, s)
        Z = T.T @ (Rp + s * (Y.T @ Wp))             # Q [Rp; Wp] = [Rp - Z; Wp - Y Z]
        err = xp.linalg.norm(Rp - Z - R1) + xp.linalg.norm(Wp - Y @ Z)
        bound = (b + k) * np.finfo(Rp.dtype).eps * (xp.linalg.norm(Rp) + xp.linalg.norm(Wp))
        ok = (err <= bound) & xp.all(xp.diagonal(R1) > 0)   # nan compares False
    if not bool(ok):                                # one synchronisation per panel
        return None
    Rp[...] = R1
    return Y, T


def _t_factor(Y, tau, s):
    """T of H_{b-1} ... H_0 = I - [I; Y] T^T [I; Y]^T J, by the UT transform.

    T^{-1} = triu([I; Y]^T J [I; Y], 1) + diag(1 / tau) (Joffrain et al. 2006, with J).
    """
    xp = array_module(Y)
    return xp.linalg.inv(xp.triu(s * (Y.T @ Y), 1) + xp.diag(1 / tau))


def _apply_panel(Y, T, C, Wt, s):
    """Apply H_{b-1} ... H_0 = I - [I; Y] T^T [I; Y]^T J to [C; Wt] in place (3 GEMMs)."""
    P = T.T @ (C + s * (Y.T @ Wt))
    C -= P
    Wt -= Y @ P


# --------------------------------------------------------------------------- rotations

def _rotations(Rw, Vw, s, ordering):
    """Walder's Algorithm 1 (seed 004) for all k columns of Vw, in place on Rw and Vw.

    ordering 'A' is CholeskyModifyA (column by column), 'B' CholeskyModifyB (row by row).
    """
    xp = array_module(Rw)
    n, k = Vw.shape

    def compute(i, p):
        """Walder's Compute: the rotation that folds V[i, p] into R[i, i]."""
        lii, vip = Rw[i, i], Vw[i, p]             # on CuPy: 0-d views, not copies
        w2 = lii * lii + s * vip * vip
        if not bool(w2 > 0):                      # also catches nan
            raise _breakdown(i, s)
        w = xp.sqrt(w2)
        c_ip, s_ip = w / lii, vip / lii           # before R[i, i] changes under the view
        Rw[i, i] = w
        return c_ip, s_ip

    if ordering == "A":
        c = xp.empty((n, k), Rw.dtype)
        sn = xp.empty((n, k), Rw.dtype)
        for i in range(n):
            vi = Vw[i]
            for j in range(i):                    # bring column i up to date ...
                l, cj, sj = Rw[j, i], c[j], sn[j]
                for p in range(k):                # ... Apply(c_j, s_j, L_ji, V_i)
                    l = (l + s * sj[p] * vi[p]) / cj[p]
                    vi[p] = cj[p] * vi[p] - sj[p] * l
                Rw[j, i] = l
            for p in range(k):                    # ... then row i's own rotations
                c[i, p], sn[i, p] = compute(i, p)
    else:
        for i in range(n):
            for p in range(k):
                ci, si = compute(i, p)            # Apply(c_i, s_i, L_ij, V_j), all j > i
                Rw[i, i + 1:] = (Rw[i, i + 1:] + s * si * Vw[i + 1:, p]) / ci
                Vw[i + 1:, p] = ci * Vw[i + 1:, p] - si * Rw[i, i + 1:]
