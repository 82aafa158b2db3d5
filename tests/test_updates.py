"""The four block updates and qr_update against recomputation and against SciPy.

Organised like SciPy's own test file: by operation, then by the shape of the
factorization (full, thin, Q-less), on fresh random inputs of both precisions.
"""
import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st

import qrlab
from qrlab import qr_delete, qr_insert, qr_update, stages, updates
from qrlab.backend import to_numpy
from qrlab.executor import Executor

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [(9, 4), (7, 7), (12, 5), (4, 7)]  # tall, square, tall, wide


def rand(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def factor(A, mode):
    Q, R = sl.qr(A, mode="economic" if mode == "thin" else "full")
    return Q.astype(A.dtype), R.astype(A.dtype)


def tol(dtype, *dims):
    return 60 * np.finfo(dtype).eps * max(dims + (1,))


def check_factors(Q1, R1, A1, mode="full"):
    """QR equals the updated A, Q has orthonormal columns, R is exactly triangular."""
    t = tol(A1.dtype, *A1.shape)
    assert R1.dtype == A1.dtype and (Q1 is None or Q1.dtype == A1.dtype)
    assert np.all(np.tril(R1, -1) == 0), "R must be exactly upper triangular"
    if Q1 is not None:
        assert Q1.shape[0] == A1.shape[0]
        scale = max(1.0, np.linalg.norm(A1))
        assert np.linalg.norm(Q1 @ R1 - A1) <= t * scale
        assert np.linalg.norm(Q1.conj().T @ Q1 - np.eye(Q1.shape[1])) <= t
        if mode == "full":
            assert Q1.shape == (A1.shape[0], A1.shape[0])
    else:
        # R alone: R^H R = A^H A, checked through the unique R of a fresh factorization
        ref = np.linalg.qr(A1.astype(np.complex128 if A1.dtype.kind == "c" else np.float64),
                           mode="r")
        h = min(ref.shape[0], R1.shape[0])
        assert np.allclose(abs(R1[:h]), abs(ref[:h]), atol=t * max(1, np.abs(ref).max()))


def same_r_as_scipy(R1, Rs):
    """R is unique up to the phases of its rows for a full-rank A: compare moduli."""
    h = min(R1.shape[0], Rs.shape[0], R1.shape[1])
    t = tol(R1.dtype, *R1.shape) * max(1, np.abs(Rs).max())
    np.testing.assert_allclose(abs(R1[:h]), abs(Rs[:h]), atol=t)


# ----------------------------------------------------------------------------------
# against recomputation, every update, full / thin / Q-less, all dtypes
# ----------------------------------------------------------------------------------
def cases(modes):
    """(dtype, shape, mode) triples; economic factorizations exist for tall A only."""
    return [(d, s, mo) for d in DTYPES for s in SHAPES for mo in modes
            if not (mo == "thin" and s[0] <= s[1])]


WITH_Q = pytest.mark.parametrize("dtype,shape,mode", cases(["full", "thin"]))
ANY_Q = pytest.mark.parametrize("dtype,shape,mode", cases(["full", "thin", "none"]))


@pytest.mark.parametrize("kp", ["k0p1", "kmid", "kend", "plarge"])
class TestAgainstRecomputation:
    def kp_for(self, kp, size, pmax):
        return {"k0p1": (0, 1), "kmid": (size // 2, 2), "kend": (size, 1),
                "plarge": (1, pmax)}[kp]

    def setup(self, dtype, shape, mode, seed):
        rng = np.random.default_rng(seed)
        A = rand(rng, shape, dtype)
        Q, R = factor(A, mode)
        return rng, A, (None if mode == "none" else Q), R

    @WITH_Q
    def test_insert_cols(self, dtype, shape, mode, kp):
        rng, A, Q, R = self.setup(dtype, shape, mode, 1)
        m, n = shape
        k, p = self.kp_for(kp, n, 2 * m)
        U = rand(rng, (m, p), dtype)
        if mode == "thin":
            p = min(p, m - n)
            U = U[:, :p]
        Q1, R1 = qr_insert(Q, R, U, k, "col")
        A1 = np.insert(A, [k] * p, U, axis=1)
        check_factors(Q1, R1, A1, mode)
        same_r_as_scipy(R1, sl.qr_insert(Q, R, U, k, "col")[1])

    @ANY_Q
    def test_delete_cols(self, dtype, shape, mode, kp):
        rng, A, Q, R = self.setup(dtype, shape, mode, 2)
        m, n = shape
        k, p = self.kp_for(kp, n, n - 1)
        k = min(k, n - p)
        out = qr_delete(Q, R, k, p, "col")
        A1 = np.delete(A, range(k, k + p), axis=1)
        Q1, R1 = (None, out) if Q is None else out
        check_factors(Q1, R1, A1, mode)
        if Q is not None:
            same_r_as_scipy(R1, sl.qr_delete(Q, R, k, p, "col")[1])

    @ANY_Q
    def test_insert_rows(self, dtype, shape, mode, kp):
        rng, A, Q, R = self.setup(dtype, shape, mode, 3)
        m, n = shape
        k, p = self.kp_for(kp, m, 2 * n + 1)
        U = rand(rng, (p, n), dtype)
        out = qr_insert(Q, R, U, k, "row")
        A1 = np.insert(A, [k] * p, U, axis=0)
        Q1, R1 = (None, out) if Q is None else out
        check_factors(Q1, R1, A1, mode)
        if Q is not None:
            same_r_as_scipy(R1, sl.qr_insert(Q, R, U, k, "row")[1])

    @WITH_Q
    def test_delete_rows(self, dtype, shape, mode, kp):
        rng, A, Q, R = self.setup(dtype, shape, mode, 4)
        m, n = shape
        k, p = self.kp_for(kp, m, m - 1)
        k = min(k, m - p)
        Q1, R1 = qr_delete(Q, R, k, p, "row")
        A1 = np.delete(A, range(k, k + p), axis=0)
        check_factors(Q1, R1, A1, mode if m - p >= n else "full")
        Qs, Rs = sl.qr_delete(Q, R, k, p, "row")
        assert Q1.shape == Qs.shape and R1.shape == Rs.shape
        same_r_as_scipy(R1, Rs)

    @WITH_Q
    def test_rank_update(self, dtype, shape, mode, kp):
        rng, A, Q, R = self.setup(dtype, shape, mode, 5)
        m, n = shape
        p = {"k0p1": 1, "kmid": 2, "kend": 3, "plarge": n + 2}[kp]
        u, v = rand(rng, (m, p), dtype), rand(rng, (n, p), dtype)
        Q1, R1 = qr_update(Q, R, u, v)
        check_factors(Q1, R1, A + u @ v.conj().T, mode)
        if p <= n:
            same_r_as_scipy(R1, sl.qr_update(Q, R, u, v)[1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["full", "thin"])
@pytest.mark.parametrize("m, n, p, k", [(60, 20, 12, 18), (60, 20, 8, 19), (90, 30, 40, 20),
                                        (40, 10, 30, 9), (50, 20, 30, 20)])
def test_insert_cols_near_the_end_by_householder(m, n, p, k, mode, dtype):
    """p >= 4 (n - k): the plan reduces the whole new block by Householder and then the
    few shifted columns it fills (no sweeps); against SciPy and recomputation."""
    plan = stages.plan_insert_cols(m if mode == "full" else n + min(p, m - n), n, k, p)
    sweeps = [op for op in plan.ops() if isinstance(op, stages.Sweeps)]
    assert not sweeps or mode == "thin" and m - n < p
    rng = np.random.default_rng(m + n + p + k)
    A = rand(rng, (m, n), dtype)
    Q, R = factor(A, mode)
    U = rand(rng, (m, p), dtype)
    if mode == "thin":
        p = min(p, m - n)
        U = U[:, :p]
    Q1, R1 = qr_insert(Q, R, U, k, "col")
    check_factors(Q1, R1, np.insert(A, [k] * p, U, axis=1), mode)
    same_r_as_scipy(R1, sl.qr_insert(Q, R, U, k, "col")[1])


def test_paper_method_matches_blocked():
    rng = np.random.default_rng(6)
    A = rng.standard_normal((15, 8))
    Q, R = sl.qr(A)
    U = rng.standard_normal((15, 3))
    for call in (lambda meth: qr_insert(Q, R, U, 2, "col", method=meth),
                 lambda meth: qr_update(Q, R, U, rng.standard_normal((8, 3)), method=meth)):
        state = rng.bit_generator.state
        Qb, Rb = call("blocked")
        rng.bit_generator.state = state
        Qp, Rp = call("paper")
        np.testing.assert_allclose(Rb, Rp, atol=1e-12)
        np.testing.assert_allclose(Qb, Qp, atol=1e-12)


@pytest.mark.parametrize("m, n, p, k", [(15, 8, 3, 4), (40, 10, 6, 0), (40, 10, 6, 34),
                                        (30, 12, 1, 29), (25, 20, 4, 3)])
def test_removing_rows_householder_stage_matches_the_papers(m, n, p, k):
    """Removing rows runs Householder on Q's columns past n first (R is zero on those
    rows), then sweeps of n + p columns; the papers sweep all m.  Same R~ up to the
    signs of its rows, same first n columns of Q~ up to theirs (the rest of Q~ is any
    basis of the complement), same Q~^T b for the rows of R~."""
    rng = np.random.default_rng(m + n + p + k)
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)
    Q, R = sl.qr(A)
    Rd = np.concatenate([R, (Q.T @ b)[:, None]], axis=1)
    runs = {}
    for meth in ("blocked", "paper"):
        plan = stages.plan_delete_rows(m, n, p, 1, householder=meth == "blocked")
        first = plan.stages[0].ops[0]
        assert isinstance(first, stages.Reflect) == (meth == "blocked" and m - n > p)
        runs[meth] = updates._delete_rows(Q, Rd, k, p, "full", Executor(meth), nc=1)
    (Qb, Rb), (Qp, Rp) = runs["blocked"], runs["paper"]
    A1 = np.delete(A, range(k, k + p), axis=0)
    check_factors(Qb, Rb[:, :n], A1, "full")
    sign = np.sign(np.diag(Rb[:, :n])) * np.sign(np.diag(Rp[:, :n]))
    np.testing.assert_allclose(Rb[:n] * sign[:, None], Rp[:n], atol=1e-12)
    np.testing.assert_allclose(Qb[:, :n] * sign, Qp[:, :n], atol=1e-12)
    # the least-squares data: Q~^T b~ below row n is the residual, norm for norm
    b1 = np.delete(b, range(k, k + p))
    np.testing.assert_allclose(Rb[:, n], Qb.T @ b1, atol=1e-12)
    assert np.isclose(np.linalg.norm(Rb[n:, n]), np.linalg.norm(Rp[n:, n]))


def test_one_dimensional_u_like_scipy():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((6, 4))
    Q, R = sl.qr(A)
    for u, which in ((rng.standard_normal(4), "row"), (rng.standard_normal(6), "col")):
        Q1, R1 = qr_insert(Q, R, u, 2, which)
        Qs, Rs = sl.qr_insert(Q, R, u, 2, which)
        assert Q1.shape == Qs.shape and R1.shape == Rs.shape
        same_r_as_scipy(R1, Rs)


def test_negative_k_counts_from_the_end():
    rng = np.random.default_rng(8)
    A = rng.standard_normal((8, 5))
    Q, R = sl.qr(A)
    Q1, R1 = qr_delete(Q, R, -2, 2, "row")
    check_factors(Q1, R1, A[:6])
    Q1, R1 = qr_insert(Q, R, np.ones((8, 1)), -1, "col")
    check_factors(Q1, R1, np.insert(A, 4, 1.0, axis=1))


def test_exact_zeros_and_inputs_untouched():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((20, 10))
    Q, R = sl.qr(A)
    U = rng.standard_normal((20, 4))
    saved = [x.copy() for x in (Q, R, U)]
    outs = [qr_insert(Q, R, U, 3, "col"), qr_delete(Q, R, 2, 3, "col"),
            qr_insert(Q, R, U.T[:, :10], 5, "row"), qr_delete(Q, R, 5, 4, "row"),
            qr_update(Q, R, U, U[:10])]
    for Q1, R1 in outs:
        assert np.all(np.tril(R1, -1) == 0)
    for x, y in zip((Q, R, U), saved):
        assert np.array_equal(x, y)


def test_delete_everything_and_empty_results():
    rng = np.random.default_rng(10)
    A = rng.standard_normal((6, 4))
    Q, R = sl.qr(A)
    Q1, R1 = qr_delete(Q, R, 0, 6, "row")
    assert Q1.shape == (0, 0) and R1.shape == (0, 4)
    Q1, R1 = qr_delete(Q, R, 0, 4, "col")
    assert Q1.shape == (6, 6) and R1.shape == (6, 0)


def test_rank_deficient_updates():
    rng = np.random.default_rng(11)
    A = rng.standard_normal((10, 4))
    Q, R = sl.qr(A)
    # a column already in the span of A: fine with a full Q
    Q1, R1 = qr_insert(Q, R, A[:, :2], 1, "col")
    check_factors(Q1, R1, np.insert(A, [1, 1], A[:, :2], axis=1))
    # rank-deficient rows and a zero rank-p update
    Q1, R1 = qr_insert(Q, R, np.zeros((3, 4)), 2, "row")
    check_factors(Q1, R1, np.insert(A, [2] * 3, 0.0, axis=0))
    Q1, R1 = qr_update(Q, R, np.zeros((10, 2)), rng.standard_normal((4, 2)))
    check_factors(Q1, R1, A)
    # economic Q: u in the span of Q raises like SciPy
    Qe, Re = sl.qr(A, mode="economic")
    with pytest.raises(np.linalg.LinAlgError):
        sl.qr_insert(Qe, Re, A[:, :1], 1, "col")
    with pytest.raises(np.linalg.LinAlgError, match="span of Q"):
        qr_insert(Qe, Re, A[:, :1], 1, "col")
    # ... and a thin update whose u lies in the span of Q still works
    V = rng.standard_normal((4, 2))
    Q1, R1 = qr_update(Qe, Re, A[:, :2], V)
    check_factors(Q1, R1, A + A[:, :2] @ V.T, "thin")
    Q1, R1 = qr_update(Qe, Re, A[:, 0], V[:, 0])      # one column, in the span of Q
    check_factors(Q1, R1, A + np.outer(A[:, 0], V[:, 0]), "thin")


EXTEND_BASIS_CASES = ["random", "in span of Q", "zero column", "repeated",
                      "wider than the complement"]


def check_extend_basis(executor, xp, m, n, case, dtype):
    """[Q, Qy] orthonormal and Y = Q C + Qy Ry, also where a column of Y adds nothing
    (in the span of Q, zero, a repeat of an earlier one): the fallback direction that
    takes its place must be orthogonal to Q and to the other columns."""
    rng = np.random.default_rng(13)
    Q = factor(rand(rng, (m, n), dtype), "thin")[0]
    Y = rand(rng, (m, 4), dtype)
    if case == "in span of Q":
        Y[:, 1] = Q @ rand(rng, (n,), dtype)
    elif case == "zero column":
        Y[:, 0] = 0
    elif case == "repeated":
        Y[:, 2] = Y[:, 0] * 3
    elif case == "wider than the complement":
        Y = rand(rng, (m, m - n + 3), dtype)
    width = min(Y.shape[1], m - n)
    C, Qy, Ry, d = (to_numpy(a) for a in updates._extend_basis(
        xp.asarray(Q), xp.asarray(Y), width, executor))
    t = tol(dtype, m)
    B = np.concatenate([Q, Qy], axis=1)
    assert Qy.shape == (m, width) and Ry.shape == (width, Y.shape[1]) and d.shape == (width,)
    assert np.linalg.norm(B.conj().T @ B - np.eye(n + width)) <= t
    assert np.linalg.norm(Q @ C + Qy @ Ry - Y) <= t * np.linalg.norm(Y)
    # d: each column's reach outside Q and the columns before it (after a column that
    # adds nothing, the next ones' depend on rounding: only that one is checked)
    weak = {"in span of Q": 1, "zero column": 0, "repeated": 2}.get(case)
    if weak is None:
        Yout = Y[:, :width] - Q @ (Q.conj().T @ Y[:, :width])
        ref = np.abs(np.diagonal(np.linalg.qr(Yout.astype(np.complex128), mode="r")))
        assert np.allclose(d, ref, rtol=t, atol=0)
    else:
        assert d[weak] <= t * np.linalg.norm(Y) and np.all(d[:weak] > 1e3 * d[weak])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", EXTEND_BASIS_CASES)
def test_extend_basis_replaces_the_directions_y_lacks(case, dtype):
    check_extend_basis(Executor(), np, 14, 6, case, dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", EXTEND_BASIS_CASES)
@pytest.mark.parametrize("m, n", [(14, 6), (500, 50), (3000, 2990)])
def test_cupy_extend_basis(m, n, case, dtype):
    """The same on the GPU: real dtypes in one launch of ``extend_basis``
    (``kernels/panel.cu``), complex ones as array operations."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    check_extend_basis(GpuExecutor(), cp, m, n, case, dtype)


@pytest.mark.parametrize("rcond, raises", [(None, False), (0.01, False), (0.05, True)])
def test_economic_insert_col_rcond_like_scipy(rcond, raises):
    """An explicit ``rcond`` is SciPy's: a column close to the span of Q (reciprocal
    condition number 0.0175 for Q augmented with it) passes the default and a limit
    below that, and raises above it, reporting the number, in SciPy and here alike."""
    rng = np.random.default_rng(14)
    A = rng.standard_normal((12, 4))
    Q, R = sl.qr(A, mode="economic")
    u = A[:, 1] + 0.05 * rng.standard_normal(12)
    for f in (sl.qr_insert, qr_insert):
        if raises:
            with pytest.raises(np.linalg.LinAlgError, match="number of 0.0174"):
                f(Q, R, u, 2, "col", rcond=rcond)
        else:
            Q1, R1 = f(Q, R, u, 2, "col", rcond=rcond)
            check_factors(Q1, R1, np.insert(A, 2, u, axis=1), "thin")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_economic_insert_col_keeps_a_small_near_dependent_column(dtype):
    """A column whose part outside Q is far below sqrt(eps) of it but above eps: its
    reciprocal condition number (about half that part) is computed without cancelling,
    so it passes the default limit and a limit below it, as in SciPy."""
    rng = np.random.default_rng(15)
    A = rng.standard_normal((10, 3)).astype(dtype)
    Q, R = sl.qr(A, mode="economic")
    outside = sl.qr(A)[0][:, 5]
    part = 1e-5 if dtype == np.float32 else 1e-11      # (below sqrt(eps), above eps)
    u = (Q[:, 0] + part * outside).astype(dtype)
    for f in (sl.qr_insert, qr_insert):
        Q1, R1 = f(Q, R, u, 1, "col", rcond=part / 10)
        check_factors(Q1, R1, np.insert(A, 1, u, axis=1), "thin")
        Q1, R1 = f(Q, R, u, 1, "col")
        check_factors(Q1, R1, np.insert(A, 1, u, axis=1), "thin")
    with pytest.raises(np.linalg.LinAlgError, match="reciprocal condition number of 5"):
        qr_insert(Q, R, u, 1, "col", rcond=part)


def check_small_part_outside_q(xp, dtype):
    """A thin Q grows by a column's direction outside Q however small that part is (here
    1e-3 of the column, at m = 2000, where 100 eps m is 0.02 in float32): the whole
    column is kept, so Q R matches it to rounding, Q stays orthonormal, and R's volume
    grows by that part's length."""
    rng = np.random.default_rng(19)
    m, n = 2000, 6
    A = rng.standard_normal((m, n))
    Q, R = sl.qr(A, mode="economic")
    outside = rng.standard_normal(m)
    outside -= Q @ (Q.T @ outside)
    outside /= np.linalg.norm(outside)
    u = A @ rng.standard_normal(n)
    u += 1e-3 * np.linalg.norm(u) * outside
    Q, R, u = (xp.asarray(a.astype(dtype)) for a in (Q, R, u))
    Q1, R1 = (to_numpy(a) for a in qr_insert(Q, R, u, 2, "col"))
    A1 = np.insert(to_numpy(Q) @ to_numpy(R), 2, to_numpy(u), axis=1)
    eps = np.finfo(dtype).eps
    err = np.abs(Q1 @ R1 - A1).max(axis=0) / np.abs(A1).max(axis=0)
    assert np.all(err < 100 * eps), err
    assert np.abs(Q1.T @ Q1 - np.eye(n + 1)).max() < 100 * eps
    # the volume grows by the part's length: prod |diag R1| = prod |diag R| ||u_out||
    grew = np.exp(np.log(abs(np.diagonal(R1)).astype(float)).sum()
                  - np.log(abs(np.diagonal(to_numpy(R))).astype(float)).sum())
    np.testing.assert_allclose(grew, 1e-3 * np.linalg.norm(to_numpy(u)), rtol=1e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_economic_insert_col_keeps_a_small_part_outside_q(dtype):
    check_small_part_outside_q(np, dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cupy_economic_insert_col_keeps_a_small_part_outside_q(dtype):
    import cupy as cp
    check_small_part_outside_q(cp, dtype)


SCALES = [1e-30, 1e-14, 1.0, 1e30]


def check_updates_at_any_scale(xp, scale, dtype):
    """A thin Q grows by the new columns' directions whatever their size: the test of
    whether a column adds a direction is relative to that column.  A, u and v scaled
    alike (up to 1e-30 and 1e30, where squares underflow or overflow in float32), and a
    block of two columns 1e6 (float32) or 1e12 apart in size; each column of Q R must
    match its own."""
    rng = np.random.default_rng(16)
    A = (rng.standard_normal((9, 3)) * scale).astype(dtype)
    Q, R = sl.qr(A, mode="economic")
    apart = 1e-6 if dtype == np.float32 else 1e-12
    U = (rng.standard_normal((9, 2)) * scale * np.array([1.0, apart])).astype(dtype)
    v = (rng.standard_normal(3)).astype(dtype)
    eps = np.finfo(dtype).eps
    Q, R, U, v = (xp.asarray(a) for a in (Q, R, U, v))

    def close(factors, A1):
        Q1, R1 = (to_numpy(a) for a in factors)
        err = np.abs(Q1 @ R1 - A1).max(axis=0) / np.abs(A1).max(axis=0)
        assert np.all(err < 100 * eps), err
        assert np.abs(Q1.T @ Q1 - np.eye(Q1.shape[1])).max() < 100 * eps

    Un, vn = to_numpy(U), to_numpy(v)
    close(qr_insert(Q, R, U, 1, "col"), np.insert(A, [1, 1], Un, axis=1))
    close(qr_insert(Q, R, U[:, 1], 3, "col"), np.insert(A, 3, Un[:, 1], axis=1))
    close(qr_update(Q, R, U[:, 0], v), A + np.outer(Un[:, 0], vn))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", SCALES)
def test_economic_updates_at_any_scale(scale, dtype):
    check_updates_at_any_scale(np, scale, dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", SCALES)
def test_cupy_economic_updates_at_any_scale(scale, dtype):
    """The same on the GPU (``extend_basis`` in one launch of ``kernels/panel.cu``).  In
    float32 only where the squares of the values are normal floats (README, "Using the
    GPU": beyond that the GPU's path loses them)."""
    import cupy as cp
    if dtype == np.float32 and not 1e-18 < scale < 1e18:
        pytest.skip("float32 on the GPU: values beyond 1e+-18 are not supported")
    check_updates_at_any_scale(cp, scale, dtype)


def test_thin_delete_rows_with_a_row_of_leverage_one():
    """A row whose removal drops the rank of A's row space: Z has a singular value 1."""
    rng = np.random.default_rng(12)
    A = rng.standard_normal((8, 3))
    A[:, 2] = 0
    A[4, 2] = 1.0                        # only row 4 touches column 2
    Q, R = sl.qr(A, mode="economic")
    Q1, R1 = qr_delete(Q, R, 3, 2, "row")
    A1 = np.delete(A, [3, 4], axis=0)
    assert np.linalg.norm(Q1 @ R1 - A1) < 1e-12
    assert np.linalg.norm(Q1.T @ Q1 - np.eye(3)) < 1e-12


# ----------------------------------------------------------------------------------
# hypothesis: random (m, n, p, k)
# ----------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 14), n=st.integers(1, 14), p=st.integers(1, 8),
       k=st.integers(0, 20), which=st.sampled_from(["row", "col"]),
       op=st.sampled_from(["insert", "delete"]), seed=st.integers(0, 2**16),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_random_updates(m, n, p, k, which, op, seed, dtype):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n)).astype(dtype)
    Q, R = factor(A, "full")
    if op == "insert":
        k = k % ((m if which == "row" else n) + 1)
        U = rng.standard_normal((p, n) if which == "row" else (m, p)).astype(dtype)
        Q1, R1 = qr_insert(Q, R, U, k, which)
        A1 = np.insert(A, [k] * p, U, axis=0 if which == "row" else 1)
    else:
        size = m if which == "row" else n
        p = min(p, size)
        k = k % (size - p + 1)
        Q1, R1 = qr_delete(Q, R, k, p, which)
        A1 = np.delete(A, range(k, k + p), axis=0 if which == "row" else 1)
    check_factors(Q1, R1, A1)


# ----------------------------------------------------------------------------------
# bad input: the same exception as SciPy, before any work, inputs untouched
# ----------------------------------------------------------------------------------
def _bad_calls():
    rng = np.random.default_rng(13)
    A = rng.standard_normal((6, 4))
    Q, R = sl.qr(A)
    Qe, Re = sl.qr(A, mode="economic")
    u_row, u_col = rng.standard_normal((2, 4)), rng.standard_normal((6, 2))
    nan_row = u_row.copy()
    nan_row[0, 0] = np.nan
    return {
        "k too large (row)": ("insert", (Q, R, u_row, 7, "row")),
        "k too small (col)": ("insert", (Q, R, u_col, -5, "col")),
        "u wrong width": ("insert", (Q, R, rng.standard_normal((2, 3)), 1, "row")),
        "u wrong height": ("insert", (Q, R, rng.standard_normal((5, 2)), 1, "col")),
        "bad which": ("insert", (Q, R, u_row, 1, "diag")),
        "non-finite u": ("insert", (Q, R, nan_row, 1, "row")),
        "integer dtype": ("insert", (Q, R, np.ones((2, 4), dtype=int), 1, "row")),
        "u float32 with float64 Q": ("insert", (Q, R, u_row.astype(np.float32), 1, "row")),
        "Q and R dtypes differ": ("insert", (Q.astype(np.float32), R, u_row, 1, "row")),
        "float16": ("insert", (Q.astype(np.float16), R.astype(np.float16),
                               u_row.astype(np.float16), 1, "row")),
        "incompatible shapes": ("insert", (Q[:, :5], R, u_row, 1, "row")),
        "1-D Q": ("insert", (Q[0], R, u_row, 1, "row")),
        "p = 0": ("delete", (Q, R, 1, 0, "col")),
        "k + p beyond n": ("delete", (Q, R, 3, 2, "col")),
        "negative p": ("delete", (Q, R, 0, -1, "row")),
        "k beyond m": ("delete", (Q, R, 6, 1, "row")),
        "economic u in span": ("insert", (Qe, Re, A[:, :2], 1, "col")),
        "update rank mismatch": ("update", (Q, R, u_col, rng.standard_normal((4, 3)))),
        "update u rows": ("update", (Qe, Re, rng.standard_normal(7), rng.standard_normal(4))),
        "update v rows": ("update", (Q, R, rng.standard_normal(6), rng.standard_normal(5))),
        "update 1-D and 2-D": ("update", (Q, R, rng.standard_normal(6),
                                          rng.standard_normal((4, 1)))),
    }


BAD = _bad_calls()


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_raises_like_scipy(case):
    op, args = BAD[case]
    ours = {"insert": qr_insert, "delete": qr_delete, "update": qr_update}[op]
    theirs = {"insert": sl.qr_insert, "delete": sl.qr_delete, "update": sl.qr_update}[op]
    saved = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(Exception) as scipy_error:
        theirs(*args)
    with pytest.raises(scipy_error.type):
        ours(*args)
    for a, s in zip(args, saved):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, s, equal_nan=True), "inputs must be left untouched"


def test_q_less_refused_where_q_is_needed():
    A = np.random.default_rng(14).standard_normal((6, 4))
    R = np.linalg.qr(A, mode="r")
    with pytest.raises(ValueError, match="needs Q"):
        qr_insert(None, R, np.ones((6, 1)), 1, "col")
    with pytest.raises(ValueError, match="needs Q"):
        qr_delete(None, R, 1, 1, "row")


def test_batched_input_is_refused_clearly():
    A = np.random.default_rng(15).standard_normal((6, 4))
    Q, R = sl.qr(A)
    with pytest.raises(ValueError, match="batched"):
        qr_insert(Q, R[None], np.ones((1, 4)), 0, "row")


# ----------------------------------------------------------------------------------
# the least-squares object
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("q", ["full", "thin", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, r, p", [(6, 0, 5), (14, 3, 1), (14, 3, 4), (30, 4, 2)])
def test_least_squares_sequence(q, dtype, n, r, p):
    """Rows added, columns removed, rows removed, columns added, each answer against
    NumPy's lstsq; r = 0: one right-hand side as a vector.  Several right-hand sides
    with n + r past a multiple of 16 or 32, whose carried columns a panel of the row
    update would split: d = Q^H B must stay exact through every step."""
    rng = np.random.default_rng(16)
    m = n + 34
    A = rng.standard_normal((m, n)).astype(dtype)
    B = rng.standard_normal((m, r) if r else m).astype(dtype)
    ls = qrlab.LeastSquaresQR(A, B, q=q)

    def check():
        x = np.linalg.lstsq(A.astype(float), B.astype(float), rcond=None)[0]
        t = 1e-10 if dtype == np.float64 else 2e-3
        np.testing.assert_allclose(ls.solve(), x, rtol=t, atol=t)
        np.testing.assert_allclose(ls.residual_norm(),
                                   np.linalg.norm(A @ x - B, axis=0), rtol=t)
        if q != "none":
            d = ls.d if r else ls.d[:, 0]
            np.testing.assert_allclose(d, ls.Q.T @ B, atol=t * 10)
        if q == "full":
            np.testing.assert_allclose(ls.Q @ d, B, atol=t * 10)

    U, E = rng.standard_normal((p, n)).astype(dtype), rng.standard_normal(
        (p, r) if r else p).astype(dtype)
    ls.add_rows(U, E, k=7)
    A, B = np.insert(A, [7] * p, U, axis=0), np.insert(B, [7] * p, E, axis=0)
    check()
    ls.remove_columns(2, 2)
    A = np.delete(A, [2, 3], axis=1)
    check()
    if q == "none":
        ls.remove_rows(0, 3, U=A[:3], e=B[:3])
    else:
        ls.remove_rows(0, 3)
    A, B = A[3:], B[3:]
    check()
    if q != "none":
        C = rng.standard_normal((A.shape[0], 2)).astype(dtype)
        ls.add_columns(C, 1)
        A = np.insert(A, [1, 1], C, axis=1)
        check()
    else:
        with pytest.raises(ValueError, match="needs Q"):
            ls.add_columns(np.ones(A.shape[0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_least_squares_without_q_removes_rows_of_an_exact_fit(dtype):
    """Without Q, removing rows downdates the factor of [A, b]; where b's block loses
    its rank (b = A x exactly; two right-hand sides whose residuals are dependent; fewer
    rows left than n + r) that is no fault of the problem: the answer must still come,
    x to rounding and the residual norms to about sqrt(eps) ||b||."""
    rng = np.random.default_rng(21)
    eps = np.finfo(dtype).eps
    for trial in range(20):
        A = rng.standard_normal((12, 4)).astype(dtype)
        x = rng.standard_normal(4).astype(dtype)
        b = A @ x
        ls = qrlab.LeastSquaresQR(A, b, q="none")
        ls.remove_rows(0, 3, U=A[:3], e=b[:3])
        np.testing.assert_allclose(ls.solve(), x, rtol=0, atol=1e3 * eps)
        assert ls.residual_norm() <= 10 * np.sqrt(eps) * np.linalg.norm(b)
        B = rng.standard_normal((10, 2)).astype(dtype)
        B[:, 1] = 2 * B[:, 0]
        ls = qrlab.LeastSquaresQR(A[:10], B, q="none")
        ls.remove_rows(0, 5, U=A[:5], e=B[:5])           # 5 rows left: n + r - 1
        A1, B1 = A[5:10].astype(float), B[5:].astype(float)
        xr = np.linalg.lstsq(A1, B1, rcond=None)[0]
        np.testing.assert_allclose(ls.solve(), xr, rtol=0,
                                   atol=1e3 * eps * np.abs(xr).max())
        np.testing.assert_allclose(ls.residual_norm(), np.linalg.norm(A1 @ xr - B1, axis=0),
                                   rtol=0, atol=10 * np.sqrt(eps) * np.linalg.norm(B))


@pytest.mark.parametrize("q", ["full", "thin", "none"])
def test_least_squares_refuses_bad_data_and_stays_usable(q):
    """Values that are not finite, complex values for a real problem, right-hand sides
    of the wrong shape, more unknowns than rows and new columns in the span of the
    others (with either Q, as SciPy's thin-Q test) are refused before any work, and the
    object still answers for the problem it held; counts may be NumPy integers."""
    rng = np.random.default_rng(20)
    A, B = rng.standard_normal((12, 4)), rng.standard_normal((12, 3))
    ls = qrlab.LeastSquaresQR(A, B, q=q)
    x = np.linalg.lstsq(A, B, rcond=None)[0]
    nan_row = np.ones((1, 4))
    nan_row[0, 2] = np.nan
    bad = [(ValueError, lambda: ls.add_rows(nan_row, np.ones(3))),
           (ValueError, lambda: ls.add_rows(np.ones(4), [1.0, np.inf, 0.0])),
           (TypeError, lambda: ls.add_rows(np.ones(4) * 1j, np.ones(3))),
           (ValueError, lambda: ls.add_rows(np.ones((2, 4)), np.ones((3, 2)))),   # (r, p)
           (ValueError, lambda: ls.add_rows(np.ones((2, 4)), np.ones(6)))]
    if q == "none":
        bad.append((ValueError, lambda: ls.remove_rows(0, 1, U=nan_row, e=np.ones(3))))
    else:
        bad += [(ValueError, lambda: ls.add_columns(np.full(12, np.nan))),
                (ValueError, lambda: ls.add_columns(np.ones((12, 9)))),     # 13 > 12 rows
                (np.linalg.LinAlgError, lambda: ls.add_columns(A @ [1.0, 2.0, 0.0, 1.0])),
                (np.linalg.LinAlgError, lambda: ls.add_columns(np.zeros(12)))]
    for error, call in bad:
        with pytest.raises(error):
            call()
        np.testing.assert_allclose(ls.solve(), x, atol=1e-12)
        assert ls.shape == (12, 4)
    if q != "none":
        ls.remove_rows(np.int64(0), np.int64(2))
        ls.remove_columns(np.int64(1), np.int64(1))
        assert ls.shape == (10, 3) and type(ls.shape[0]) is int
        np.testing.assert_allclose(
            ls.solve(), np.linalg.lstsq(np.delete(A[2:], 1, axis=1), B[2:], rcond=None)[0],
            atol=1e-12)


@pytest.mark.parametrize("plan", [stages.plan_insert_cols(10, 5, 2, 3),
                                  stages.plan_insert_cols(40, 30, 0, 7),
                                  stages.plan_insert_cols(30, 30, 10, 4),
                                  stages.plan_insert_cols(12, 10, 10, 2),
                                  stages.plan_delete_rows(12, 5, 4),
                                  stages.plan_delete_rows(3, 3, 1),
                                  stages.plan_rank_update(20, 8, 3)],
                         ids=lambda plan: plan.kind + str(plan.shape))
def test_wave_groups_match_the_schedule(plan):
    """The GPU executor's host-side schedule (closed form) against the reference
    executor's (every rotation listed): waves, and each group's rows."""
    from qrlab.gpu import wave_groups
    for op in plan.ops():
        if not isinstance(op, stages.Sweeps):
            continue
        pairs = [si for wave in op.waves() for si in wave]
        B = max(op.bottoms) - 1
        times = [B - i + 2 * s for s, i in pairs]
        for nbw in (1, 2, 5, 64):
            B_g, nwaves, lo, hi = wave_groups(op, nbw)
            assert B_g == B and nwaves == (max(times) + 1 if pairs else 0)
            ngroups = max(1, -(-nwaves // nbw))
            want_lo = np.full(ngroups, np.iinfo(np.int64).max)
            want_hi = np.full(ngroups, -1)
            for (s, i), t in zip(pairs, times):
                want_lo[t // nbw] = min(want_lo[t // nbw], i - 1)
                want_hi[t // nbw] = max(want_hi[t // nbw], i + 1)
            np.testing.assert_array_equal(lo, want_lo)
            np.testing.assert_array_equal(hi, want_hi)


def test_strip_passes():
    """The rotation kernel's passes: pipelined passes of 32 (or 64) sweeps where one block
    per pass and strip of 32 lines fits, else passes of up to 256 one after the other."""
    from qrlab.gpu import _strip_passes
    assert _strip_passes(20, 256, 32, 132) == (20, False)        # one pass
    assert _strip_passes(32, 256, 32, 132) == (32, False)
    assert _strip_passes(100, 256, 32, 132) == (32, True)        # 4 + 3 + 2 + 1 blocks
    assert _strip_passes(100, 256, 32, 9) == (100, False)
    assert _strip_passes(100, 256, 32, 10) == (32, True)
    assert _strip_passes(480, 256, 32, 132) == (32, True)        # 15 strips: 120 blocks
    assert _strip_passes(500, 256, 32, 132) == (256, False)      # 16 strips: 136
    assert _strip_passes(500, 256, 64, 132) == (64, True)        # 16 + 14 + ... + 2: 72
    assert _strip_passes(100, 256, None, 132) == (100, False)
    assert _strip_passes(100, 40, None, 132) == (40, False)
    assert _strip_passes(100, 256, 48, 132) == (100, False)      # not a multiple of 32
    assert _strip_passes(100, 256, 32, 132, pays=False) == (100, False)


def test_pipeline_pays(monkeypatch):
    """Pipelined passes where the rotation kernel bounds a sweep (little apply work per
    wave for the SMs), not where the apply kernel does."""
    from qrlab import gpu
    monkeypatch.setattr(gpu, "_sm_count", lambda: 132)
    assert gpu._pipeline_pays(7200, 200, 4)             # 200 columns into 4000 x 3000
    assert not gpu._pipeline_pays(18200, 200, 4)        # ... into 12000 x 6000
    assert gpu._pipeline_pays(14000, 100, 4)            # 100 rows out of 8000 x 6000
    assert not gpu._pipeline_pays(22000, 100, 4)        # ... out of 16000 x 6000
    assert gpu._pipeline_pays(7200, 200, 8) and not gpu._pipeline_pays(14200, 200, 8)
    monkeypatch.setattr(gpu, "_sm_count", lambda: 66)    # half the SMs: twice the work each
    assert not gpu._pipeline_pays(14000, 100, 4)


@pytest.mark.parametrize("h, w, size, nsm", [
    (9000, 200, 8, 132), (9000, 200, 4, 132), (33, 7, 8, 132), (32, 1, 4, 132),
    (100000, 100, 8, 132), (6000, 100, 8, 16), (256, 256, 8, 132), (2020, 512, 8, 132)])
def test_tall_blocks(h, w, size, nsm):
    """``tall_qr``'s grid: at most one block per SM and per 32 rows, every row in a block,
    every block with rows, and None exactly where a block's rows overflow its shared
    memory."""
    from qrlab import gpu
    shape = gpu._tall_blocks(h, w, size, nsm)
    nb = min(nsm, -(-h // 32))
    rows = -(-h // nb)
    if gpu._tall_smem(rows, w, size) > gpu._SMEM_LIMIT:
        assert shape is None
        return
    nb, rows = shape
    assert 1 <= nb <= min(nsm, -(-h // 32))
    assert nb * rows >= h > (nb - 1) * rows                  # no block without rows
    assert gpu._tall_smem(rows, w, size) <= gpu._SMEM_LIMIT


def test_tall_blocks_refuses_what_does_not_fit():
    """A panel whose rows per SM overflow shared memory goes elsewhere (None)."""
    from qrlab import gpu
    assert gpu._tall_blocks(100000, 100, 8, 132) is None     # 758 rows x 100 per block
    assert gpu._tall_blocks(9000, 200, 8, 132) == (131, 69)  # 69 rows x 200: 120 KB


# ----------------------------------------------------------------------------------
# CuPy: the same updates on the GPU agree with NumPy (skipped without a GPU)
# ----------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["full", "thin"])
@pytest.mark.parametrize("method", ["blocked", "paper", "passes"])
def test_cupy_matches_numpy(dtype, mode, method, monkeypatch):
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    if method == "passes":               # the rotation kernel, a few sweeps per launch
        monkeypatch.setattr(GpuExecutor, "sweeps_per_launch", 3)
        method = "blocked"
    rng = np.random.default_rng(18)
    m, n, p = 300, 120, 7
    A = rng.standard_normal((m, n)).astype(dtype)
    Q, R = factor(A, mode)
    Ur, Uc = rng.standard_normal((p, n)).astype(dtype), rng.standard_normal((m, p)).astype(dtype)
    V = rng.standard_normal((n, p)).astype(dtype)
    cases = [
        (qr_insert, (Uc, 40, "col"), np.insert(A, [40] * p, Uc, axis=1)),
        (qr_delete, (30, p, "col"), np.delete(A, range(30, 30 + p), axis=1)),
        (qr_insert, (Ur, 100, "row"), np.insert(A, [100] * p, Ur, axis=0)),
        (qr_delete, (100, p, "row"), np.delete(A, range(100, 100 + p), axis=0)),
        (qr_update, (Uc, V), A + Uc @ V.T),
    ]
    for f, args, A1 in cases:
        Qg, Rg = f(cp.asarray(Q), cp.asarray(R), *[cp.asarray(a) if isinstance(a, np.ndarray)
                                                    else a for a in args], method=method)
        assert isinstance(Qg, cp.ndarray) and isinstance(Rg, cp.ndarray)
        check_factors(Qg.get(), Rg.get(), A1, mode)
        Qn, Rn = f(Q, R, *args, method=method)
        # rows of R may differ in sign (an economic Q's new directions come from an SVD)
        np.testing.assert_allclose(abs(Rg.get()), abs(Rn), atol=tol(dtype, m, n) * np.abs(Rn).max())
    # Q-less paths
    Rg = qr_insert(None, cp.asarray(R), cp.asarray(Ur), 0, "row")
    check_factors(None, Rg.get(), np.vstack([Ur, A]))
    Rg = qr_delete(None, cp.asarray(R), 3, 2, "col")
    check_factors(None, Rg.get(), np.delete(A, [3, 4], axis=1))


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n, p, k", [
    (200, 90, 1, 0), (200, 90, 1, 90), (400, 130, 40, 17), (300, 300, 33, 150),
    (1300, 100, 700, 5), (150, 150, 150, 0)])
def test_cupy_fused_panels(m, n, p, k, dtype):
    """Householder panels in the fused kernel (adding rows, removing columns, rank-p):
    every panel width (p large gives 16 and 8 columns), full / thin / Q-less, against
    NumPy and recomputation."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    rng = np.random.default_rng(m + n + p + k)
    A = rng.standard_normal((m, n)).astype(dtype)
    Ur = rng.standard_normal((p, n)).astype(dtype)
    Uc, V = rng.standard_normal((m, 2)).astype(dtype), rng.standard_normal((n, 2)).astype(dtype)
    pc = min(p, n - 1)
    assert GpuExecutor().fusable(dtype, p + GpuExecutor().panel_width(p, dtype),
                                 GpuExecutor().panel_width(p, dtype))
    for mode in ("full", "thin"):
        Q, R = factor(A, mode)
        kc = min(k, n - pc)
        cases = [(qr_insert, (Ur, min(k, m), "row"), np.insert(A, [min(k, m)] * p, Ur, axis=0)),
                 (qr_delete, (kc, pc, "col"), np.delete(A, range(kc, kc + pc), axis=1)),
                 (qr_update, (Uc, V), A + Uc @ V.T)]
        for f, args, A1 in cases:
            Qg, Rg = f(cp.asarray(Q), cp.asarray(R),
                       *[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
            check_factors(Qg.get(), Rg.get(), A1, mode)
            Qn, Rn = f(Q, R, *args)
            np.testing.assert_allclose(abs(Rg.get()), abs(Rn),
                                       atol=tol(dtype, m, n) * np.abs(Rn).max())
    R = np.linalg.qr(A, mode="r")
    Rg = qr_insert(None, cp.asarray(R), cp.asarray(Ur), 0, "row")
    check_factors(None, Rg.get(), np.vstack([Ur, A]))
    Rg = qr_delete(None, cp.asarray(R), kc, pc, "col")
    check_factors(None, Rg.get(), np.delete(A, range(kc, kc + pc), axis=1))


#: tall panels for ``tall_qr``: (h, w, what is done to the random panel); layouts both
TALL_PANELS = [(300, 40, None), (5000, 7, None), (2000, 200, None), (256, 256, None),
               (777, 1, None), (2000, 60, "duplicate"), (2000, 60, "zero"),
               (2000, 60, "zero-first"), (2000, 60, "rank-5")]


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["rows", "columns"])
@pytest.mark.parametrize("h, w, change", TALL_PANELS)
def test_cupy_tall_qr(h, w, change, layout, dtype):
    """``tall_qr`` (``kernels/tall.cu``, every SM): the panel equals ``(I - V T V^T) [Rp;
    0]`` with V unit lower trapezoidal and Rp upper triangular, both exactly, and the
    reflectors orthogonal; at full rank R, tau and V are LAPACK's (same signs); rank
    deficient panels (a repeated or zero column, rank 5) come out exact too."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    from qrlab.householder import wy_factor
    rng = np.random.default_rng(h + w)
    P = rng.standard_normal((h, w))
    if change == "duplicate":
        P[:, 7] = P[:, 3]
    elif change == "zero":
        P[:, 11] = 0
    elif change == "zero-first":
        P[:, 0] = 0
    elif change == "rank-5":
        P = P[:, :5] @ rng.standard_normal((5, w))
    P = P.astype(dtype)
    Pg = cp.asarray(P) if layout == "rows" else cp.asfortranarray(cp.asarray(P))
    out = GpuExecutor().tall_qr(Pg)
    assert out is not None
    Vg, tau, Rp = out
    np.testing.assert_array_equal(Pg.get(), P)              # the panel is left alone
    V0, Rp = Vg.get(), Rp.get()
    assert np.all(np.triu(V0, 1) == 0) and np.all(np.diag(V0) == 1)
    assert np.all(np.tril(Rp, -1) == 0)
    T = wy_factor(Vg, tau).get().astype(np.float64)
    V = Vg.get()                        # (a reflector with tau = 0 left out of the WY form)
    H = np.eye(h) - V @ T @ V.T
    t = tol(dtype, h, w)
    scale = max(1.0, np.linalg.norm(P))
    assert np.linalg.norm(H[:, :w] @ Rp - P) <= t * scale
    assert np.linalg.norm(H.T @ H - np.eye(h)) <= t
    if change is None:
        a, tau_ref = np.linalg.qr(P.astype(np.float64), mode="raw")
        R_ref = np.triu(a.T[:w])
        np.testing.assert_allclose(Rp, R_ref, atol=t * np.abs(R_ref).max())
        np.testing.assert_allclose(tau.get(), tau_ref, atol=t)
        np.testing.assert_allclose(V0, np.tril(a.T, -1) + np.eye(h, w),
                                   atol=t * np.abs(V0).max())


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["full", "thin"])
def test_cupy_updates_with_tall_panels(dtype, mode, monkeypatch):
    """Adding columns (Householder QR of the rows of Q^T U below R, at k < n and k = n,
    and all of them where few columns shift) and removing rows (the rows of Q to remove,
    in their columns past R) with panels too tall for one block, so ``tall_qr`` factors
    them: against NumPy and recomputation."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    calls = []
    tall = GpuExecutor.tall_qr
    monkeypatch.setattr(GpuExecutor, "tall_qr",
                        lambda self, P: calls.append(P.shape) or tall(self, P))
    rng = np.random.default_rng(29)
    m, n, p = 3000, 100, 40
    A = rng.standard_normal((m, n)).astype(dtype)
    Uc = rng.standard_normal((m, p)).astype(dtype)
    Q, R = factor(A, mode)
    cases = [(qr_insert, (Uc, k, "col"), np.insert(A, [k] * p, Uc, axis=1))
             for k in (0, 37, 95, n)]
    cases.append((qr_delete, (1000, p, "row"), np.delete(A, range(1000, 1000 + p), axis=0)))
    for f, args, A1 in cases:
        Qg, Rg = f(cp.asarray(Q), cp.asarray(R),
                   *[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        check_factors(Qg.get(), Rg.get(), A1, mode)
        Qn, Rn = f(Q, R, *args)
        np.testing.assert_allclose(abs(Rg.get()), abs(Rn), atol=tol(dtype, m, n) * np.abs(Rn).max())
    if mode == "full":
        assert len(calls) == len(cases), calls


#: the triangle update's launches: one (its rows in one chunk, or in chunks of 5) or one
#: per panel
TRIANGLE_PATHS = pytest.mark.parametrize(
    "one_launch, chunk", [(True, 64), (True, 5), (False, 64)],
    ids=["one-launch", "one-launch-chunks-of-5", "per-panel"])


def gpu_triangle_test(test):
    """The marks of a GPU test of the triangle update: skipped without a GPU, run on each
    path of TRIANGLE_PATHS, in float32 and float64."""
    for mark in (pytest.mark.parametrize("dtype", [np.float32, np.float64]), TRIANGLE_PATHS,
                 pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU"),
                 pytest.mark.gpu):
        test = mark(test)
    return test


def gpu_triangle(monkeypatch, one_launch, chunk):
    """A GPU executor whose triangle updates take the launches of TRIANGLE_PATHS (also
    where the triangle is square, which the structured update would otherwise take)."""
    from qrlab.gpu import GpuExecutor
    monkeypatch.setattr(GpuExecutor, "one_launch", one_launch)
    monkeypatch.setattr(GpuExecutor, "triangle_chunk", chunk)
    monkeypatch.setattr(GpuExecutor, "square_by_structured", False)
    return GpuExecutor()


@gpu_triangle_test
@pytest.mark.parametrize("nrows, n, p, nc", [(40, 40, 1, 0), (64, 64, 5, 1), (100, 70, 33, 1),
                                              (300, 257, 64, 2), (33, 33, 100, 1),
                                              (1000, 1000, 7, 1), (20, 40, 5, 0),
                                              (400, 300, 1100, 1)])
def test_cupy_rows_without_q(nrows, n, p, nc, dtype, one_launch, chunk, monkeypatch):
    """Adding rows without Q: one launch of kernels/triangle.cu for the whole update
    (carried right-hand-side columns too; p = 1100 takes three launches in float, five in
    double), or one launch per panel, against the NumPy path; the stacked matrix's Gram
    matrix is unchanged."""
    import cupy as cp

    from qrlab import updates
    from qrlab.executor import Executor
    rng = np.random.default_rng(nrows + n + p + nc)
    R = np.triu(rng.standard_normal((nrows, n + nc))).astype(dtype)
    U = rng.standard_normal((p, n + nc)).astype(dtype)
    ex = gpu_triangle(monkeypatch, one_launch, chunk)
    Rg = updates._insert_rows(None, cp.asarray(R), cp.asarray(U), 0, "none", ex)[1].get()
    plan = stages.plan_insert_rows(nrows, n + nc, p, ex.panel_width(p, dtype))
    lead = ex.triangle_rows(plan, None, cp.asarray(np.vstack([R, U])))
    if one_launch and nrows >= n:   # the triangle: the panels before the carried columns
        assert lead is not None and lead[0] >= min(n, 32 * (n // 32))
    else:                           # per panel; a wide matrix's new rows join its diagonal
        assert lead is None
    Rn = updates._insert_rows(None, R, U, 0, "none", Executor())[1]
    W = np.vstack([R, U]).astype(np.float64)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(Rg, Rn, rtol=0, atol=50 * n * eps * np.abs(Rn).max())
    np.testing.assert_allclose(Rg.astype(np.float64).T @ Rg, W.T @ W, rtol=0,
                               atol=50 * n * eps * np.abs(W.T @ W).max())
    assert np.array_equal(np.triu(Rg), Rg)      # eliminated entries exactly zero


@gpu_triangle_test
@pytest.mark.parametrize("m, n, p, k, nc", [(200, 90, 1, 0, 0), (200, 90, 1, 200, 1),
                                            (130, 100, 33, 60, 0), (130, 100, 33, 60, 2),
                                            (64, 64, 5, 10, 0), (90, 40, 300, 45, 0),
                                            (90, 40, 300, 45, 1), (30, 50, 4, 7, 0)])
@pytest.mark.parametrize("mode", ["full", "thin"])
def test_cupy_rows_with_q(m, n, p, k, nc, mode, dtype, one_launch, chunk, monkeypatch):
    """Adding rows with Q: one launch of kernels/triangle.cu with the identity carried,
    then Q by two GEMMs, one carried right-hand-side column included; panel by panel
    for a wide matrix, with two carried columns (dense below the triangle, so R's
    rows there are no triangle), or by choice.  The carried columns stay Q^T b.
    Against the NumPy path."""
    import cupy as cp

    from qrlab import updates
    from qrlab.executor import Executor
    rng = np.random.default_rng(m + n + p + k + nc)
    A = rng.standard_normal((m, n)).astype(dtype)
    b, b_new = rng.standard_normal((m, nc)).astype(dtype), rng.standard_normal((p, nc))
    Ur = rng.standard_normal((p, n)).astype(dtype)
    Q, R = factor(A, mode)
    Rb = np.hstack([R, Q.T @ b]).astype(dtype)              # right-hand sides carried
    U = np.hstack([Ur, b_new]).astype(dtype)
    ex = gpu_triangle(monkeypatch, one_launch, chunk)
    plan = stages.plan_insert_rows(R.shape[0], n + nc, p, ex.panel_width(p, dtype))
    lead = ex.triangle_rows(plan, cp.asarray(Q), cp.asarray(np.vstack([Rb, U])), nc)
    last = min(n + nc, R.shape[0] + p - 1)        # the plan's last column, plus one
    if one_launch and nc <= 1 and last <= R.shape[0]:     # the plan is the triangle
        assert lead is not None and not lead[2]
    else:                   # per panel; two carried columns; a wide matrix's panels
        assert lead is None
    Qg, Rg = (x.get() for x in updates._insert_rows(cp.asarray(Q), cp.asarray(Rb),
                                                    cp.asarray(U), k, mode, ex, nc=nc))
    A1 = np.insert(A, [k] * p, Ur, axis=0)
    b1 = np.insert(b, [k] * p, b_new.astype(dtype), axis=0)
    check_factors(Qg, Rg[:, :n], A1, mode)
    t = tol(dtype, m + p, n) * max(1.0, np.abs(b1).max(initial=0))
    if mode == "full":
        np.testing.assert_allclose(Qg @ Rg[:, n:], b1, rtol=0, atol=t * m)
    else:
        np.testing.assert_allclose(Qg.T @ b1, Rg[:Qg.shape[1], n:], rtol=0, atol=t * m)
    Qn, Rn = updates._insert_rows(Q, Rb, U, k, mode, Executor(), nc=nc)
    np.testing.assert_allclose(abs(Rg), abs(Rn), rtol=0, atol=tol(dtype, m, n) * np.abs(Rn).max())


@gpu_triangle_test
@pytest.mark.parametrize("m, n, k, p, nc", [(200, 90, 0, 1, 0), (200, 90, 88, 1, 1),
                                            (130, 100, 10, 33, 2), (64, 64, 5, 40, 0),
                                            (300, 120, 60, 1, 1), (40, 60, 3, 5, 0)])
@pytest.mark.parametrize("mode", ["full", "thin"])
def test_cupy_cols_with_q(m, n, k, p, nc, mode, dtype, one_launch, chunk, monkeypatch):
    """Removing columns with Q: one launch of kernels/triangle.cu with the identity
    carried, then Q by two GEMMs (a wide matrix: panel by panel), or one launch per
    panel; carried right-hand-side columns stay Q^T b.  Against the NumPy path."""
    import cupy as cp

    from qrlab import updates
    from qrlab.executor import Executor
    rng = np.random.default_rng(m + n + p + k + nc)
    A = rng.standard_normal((m, n)).astype(dtype)
    b = rng.standard_normal((m, nc)).astype(dtype)
    Q, R = factor(A, mode)
    Rb = np.hstack([R, Q.T @ b]).astype(dtype)              # right-hand sides carried
    ex = gpu_triangle(monkeypatch, one_launch, chunk)
    plan = stages.plan_delete_cols(R.shape[0], n, k, p, ex.panel_width(p, dtype))
    R_w = np.hstack([Rb[:, :k], Rb[:, k + p:]])
    band = ex.triangle_cols(plan, cp.asarray(Q), cp.asarray(R_w))
    if not one_launch:
        assert band is None
    elif R.shape[0] >= n:                                   # tall: the band is a triangle
        assert band is not None
    Qg, Rg = (x.get() for x in updates._delete_cols(cp.asarray(Q), cp.asarray(Rb), k, p,
                                                    mode, ex, nc=nc))
    n1 = n - p
    A1 = np.delete(A, range(k, k + p), axis=1)
    check_factors(Qg, Rg[:, :n1], A1, mode)
    t = tol(dtype, m, n) * max(1.0, np.abs(b).max(initial=0))
    np.testing.assert_allclose(Qg.T @ b, Rg[:Qg.shape[1], n1:], rtol=0, atol=t * m)
    Qn, Rn = updates._delete_cols(Q, Rb, k, p, mode, Executor(), nc=nc)
    # rows may differ in sign; the carried columns' residual rows by an orthogonal mix
    atol = tol(dtype, m, n) * np.abs(Rn).max()
    np.testing.assert_allclose(abs(Rg[:, :n1]), abs(Rn[:, :n1]), rtol=0, atol=atol)
    np.testing.assert_allclose(np.linalg.norm(Rg[:, n1:], axis=0),
                               np.linalg.norm(Rn[:, n1:], axis=0), rtol=0, atol=atol)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("which", ["rank-1", "column at the front"])
def test_cupy_long_sweep_float32(which):
    """The fused sweeps' float32 rotations are rounded without bias: a rank-1 update with
    full Q chains m rotations through Q's columns (adding a column at the front, n
    through R's rows), so Q's departure from orthogonality and the residual grow like
    sqrt(m) eps, not m eps.  (Rotations whose c^2 + s^2 erred by a fraction of an ulp of
    one sign, rotation after rotation, left them 10 to 30 times larger here.)"""
    import cupy as cp
    rng = np.random.default_rng(7)
    m, n = (6000, 100) if which == "rank-1" else (6000, 3000)
    A = rng.standard_normal((m, n)).astype(np.float32)
    Q, R = factor(A, "full" if which == "rank-1" else "thin")
    if which == "rank-1":
        u, v = rng.standard_normal(m).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        Q1, R1 = qr_update(cp.asarray(Q), cp.asarray(R), cp.asarray(u), cp.asarray(v))
        A1 = A.astype(np.float64) + np.outer(u, v)
    else:
        c = rng.standard_normal(m).astype(np.float32)
        Q1, R1 = qr_insert(cp.asarray(Q), cp.asarray(R), cp.asarray(c), 0, "col")
        A1 = np.insert(A.astype(np.float64), 0, c, axis=1)
    Q1, R1 = Q1.astype(cp.float64), R1.astype(cp.float64)
    bound = 2 * np.sqrt(m) * np.finfo(np.float32).eps
    assert float(cp.abs(Q1.T @ Q1 - cp.eye(Q1.shape[1])).max()) <= bound
    assert float(cp.linalg.norm(Q1 @ R1 - cp.asarray(A1)) / np.linalg.norm(A1)) <= bound


@gpu_triangle_test
@pytest.mark.parametrize("m, n, p", [(200, 90, 1), (130, 100, 4), (300, 257, 33), (64, 64, 1),
                                     (70, 64, 8), (40, 60, 2)])
@pytest.mark.parametrize("mode", ["full", "thin"])
def test_cupy_rank_update_with_q(m, n, p, mode, dtype, one_launch, chunk, monkeypatch):
    """A rank-p update with Q: after the sweeps and the rank-p term, the band of p
    subdiagonals is reduced by one launch of kernels/triangle.cu with the identity carried,
    then Q by two GEMMs (a wide matrix, a square one with p > 1, or a thin Q with fewer
    than p rows to spare: panel by panel), or one launch per panel.  Against A + U V^T and the NumPy
    path."""
    import cupy as cp

    from qrlab import updates
    from qrlab.executor import Executor
    rng = np.random.default_rng(m + n + p)
    A = rng.standard_normal((m, n)).astype(dtype)
    U, V = (rng.standard_normal((s, p)).astype(dtype) for s in (m, n))
    Q, R = factor(A, mode)
    mode = updates._check_shapes(Q, R)              # a wide matrix's economic Q is square
    ex = gpu_triangle(monkeypatch, one_launch, chunk)
    nrows = m if mode == "full" else n + min(p, m - n)
    plan = stages.plan_rank_update(nrows, n, p, ex.panel_width(p, dtype))
    band = ex.triangle_cols(plan, cp.asarray(Q), cp.zeros((nrows, n + p), dtype=dtype))
    n_tri = min(n, nrows - 1)       # the columns with a subdiagonal (the last row has none)
    if one_launch and n_tri + p <= nrows:           # the band is p rows over a triangle
        assert band is not None and band[:3] == (0, p, n_tri)
    else:
        assert band is None
    Qg, Rg = (x.get() for x in updates._rank_update(cp.asarray(Q), cp.asarray(R),
                                                    cp.asarray(U), cp.asarray(V), mode, ex))
    check_factors(Qg, Rg, A + U @ V.T, mode)
    Qn, Rn = updates._rank_update(Q, R, U, V, mode, Executor())
    np.testing.assert_allclose(abs(Rg), abs(Rn), rtol=0, atol=tol(dtype, m, n) * np.abs(Rn).max())


@gpu_triangle_test
@pytest.mark.parametrize("nrows, n, k, p, nc", [(40, 40, 0, 1, 0), (40, 40, 39, 1, 1),
                                                (130, 100, 10, 33, 1), (300, 300, 0, 200, 2),
                                                (900, 800, 100, 600, 1), (60, 90, 5, 20, 0),
                                                (30, 50, 3, 1, 0)])
def test_cupy_cols_without_q(nrows, n, k, p, nc, dtype, one_launch, chunk, monkeypatch):
    """Removing columns without Q: the band below the removed columns is p dense rows over
    a triangle, reduced by kernels/triangle.cu (p = 600: two launches in float, three in
    double) and moved up; or one launch per band panel.  Against the NumPy path (rows may
    differ in sign) and the Gram matrix; carried columns keep their norms."""
    import cupy as cp

    from qrlab.executor import Executor
    rng = np.random.default_rng(nrows + n + k + p + nc)
    R = np.triu(rng.standard_normal((nrows, n + nc))).astype(dtype)
    # rows contiguous, as in updates._delete_cols
    W = np.ascontiguousarray(np.delete(R, range(k, k + p), axis=1))
    ex = gpu_triangle(monkeypatch, one_launch, chunk)
    plan = stages.plan_delete_cols(nrows, n, k, p, ex.panel_width(p, dtype))
    Rg = cp.asarray(W)
    band = ex.triangle_cols(plan, None, Rg)
    if not one_launch or k >= n - p:
        assert band is None
    elif nrows >= n:                # (a wide matrix's last panels may be cut short)
        assert band == (k, p, n - p - k, ())
    ex.run(plan, None, Rg)
    Rg = Rg.get()
    Rn = W.copy()
    Executor().run(stages.plan_delete_cols(nrows, n, k, p, ex.panel_width(p, dtype)), None, Rn)
    eps = np.finfo(dtype).eps
    scale = 50 * n * eps * np.abs(R).max()
    n_new = n - p
    np.testing.assert_allclose(abs(Rg[:, :n_new]), abs(Rn[:, :n_new]), rtol=0, atol=scale)
    np.testing.assert_allclose(np.linalg.norm(Rg[:, n_new:], axis=0),
                               np.linalg.norm(Rn[:, n_new:], axis=0), rtol=0, atol=scale)
    W64 = W.astype(np.float64)
    np.testing.assert_allclose(Rg.astype(np.float64).T @ Rg, W64.T @ W64, rtol=0,
                               atol=50 * n * eps * np.abs(W64.T @ W64).max())
    assert np.array_equal(np.triu(Rg[:, :n_new]), Rg[:, :n_new])   # exact zeros


def square_triangle(rng, s, dtype, diagonal=None):
    """An s x s upper triangular R, well conditioned (that of a tall Gaussian matrix,
    diagonal of mixed signs), with the diagonal ``diagonal`` where given."""
    R = np.linalg.qr(rng.standard_normal((2 * s, s)), mode="r")
    if diagonal is not None:
        np.fill_diagonal(R, diagonal)
    return R.astype(dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op, s, p, k", [("rows", 40, 1, 0), ("rows", 300, 64, 0),
                                         ("rows", 700, 200, 0), ("rows", 1000, 7, 0),
                                         ("cols", 300, 100, 0), ("cols", 500, 70, 50),
                                         ("cols", 200, 1, 198), ("cols", 900, 150, 300)])
@pytest.mark.parametrize("diagonal", ["random", "zero", "tiny", "tiny inside"])
def test_cupy_square_triangle_by_structured(op, s, p, k, diagonal, dtype, monkeypatch,
                                            chain_calls):
    """Without Q, adding p rows to a square R (the triangle of [A, b], say) or removing p
    of its columns leaves [S; B] with S square: the structured update makes the new
    triangle (in passes for p > 64), not the chain of reflectors, unless a diagonal entry
    of S is zero or tiny beside the rest of its row (1e-6 of the others' size: an
    ill-conditioned R), which the chain takes instead (the structured update's growth
    test reports it).  So does a tiny last entry (the corner of [A, b] for a nearly exact
    fit) with rows that fit it badly (random ones): P's last entry, their residual over
    that corner, is then large.  Against the NumPy path (rows may differ in sign) and
    the Gram matrix, R exactly triangular, the rows left over exactly zero."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    rng = np.random.default_rng(s + p + k)
    d = None
    inside = max(k + p, s // 2)         # (a row of S: the last one only for k + p = s - 1)
    if diagonal != "random":
        d = np.sqrt(2 * s) * rng.choice([-1.0, 1.0], s)
        d[inside if diagonal == "tiny inside" else s - 1] = (
            0.0 if diagonal == "zero" else 1e-6 * np.sqrt(2 * s))
    R = square_triangle(rng, s, dtype, d)
    # every size to the structured update (the executor sends small ones to the chain)
    monkeypatch.setattr(GpuExecutor, "square_min_n", {4: 0, 8: 0})
    monkeypatch.setattr(GpuExecutor, "square_wide_n", {4: 0, 8: 0})
    monkeypatch.setattr(GpuExecutor, "square_rows_per_pass", {4: 1, 8: 1})
    ex = GpuExecutor()
    if op == "rows":
        U = rng.standard_normal((p, s)).astype(dtype)
        Rg = updates._insert_rows(None, cp.asarray(R), cp.asarray(U), 0, "none", ex)[1].get()
        Rn = updates._insert_rows(None, R, U, 0, "none", Executor())[1]
        W = np.vstack([R, U])
    else:
        Rg = updates._delete_cols(None, cp.asarray(R), k, p, "none", ex)[1].get()
        Rn = updates._delete_cols(None, R, k, p, "none", Executor())[1]
        W = np.delete(R, range(k, k + p), axis=1)
    structured = diagonal == "random" and (op == "rows" or k + p < s)
    assert bool(chain_calls) != structured
    assert Rg.shape == Rn.shape and np.array_equal(np.triu(Rg), Rg)
    h = W.shape[1]
    assert not Rg[h:].any()                     # the rows left over: exactly zero
    eps = np.finfo(dtype).eps
    W64 = W.astype(np.float64)
    G = W64.T @ W64
    np.testing.assert_allclose(Rg[:h].astype(np.float64).T @ Rg[:h], G, rtol=0,
                               atol=50 * s * eps * np.abs(G).max())
    if diagonal != "zero":          # (a singular R's triangle is not unique)
        np.testing.assert_allclose(abs(Rg), abs(Rn), rtol=0,
                                   atol=50 * s * eps * np.abs(Rn).max())


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("one_launch", [True, False], ids=["one-launch", "per-panel"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_triangle_update_on_views(dtype, one_launch, monkeypatch):
    """triangle_update on views with contiguous rows (as removing columns passes them)
    updates them in place, like on contiguous copies; columns not contiguous are refused."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    monkeypatch.setattr(GpuExecutor, "one_launch", one_launch)
    rng = np.random.default_rng(23)
    n, k, nc = 70, 9, 2
    big = np.zeros((n + k + 5, n + nc + 4), dtype)
    big[5:5 + n, 4:] = np.triu(rng.standard_normal((n, n + nc)))
    big[5 + n:, 4:] = rng.standard_normal((k, n + nc))
    G = cp.asarray(big)
    R1, W = G[5:5 + n, 4:], G[5 + n:, 4:]
    R1c, Wc = cp.ascontiguousarray(R1), cp.ascontiguousarray(W)
    ex = GpuExecutor()
    assert ex.triangle_update(R1, W, 1, positive=False) == -1
    assert ex.triangle_update(R1c, Wc, 1, positive=False) == -1
    np.testing.assert_array_equal(R1.get(), R1c.get())
    np.testing.assert_array_equal(W.get(), Wc.get())
    assert np.array_equal(G[:5].get(), big[:5]) and np.array_equal(G[:, :4].get(), big[:, :4])
    with pytest.raises(ValueError, match="contiguous"):
        ex.triangle_update(R1c, cp.asfortranarray(Wc), 1)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_on_views(dtype):
    """cuBLAS on views as they are: a block of a larger matrix, a transpose, C updated
    in place with beta; the rest of C untouched; operands it cannot take refused."""
    import cupy as cp

    from qrlab.gpu import gemm
    rng = np.random.default_rng(5)
    big = cp.asarray(rng.standard_normal((40, 50)), dtype=dtype)
    A = big[3:20, 5:17]                                              # 17 x 12
    B = cp.asarray(rng.standard_normal((9, 12)), dtype=dtype).T      # 12 x 9, transposed
    C0 = cp.asarray(rng.standard_normal((30, 30)), dtype=dtype)
    C = C0.copy()
    want = 2.0 * A.get().astype(np.float64) @ B.get() - 0.5 * C0[2:19, 4:13].get()
    gemm(A, B, C[2:19, 4:13], alpha=2.0, beta=-0.5)
    np.testing.assert_allclose(C[2:19, 4:13].get(), want, rtol=0,
                               atol=50 * np.finfo(dtype).eps * np.abs(want).max())
    outside = np.ones((30, 30), bool)
    outside[2:19, 4:13] = False
    assert np.array_equal(C.get()[outside], C0.get()[outside])
    np.testing.assert_allclose(gemm(B.T, A.T, cp.empty((9, 17), dtype=dtype)).get(),
                               (A @ B).T.get(), rtol=0, atol=1e-3 * np.abs(want).max())
    with pytest.raises(ValueError, match="contiguous rows"):
        gemm(A, B, cp.asfortranarray(cp.empty((17, 9), dtype=dtype)))
    with pytest.raises(ValueError, match="rows or columns"):
        gemm(big[::2, ::2][:5, :12], B, cp.empty((5, 9), dtype=dtype))


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n, p, k", [(300, 200, 1, 0), (300, 200, 60, 0), (400, 250, 100, 50),
                                        (400, 250, 150, 100),
                                        (600, 400, 200, 7), (260, 250, 200, 250),
                                        (700, 400, 200, 380), (900, 800, 600, 5)])
def test_cupy_sweep_strips(m, n, p, k, dtype, monkeypatch):
    """Adding columns: the rotation kernel (strips of 32 lines; passes of 32 sweeps run
    pipelined in one launch where their blocks fit the SMs, else 256 sweeps per launch:
    p = 600 takes three; 2, 4 or 8 sweeps per warp, the fewest that hold them) against
    itself with its groups of rotations run after it instead of beside it, with passes of
    32 sweeps one launch after the other (the same bits as pipelined), with 40 sweeps per
    launch, with two blocks per launch (a chain of launches), with 8 sweeps per warp, with
    pipelined passes of 64 and with all sweeps in one pass, NumPy and recomputation; and,
    for k = 380, the Householder route of p >= 4 (n - k)."""
    import cupy as cp

    from qrlab import gpu
    from qrlab.gpu import GpuExecutor
    rng = np.random.default_rng(m + n + p + k)
    A = rng.standard_normal((m, n)).astype(dtype)
    U = rng.standard_normal((m, p)).astype(dtype)
    Q, R = factor(A, "full")
    A1 = np.insert(A, [k] * p, U, axis=1)
    results = []
    sm_count = gpu._sm_count
    for per_launch, per_pass, sms, overlap, q in (
            (256, 32, None, True, None), (256, 32, None, False, None),
            (32, None, None, True, None), (40, None, None, True, None),
            (256, 32, 2, True, None), (256, 32, None, True, 8), (256, 64, None, True, None),
            (256, None, None, True, None)):
        monkeypatch.setattr(GpuExecutor, "sweeps_per_launch", per_launch)
        monkeypatch.setattr(GpuExecutor, "sweeps_per_pass", per_pass)
        monkeypatch.setattr(GpuExecutor, "pipeline_always", True)
        monkeypatch.setattr(GpuExecutor, "overlap_groups", overlap)
        monkeypatch.setattr(GpuExecutor, "strip_sweeps_per_warp", q)
        monkeypatch.setattr(gpu, "_sm_count", (lambda s=sms: s) if sms else sm_count)
        Qg, Rg = qr_insert(cp.asarray(Q), cp.asarray(R), cp.asarray(U), k, "col")
        check_factors(Qg.get(), Rg.get(), A1, "full")
        results.append(Rg.get())
    # the groups beside the rotation kernel or after it, and the passes pipelined or one
    # after the other: the same operations, the same bits
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_array_equal(results[2], results[0])
    atol = tol(dtype, m, n + p) * np.abs(results[0]).max()
    for other in results[3:]:
        np.testing.assert_allclose(other, results[0], rtol=0, atol=atol)
    Rn = qr_insert(Q, R, U, k, "col")[1]
    np.testing.assert_allclose(abs(results[0]), abs(Rn), rtol=0, atol=atol)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,p,k,mode", [(400, 150, 20, 0, "full"), (400, 150, 20, 170, "full"),
                                          (500, 300, 100, 400, "full"),
                                          (400, 150, 30, 90, "thin"), (300, 300, 7, 293, "full")])
def test_cupy_delete_rows_copies_behind(m, n, p, k, mode, dtype, monkeypatch):
    """Removing rows with the working copies of Q (all but the rows removed) and R made
    beside the rotation kernel, against them made first: the same bits, with the apply
    beside the rotation kernel or after it; the factors those of the updated A, and the
    caller's arrays untouched."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    rng = np.random.default_rng(m + n + p + k)
    A = rng.standard_normal((m, n)).astype(dtype)
    Q, R = (cp.asarray(x) for x in factor(A, mode))
    before = [x.copy() for x in (Q, R)]
    A1 = np.delete(A, np.s_[k:k + p], axis=0)
    results = []
    for behind, overlap in ((False, True), (True, True), (True, False)):
        monkeypatch.setattr(GpuExecutor, "copies_behind", behind)
        monkeypatch.setattr(GpuExecutor, "overlap_groups", overlap)
        Qg, Rg = qr_delete(Q, R, k, p, "row")
        check_factors(Qg.get(), Rg.get(), A1, mode)
        results.append((Qg.get(), Rg.get()))
    for Qr, Rr in results[1:]:
        np.testing.assert_array_equal(Qr, results[0][0])
        np.testing.assert_array_equal(Rr, results[0][1])
    for x, y in zip((Q, R), before):
        assert bool(cp.array_equal(x, y)), "the caller's arrays must stay as they were"


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,p,k", [(3000, 100, 40, 0), (3000, 100, 40, 37),
                                     (3000, 100, 40, 100), (400, 150, 20, 75),
                                     (3000, 100, 40, 95), (700, 400, 200, 380)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_cupy_insert_cols_copy_q_beside(m, n, p, k, order, dtype, monkeypatch):
    """Adding columns with the full Q, its working copy made on another stream beside the
    QR of the rows of Q^T U below R (``tall_qr``'s panels: 2900 x 40) or, where another
    QR takes that panel (250 x 20 in one block, 320 x 200 by cuSOLVER), when the work left
    for later needs it (the second panel of the Householder route, p >= 4 (n - k): k = 95
    and 380), against the copy made first: the same bits; the factors those of the
    updated A, the caller's arrays untouched."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    rng = np.random.default_rng(m + n + p + k)
    A = rng.standard_normal((m, n)).astype(dtype)
    U = rng.standard_normal((m, p)).astype(dtype)
    Q, R = (cp.asarray(x) for x in factor(A, "full"))
    if order == "F":
        Q = cp.asfortranarray(Q)
    Ug = cp.asarray(U)
    before = [x.copy() for x in (Q, R, Ug)]
    A1 = np.insert(A, [k] * p, U, axis=1)
    results = []
    for beside in (False, True):
        monkeypatch.setattr(GpuExecutor, "copy_q_beside", beside)
        Qg, Rg = qr_insert(Q, R, Ug, k, "col")
        check_factors(Qg.get(), Rg.get(), A1, "full")
        results.append((Qg.get(), Rg.get()))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])
    for x, y in zip((Q, R, Ug), before):
        assert bool(cp.array_equal(x, y)), "the caller's arrays must stay as they were"


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["insert_cols", "delete_rows"])
def test_cupy_apply_chunks_any_warps(op, dtype, monkeypatch):
    """The apply kernel gives chunk c of K sweeps to warp c mod the block's warps, waiting
    on chunk c - 1 (in float64 without a barrier between rounds of chunks: with one warp a
    warp waits on itself, with more a round's first chunk on the round before's last
    warp): with 1, 2, 3 or 16 warps a block every vector takes the same rotations in the
    same order, so the factors agree bit for bit, and are those of the updated matrix."""
    import cupy as cp

    from qrlab import gpu
    rng = np.random.default_rng(31)
    m, n, p, k = (500, 260, 150, 40) if op == "insert_cols" else (600, 300, 100, 250)
    A = rng.standard_normal((m, n)).astype(dtype)
    Q, R = (cp.asarray(x) for x in factor(A, "full"))
    U = cp.asarray(rng.standard_normal((m, p)).astype(dtype))
    if op == "insert_cols":
        A1 = np.insert(A, [k] * p, U.get(), axis=1)
    else:
        A1 = np.delete(A, np.s_[k:k + p], axis=0)
    results = []
    for warps in (16, 1, 2, 3):
        monkeypatch.setattr(gpu, "_APPLY_WARPS", warps)
        if op == "insert_cols":
            Qg, Rg = qr_insert(Q, R, U, k, "col")
        else:
            Qg, Rg = qr_delete(Q, R, k, p, "row")
        check_factors(Qg.get(), Rg.get(), A1, "full")
        results.append((Qg.get(), Rg.get()))
    for Qr, Rr in results[1:]:
        np.testing.assert_array_equal(Qr, results[0][0])
        np.testing.assert_array_equal(Rr, results[0][1])


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_cupy_strip_sweeps_per_warp_checked(monkeypatch):
    """Too few sweeps per warp for a launch's sweeps: a clear error, the inputs intact."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    monkeypatch.setattr(GpuExecutor, "strip_sweeps_per_warp", 2)
    # all 100 sweeps in one launch: passes of 32 pipelined (where that pays, as for so
    # few rows) would fit two sweeps per warp
    monkeypatch.setattr(GpuExecutor, "sweeps_per_pass", None)
    rng = np.random.default_rng(5)
    Q, R = (cp.asarray(x) for x in factor(rng.standard_normal((300, 200)), "full"))
    U = cp.asarray(rng.standard_normal((300, 100)))
    before = [x.copy() for x in (Q, R, U)]
    with pytest.raises(ValueError, match="at most 64 sweeps"):
        qr_insert(Q, R, U, 0, "col")
    assert all(bool((x == y).all()) for x, y in zip((Q, R, U), before))


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("q", ["full", "thin"])
@pytest.mark.parametrize("m, n, p", [(1500, 200, 1), (1500, 200, 20), (1200, 900, 3)])
def test_cupy_remove_rows_carries_b(m, n, p, q, dtype):
    """Removing rows of a least-squares problem on the GPU: the carried column Q^H b is
    dense in every row, so the products of the rotations must reach it even in the row
    windows far below the triangle (tall m, several windows), and the solution must be
    the recomputed one."""
    import cupy as cp

    from qrlab import LeastSquaresQR, updates
    from qrlab.executor import Executor
    from qrlab.gpu import GpuExecutor
    rng = np.random.default_rng(m + n + p)
    A = rng.standard_normal((m, n)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    ls = LeastSquaresQR(cp.asarray(A), cp.asarray(b), q=q)
    ls.remove_rows(40, p)
    A1, b1 = np.delete(A, range(40, 40 + p), axis=0), np.delete(b, range(40, 40 + p))
    x = np.linalg.lstsq(A1.astype(np.float64), b1.astype(np.float64), rcond=None)[0]
    x_gpu = ls.solve().get()
    assert np.linalg.norm(x_gpu - x) <= tol(dtype, m, n) * np.linalg.norm(x)
    # the same update on NumPy, Q^H b included (the rows' signs agree: same rotations)
    Q, R = factor(A, "full")
    Rd = np.concatenate([R, (Q.T @ b)[:, None]], axis=1)
    Rn = updates._delete_rows(Q, Rd, 40, p, "full", Executor(), nc=1)[1]
    Rg = updates._delete_rows(cp.asarray(Q), cp.asarray(Rd), 40, p, "full", GpuExecutor(),
                              nc=1)[1].get()
    np.testing.assert_allclose(Rg, Rn, rtol=0, atol=tol(dtype, m, n) * np.abs(Rn).max())


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("h_a, h_b, w, ncols", [(8, 50, 8, 100), (40, 0, 32, 40),
                                                (32, 7, 32, 200), (16, 900, 16, 45)])
def test_reflect_kernel_matches_reference(h_a, h_b, w, ncols, dtype):
    """One Reflect operation, two row spans: the fused kernel against the reference
    executor (geqrf + compact WY), on R and on Q."""
    import cupy as cp

    from qrlab.executor import Executor
    from qrlab.gpu import GpuExecutor
    from qrlab.stages import Reflect
    rng = np.random.default_rng(h_a + h_b + w)
    rows = 10 + h_a + 5 + h_b
    R = np.triu(rng.standard_normal((rows, ncols + 10)).astype(dtype), -3)
    Q = rng.standard_normal((30, rows)).astype(dtype)
    spans = ((10, 10 + h_a),) + (((15 + h_a, 15 + h_a + h_b),) if h_b else ())
    op = Reflect(spans, (6, 6 + w))
    Qg, Rg = cp.asarray(Q), cp.asarray(R)
    GpuExecutor().reflect(op, Qg, Rg)
    Executor().reflect(op, Q, R)
    scale = tol(dtype, rows, ncols) * max(1.0, np.abs(R).max())
    np.testing.assert_allclose(Rg.get(), R, atol=scale)
    np.testing.assert_allclose(Qg.get(), Q, atol=scale)


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_mixing_numpy_and_cupy_raises():
    import cupy as cp
    A = np.random.default_rng(19).standard_normal((6, 4))
    Q, R = sl.qr(A)
    with pytest.raises(TypeError, match="mix"):
        qr_insert(cp.asarray(Q), R, np.ones((1, 4)), 0, "row")
