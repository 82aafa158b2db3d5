"""Tests for qrlab.cholesky: rank-k Cholesky update and downdate (seed 004).

Every result is checked against recomputation in float64 (numpy.linalg.cholesky of
A +- V V^T formed from the rounded inputs), for the blocked method and both rotation
orderings, update and downdate, float32 and float64. Organised as SciPy's
test_decomp_update.py: by property, with shapes as parameters.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qrlab.backend import gpu_available
from qrlab.cholesky import DEFAULT_BLOCK_SIZE, cholesky_downdate, cholesky_update

# Each algorithm by name, with the keywords that select it.
METHODS = {
    "blocked": {"method": "blocked"},                     # Cholesky panels (default)
    "blocked-householder": {"method": "blocked", "panel": "householder"},
    "structured": {"method": "structured"},               # the GPU kernels' method
    "rotations-A": {"method": "rotations-A"},
    "rotations-B": {"method": "rotations-B"},
}
DTYPES = (np.float32, np.float64)
NS = (1, 2, 5, 33, 100, 257)
KS = (1, 3, 16, 64, "n+7")          # "n+7": more columns than rows
# rotations-A runs k n^2 / 2 scalar steps in Python (~0.6 us each): keep each call < ~1.5 s.
ROTATIONS_A_BUDGET = 5e6


def _k(k, n):
    return n + 7 if k == "n+7" else k


def make_problem(n, k, dtype, downdate, seed=0):
    """Return R (upper, positive diagonal), V, A = R^T R and the target A +- V V^T.

    A +- V V^T is well conditioned (eigenvalues in about [1, 7]): for a downdate A itself
    is built as B + V V^T, as in seed 004's experiments. A and the target are float64,
    formed from the rounded dtype inputs, so they are what the routine is asked to factor.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + 3, n))
    B = X.T @ X / (n + 3) + np.eye(n)
    V = rng.standard_normal((n, k)) / np.sqrt(k)
    A = B + V @ V.T if downdate else B
    R = np.linalg.cholesky(A).T.astype(dtype)
    V = V.astype(dtype)
    R64, V64 = R.astype(np.float64), V.astype(np.float64)
    A64 = R64.T @ R64
    target = A64 - V64 @ V64.T if downdate else A64 + V64 @ V64.T
    return R, V, A64, target


def check_factor(R1, A64, V, target, dtype):
    """R1 is an upper triangular factor of target with positive diagonal, to working accuracy."""
    n, k = V.shape
    assert R1.dtype == dtype and R1.shape == (n, n)
    assert np.all(np.tril(R1, -1) == 0), "nonzero below the diagonal"
    assert np.all(np.diag(R1) > 0), "diagonal not positive"
    assert np.all(np.isfinite(R1))
    eps = np.finfo(dtype).eps
    R1d = R1.astype(np.float64)
    # Error bounds grow with n + k (each entry sees about n + k transformations); the
    # constant 4 is about 8 times the worst ratio seen over the test grid.
    # Backward error: R1^T R1 reproduces target to eps * (n + k) * (||A|| + ||V||^2).
    scale = np.linalg.norm(A64) + np.linalg.norm(V.astype(np.float64)) ** 2
    assert np.linalg.norm(R1d.T @ R1d - target) <= 4 * (n + k) * eps * scale
    # Forward error: close to the recomputed factor, scaled by the condition number.
    ref = np.linalg.cholesky(target).T
    kappa = np.linalg.cond(target)
    assert np.linalg.norm(R1d - ref) <= 4 * (n + k) * eps * kappa * np.linalg.norm(ref)


def grid():
    for n in NS:
        for k in KS:
            for method in METHODS:
                if method == "rotations-A" and n * n * _k(k, n) > ROTATIONS_A_BUDGET:
                    continue  # the same arithmetic as rotations-B: see test_orderings_agree
                yield n, k, method


# ----------------------------------------------------------------------- correctness

@pytest.mark.parametrize("downdate", [False, True], ids=["update", "downdate"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n, k, method", list(grid()))
def test_against_recomputation(n, k, method, dtype, downdate):
    k = _k(k, n)
    R, V, A64, target = make_problem(n, k, dtype, downdate, seed=n * 1000 + k)
    R1 = cholesky_update(R, V, downdate=downdate, **METHODS[method])
    check_factor(R1, A64, V, target, dtype)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n, k", [(1, 1), (5, 3), (33, 16), (100, 107)])
def test_downdate_undoes_update(n, k, dtype, method):
    R, V, A64, _ = make_problem(n, k, dtype, downdate=False, seed=7)
    kw = METHODS[method]
    R2 = cholesky_downdate(cholesky_update(R, V, **kw), V, **kw)
    eps = np.finfo(dtype).eps
    kappa = np.linalg.cond(A64)
    bound = 4 * (n + k) * eps * kappa * np.linalg.norm(R)
    assert np.linalg.norm(R2.astype(np.float64) - R) <= bound


@pytest.mark.parametrize("downdate", [False, True])
@pytest.mark.parametrize("n, k", [(5, 3), (33, 64), (70, 16)])
def test_orderings_agree(n, k, downdate):
    """CholeskyModifyA and B do the same arithmetic on each entry: identical results."""
    R, V, _, _ = make_problem(n, k, np.float64, downdate, seed=3)
    R_a = cholesky_update(R, V, downdate=downdate, method="rotations-A")
    R_b = cholesky_update(R, V, downdate=downdate, method="rotations-B")
    np.testing.assert_array_equal(R_a, R_b)


@pytest.mark.parametrize("panel", ["cholesky", "householder"])
@pytest.mark.parametrize("block_size", [1, 2, 7, 32, 33, 1000])
def test_block_sizes(block_size, panel):
    R, V, A64, target = make_problem(33, 5, np.float64, True, seed=11)
    R1 = cholesky_downdate(R, V, block_size=block_size, panel=panel)
    check_factor(R1, A64, V, target, np.float64)
    np.testing.assert_allclose(R1, cholesky_downdate(R, V), rtol=0, atol=1e-13)


class CountHouseholderPanels:
    """Wraps qrlab.cholesky._householder_panel to count the column-by-column panels."""

    def __init__(self, monkeypatch):
        import qrlab.cholesky as mod
        self.calls, self._inner = 0, mod._householder_panel
        monkeypatch.setattr(mod, "_householder_panel", self)

    def __call__(self, *args):
        self.calls += 1
        return self._inner(*args)


@pytest.mark.parametrize("downdate", [False, True])
def test_cholesky_panels_run_on_well_conditioned_problems(monkeypatch, downdate):
    count = CountHouseholderPanels(monkeypatch)
    R, V, A64, target = make_problem(100, 16, np.float64, downdate, seed=8)
    check_factor(cholesky_update(R, V, downdate=downdate, block_size=16), A64, V, target,
                 np.float64)
    assert count.calls == 0


def kahan(m, theta):
    """Kahan's upper triangular matrix: condition number huge, Cholesky-friendly."""
    s, c = np.sin(theta), np.cos(theta)
    return np.diag(s ** np.arange(m)) @ (np.eye(m) - c * np.triu(np.ones((m, m)), 1))


@pytest.mark.parametrize("downdate", [False, True])
def test_ill_conditioned_panel_falls_back_to_householder(monkeypatch, downdate):
    """A diagonal block with condition 1e11: the Gram matrix of that panel is numerically
    singular, the check rejects the Cholesky panel and the Householder panel takes over."""
    rng = np.random.default_rng(12)
    n, k = 128, 16
    R = np.eye(n)
    R[:64, :64] = kahan(64, 1.2)
    R[:64, 64:] = 0.01 * rng.standard_normal((64, 64))
    # V = R^T Z with ||Z|| < 1: R^T R - V V^T = R^T (I - Z Z^T) R stays positive definite.
    V = R.T @ (0.1 * rng.standard_normal((n, k)) / np.sqrt(n))
    count = CountHouseholderPanels(monkeypatch)
    R1 = cholesky_update(R, V, downdate=downdate)
    assert count.calls >= 1
    reference = cholesky_update(R, V, downdate=downdate, panel="householder")
    target = R.T @ R + (-1 if downdate else 1) * V @ V.T
    eps = np.finfo(np.float64).eps
    for X in (R1, reference):
        assert np.linalg.norm(X.T @ X - target) <= 4 * (n + k) * eps * np.linalg.norm(target)


@pytest.mark.parametrize("method", METHODS)
def test_vector_is_one_column(method):
    R, V, _, _ = make_problem(20, 1, np.float64, False, seed=5)
    np.testing.assert_array_equal(cholesky_update(R, V[:, 0], **METHODS[method]),
                                  cholesky_update(R, V, **METHODS[method]))


@pytest.mark.parametrize("method", METHODS)
def test_row_signs_of_R_are_normalised(method):
    """A = R^T R does not see row signs: a factor with negative diagonal entries works."""
    R, V, _, _ = make_problem(20, 4, np.float64, True, seed=9)
    signs = np.where(np.arange(20) % 3 == 0, -1.0, 1.0)
    R_mixed = R * signs[:, None]
    np.testing.assert_array_equal(cholesky_downdate(R_mixed, V, **METHODS[method]),
                                  cholesky_downdate(R, V, **METHODS[method]))


@pytest.mark.parametrize("method", METHODS)
def test_strict_lower_triangle_of_R_is_ignored(method):
    R, V, _, _ = make_problem(20, 4, np.float64, False, seed=9)
    R_garbage = R + np.tril(np.full_like(R, 7.0), -1)
    np.testing.assert_array_equal(cholesky_update(R_garbage, V, **METHODS[method]),
                                  cholesky_update(R, V, **METHODS[method]))


# ----------------------------------------------------------------------- failing downdate

def failing_problem(n, k, j, dtype, seed=0):
    """R and V with R^T R - V V^T first failing at column j (0-based).

    V[:, 0] = 1.5 R[j, :]^T gives A - V V^T = R^T (I - 2.25 e_j e_j^T) R minus more: as R
    is upper triangular, R[j, :] is zero before column j, so the leading j x j block of
    A - V V^T is A's (positive definite) and the leading (j+1) x (j+1) block is
    indefinite. The other columns of V are zero above row j: they change nothing before j
    and only make block j+1 more indefinite.
    """
    rng = np.random.default_rng(seed)
    R, _, _, _ = make_problem(n, 1, dtype, False, seed=seed)
    V = np.zeros((n, k), dtype)
    V[:, 0] = 1.5 * R[j, :]
    V[j:, 1:] = 0.1 * rng.standard_normal((n - j, k - 1))
    return R, V


@pytest.mark.parametrize("overwrite", [False, True], ids=["copy", "overwrite"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n, k, j, block_size", [
    (1, 1, 0, None), (5, 3, 0, None), (5, 3, 4, None), (33, 4, 20, 8),   # 20: third panel
    (33, 40, 32, 8), (100, 16, 64, None), (100, 2, 63, None)])           # panel edges
def test_failing_downdate_names_column_and_leaves_R(n, k, j, block_size, dtype, method,
                                                     overwrite):
    R, V = failing_problem(n, k, j, dtype)
    R_saved, V_saved = R.copy(), V.copy()
    with pytest.raises(np.linalg.LinAlgError, match=rf"column {j} \(0-based\)"):
        cholesky_downdate(R, V, overwrite=overwrite, block_size=block_size, **METHODS[method])
    assert R.tobytes() == R_saved.tobytes(), "R modified by a failing downdate"
    assert V.tobytes() == V_saved.tobytes()


def test_downdate_to_singular_fails():
    """Removing exactly what A holds leaves a singular matrix: not positive definite."""
    R = np.array([[2.0, 1.0], [0.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError, match=r"column 0 \(0-based\)"):
        cholesky_downdate(R, R[0])


# ----------------------------------------------------------------------- inputs and outputs

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("downdate", [False, True])
def test_inputs_unchanged_without_overwrite(method, downdate):
    R, V, _, _ = make_problem(40, 3, np.float64, downdate, seed=2)
    R = np.asfortranarray(R)          # V.T of a Fortran V is C-contiguous: no aliasing
    V = np.asfortranarray(V)
    R_saved, V_saved = R.copy(), V.copy()
    R1 = cholesky_update(R, V, downdate=downdate, **METHODS[method])
    assert R1 is not R and not np.shares_memory(R1, R)
    assert R.tobytes() == R_saved.tobytes() and V.tobytes() == V_saved.tobytes()
    v = V[:, 0].copy()
    cholesky_update(R, v, downdate=downdate, **METHODS[method])
    assert np.array_equal(v, V_saved[:, 0])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n, block_size", [(1, None), (40, None), (40, 7), (130, None)])
def test_overwrite_reuses_R(method, n, block_size):
    R, V, _, _ = make_problem(n, 3, np.float64, True, seed=4)
    expected = cholesky_downdate(R, V, block_size=block_size, **METHODS[method])
    V_saved = V.copy()
    R_buf = R.copy()
    R1 = cholesky_downdate(R_buf, V, overwrite=True, block_size=block_size, **METHODS[method])
    assert R1 is R_buf
    np.testing.assert_array_equal(R1, expected)
    assert V.tobytes() == V_saved.tobytes()


def _bad_inputs():
    R, V, _, _ = make_problem(4, 2, np.float64, False)
    R_nan = R.copy(); R_nan[0, 2] = np.nan
    V_inf = V.copy(); V_inf[3, 1] = np.inf
    R_zero = R.copy(); R_zero[2, 2] = 0.0
    cases = [
        # (R, V, kwargs, exception, message fragment)
        (R[0], V, {}, ValueError, "square 2-D"),
        (R[:, :3], V, {}, ValueError, "square 2-D"),
        (np.zeros((0, 0)), np.zeros((0, 1)), {}, ValueError, "non-empty"),
        (R[None], V, {}, ValueError, "square 2-D"),
        (R, V[:3], {}, ValueError, "V must have shape"),
        (R, V[:, :0], {}, ValueError, "k >= 1"),
        (R, np.ones(5), {}, ValueError, "V must have shape"),
        (R, V[None], {}, ValueError, "V must have shape"),
        (R.astype(np.int64), V, {}, TypeError, "R has dtype int64"),
        (R, V.astype(np.int32), {}, TypeError, "V has dtype int32"),
        (R.astype(np.float16), V.astype(np.float16), {}, TypeError, "float16"),
        (R.astype(np.complex128), V.astype(np.complex128), {}, TypeError, "complex"),
        (R.astype(np.float32), V, {}, ValueError, "must have the same dtype"),
        (R, V.astype(np.float32), {}, ValueError, "must have the same dtype"),
        (R_nan, V, {}, ValueError, "R contains non-finite"),
        (R, V_inf, {}, ValueError, "V contains non-finite"),
        (R_zero, V, {}, np.linalg.LinAlgError, "zero on its diagonal at index 2"),
        (R, V, {"method": "givens"}, ValueError, "method must be one of"),
        (R, V, {"block_size": 0}, ValueError, "block_size"),
        (R, V, {"block_size": 2.5}, ValueError, "block_size"),
        (R, V, {"block_size": True}, ValueError, "block_size"),
        (R, V, {"panel": "qr"}, ValueError, "panel must be one of"),
    ]
    return [pytest.param(*c, id=f"{c[3].__name__}-{c[4]}-{i}") for i, c in enumerate(cases)]


@pytest.mark.parametrize("R, V, kwargs, exc, match", _bad_inputs())
@pytest.mark.parametrize("downdate", [False, True])
def test_bad_input_raises_before_any_work(R, V, kwargs, exc, match, downdate):
    R_saved, V_saved = R.copy(), V.copy()
    with pytest.raises(exc, match=match):
        cholesky_update(R, V, downdate=downdate, overwrite=True, **kwargs)
    assert R.tobytes() == R_saved.tobytes() and V.tobytes() == V_saved.tobytes()


@pytest.mark.parametrize("method", METHODS)
def test_nan_without_check_finite_is_not_silent(method):
    R, V, _, _ = make_problem(10, 2, np.float64, False)
    V[4, 1] = np.nan
    with pytest.raises(np.linalg.LinAlgError, match=r"column 4 \(0-based\)"):
        cholesky_update(R, V, check_finite=False, **METHODS[method])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("downdate", [False, True])
def test_structured_growth_test(dtype, downdate):
    """The structured method's small factorizations cancel where one diagonal entry of R
    is 1e-4 of its row (for the downdate, of the R it returns to): its growth test
    measures far more than 100 there, the structured result with no test is far less
    accurate than the blocked method's, and method='structured' returns the blocked
    method's result.  On a well-conditioned problem the growth is small and the result
    the structured method's own."""
    from qrlab.cholesky import _structured_arrays
    s, k = 300, 16
    rng = np.random.default_rng(5)
    R = np.linalg.qr(rng.standard_normal((2 * s, s)), mode="r")
    R[s // 2, s // 2] = 1e-4 * np.abs(R[s // 2]).max()
    V = rng.standard_normal((s, k))
    if downdate:
        V *= 0.3
        R = np.linalg.qr(np.vstack([R, V.T]), mode="r")
    R, V = R.astype(dtype), V.astype(dtype)
    R64, V64 = R.astype(np.float64), V.astype(np.float64)
    target = R64.T @ R64 + (-1 if downdate else 1) * V64 @ V64.T

    def error(R1):
        R1 = R1.astype(np.float64)
        return np.linalg.norm(R1.T @ R1 - target) / np.linalg.norm(target)
    R_none, growth = _structured_arrays(R, V, -1 if downdate else 1, 64, 0)
    blocked = cholesky_update(R, V, downdate=downdate)
    assert growth > 1e4
    assert error(R_none) > 30 * error(blocked)
    np.testing.assert_array_equal(cholesky_update(R, V, downdate=downdate,
                                                  method="structured"), blocked)
    R, V, A64, target = make_problem(s, k, dtype, downdate, seed=3)
    R_own, growth = _structured_arrays(R, V, -1 if downdate else 1, 64, 0)
    assert growth < 10
    R1 = cholesky_update(R, V, downdate=downdate, method="structured")
    np.testing.assert_array_equal(R1, R_own)
    check_factor(R1, A64, V, target, dtype)


def test_downdate_keyword_is_rejected_by_cholesky_downdate():
    R, V, _, _ = make_problem(3, 1, np.float64, True)
    with pytest.raises(TypeError):
        cholesky_downdate(R, V, downdate=False)


def test_lists_are_accepted():
    R1 = cholesky_update([[2.0, 1.0], [0.0, 3.0]], [1.0, 1.0])
    assert isinstance(R1, np.ndarray)
    np.testing.assert_allclose(R1.T @ R1, [[5.0, 3.0], [3.0, 11.0]])


def test_default_block_size_is_documented():
    assert DEFAULT_BLOCK_SIZE == {"numpy": 64, "cupy": 256}
    assert "min(n, 64)" in cholesky_update.__doc__
    assert "min(n, 256)" in cholesky_update.__doc__


# ----------------------------------------------------------------------- property-based

@settings(max_examples=60)
@given(n=st.integers(1, 40), k=st.integers(1, 12),
       dtype=st.sampled_from(DTYPES), method=st.sampled_from(sorted(METHODS)),
       downdate=st.booleans(), overwrite=st.booleans(),
       block_size=st.one_of(st.none(), st.integers(1, 45)),
       seed=st.integers(0, 2**32 - 1))
def test_random_problems(n, k, dtype, method, downdate, overwrite, block_size, seed):
    R, V, A64, target = make_problem(n, k, dtype, downdate, seed=seed)
    R_in, V_saved = R.copy(), V.copy()
    R1 = cholesky_update(R_in, V, downdate=downdate, overwrite=overwrite,
                         block_size=block_size, **METHODS[method])
    check_factor(R1, A64, V, target, dtype)
    assert (R1 is R_in) == overwrite
    assert V.tobytes() == V_saved.tobytes()
    if not overwrite:
        assert R_in.tobytes() == R.tobytes()


# ----------------------------------------------------------------------- GPU (CuPy)

#: the GPU's fused paths: the structured method (k <= 64), the chain of reflectors in one
#: cooperative launch (k <= 64 forced onto it), one reflect_panel launch per panel
FUSED_PATHS = ["structured", "structured-2", "chain", "per-panel"]


def use_fused_path(monkeypatch, path):
    """structured: the solve and the apply in one launch where the result is a new array;
    structured-2: always in two launches; chain: the chain of reflectors for every k."""
    from qrlab.gpu import GpuExecutor
    monkeypatch.setattr(GpuExecutor, "one_launch", path != "per-panel")
    if path == "chain":
        monkeypatch.setattr(GpuExecutor, "structured_k_max", 0)
    if path == "structured-2":
        monkeypatch.setattr(GpuExecutor, "structured_follow", False)


def structured_reports(R, W, sgn, monkeypatch, **kwargs):
    """GpuExecutor.structured_update's report for R (NumPy) and W (CuPy, k x n), into a
    new array: the same in one launch and with the solve's launch before the apply's."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    reports, default = set(), GpuExecutor.structured_follow
    for follow in (True, False):
        monkeypatch.setattr(GpuExecutor, "structured_follow", follow)
        out = cp.empty(R.shape, R.dtype)
        reports.add(GpuExecutor().structured_update(cp.asarray(R), W, sgn, out, **kwargs))
    monkeypatch.setattr(GpuExecutor, "structured_follow", default)
    assert len(reports) == 1, reports
    return reports.pop()


def assert_chain_takes_it(R, V, downdate, overwrite, chain_calls):
    """cholesky_update on the GPU goes to the chain of reflectors (``chain_calls``: the
    fixture's list; in place, R is the result), and its result has the NumPy path's
    accuracy."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    n, k = V.shape
    assert GpuExecutor().structured_passes(R.dtype, n, k)
    chain_calls.clear()                         # (only this call's)
    R_d = cp.asarray(R)
    R1_d = cholesky_update(R_d, cp.asarray(V), downdate=downdate, overwrite=overwrite)
    assert chain_calls and (R1_d is R_d) == overwrite
    R64, V64 = R.astype(np.float64), V.astype(np.float64)
    A64 = R64.T @ R64
    check_factor(cp.asnumpy(R1_d), A64, V, A64 - V64 @ V64.T if downdate else
                 A64 + V64 @ V64.T, R.dtype)
    ref = cholesky_update(R, V, downdate=downdate)
    np.testing.assert_allclose(cp.asnumpy(R1_d), ref, rtol=0,
                               atol=50 * n * np.finfo(R.dtype).eps * np.abs(ref).max())


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU")
class TestCuPy:
    """The same checks on CuPy arrays, compared with the NumPy path."""

    @pytest.mark.parametrize("downdate", [False, True])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k, method", [
        (1, 1, "blocked"), (33, 3, "blocked"), (257, 16, "blocked"), (100, 107, "blocked"),
        (130, 64, "blocked"), (70, 5, "blocked-householder"), (300, 16, "structured"),
        (130, 70, "structured"), (12, 3, "rotations-A"),
        (20, 5, "rotations-B")])
    def test_matches_numpy(self, n, k, method, dtype, downdate):
        import cupy as cp
        R, V, A64, target = make_problem(n, k, dtype, downdate, seed=n + k)
        R_d, V_d = cp.asarray(R), cp.asarray(V)
        R1_d = cholesky_update(R_d, V_d, downdate=downdate, **METHODS[method])
        assert isinstance(R1_d, cp.ndarray)
        R1 = cp.asnumpy(R1_d)
        check_factor(R1, A64, V, target, dtype)
        np.testing.assert_allclose(R1, cholesky_update(R, V, downdate=downdate,
                                                       **METHODS[method]),
                                   rtol=0, atol=50 * n * np.finfo(dtype).eps * np.abs(R1).max())
        assert cp.asnumpy(R_d).tobytes() == R.tobytes()
        assert cp.asnumpy(V_d).tobytes() == V.tobytes()

    @pytest.mark.parametrize("overwrite", [False, True])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    def test_failing_downdate_of_rank_one(self, dtype, overwrite):
        """A rank-1 downdate failing far down a large R (the structured path, whose loop and
        hand-off are its own for k = 1) names its first failing column and leaves R as
        it was."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        n, j = 1500, 900
        assert GpuExecutor().structured_passes(dtype, n, 1) == 1
        R, V = failing_problem(n, 1, j, dtype)
        R_d = cp.asarray(R)
        with pytest.raises(np.linalg.LinAlgError, match=rf"column {j} \(0-based\)"):
            cholesky_downdate(R_d, cp.asarray(V), overwrite=overwrite)
        assert cp.asnumpy(R_d).tobytes() == R.tobytes()

    @pytest.mark.parametrize("overwrite", [False, True])
    @pytest.mark.parametrize("method", ["blocked", "blocked-householder", "rotations-B"])
    def test_failing_downdate(self, method, overwrite):
        import cupy as cp
        R, V = failing_problem(33, 4, 20, np.float64)
        R_d = cp.asarray(R)
        with pytest.raises(np.linalg.LinAlgError, match=r"column 20 \(0-based\)"):
            cholesky_downdate(R_d, cp.asarray(V), overwrite=overwrite, block_size=8,
                              **METHODS[method])
        assert cp.asnumpy(R_d).tobytes() == R.tobytes()

    @pytest.mark.parametrize("path", FUSED_PATHS)
    @pytest.mark.parametrize("overwrite", [False, True])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k, j", [(70, 4, 45), (70, 4, 0), (64, 3, 63), (40, 300, 32),
                                         (300, 16, 299), (300, 16, 131), (200, 700, 150),
                                         (700, 64, 640), (700, 33, 64), (300, 1, 131),
                                         (70, 1, 0), (128, 1, 127)])
    def test_failing_downdate_fused(self, n, k, j, dtype, overwrite, path, monkeypatch):
        """The fused GPU paths (block_size=None) name the same column and leave R alone;
        k = 700 runs as several launches, the failing column of V in the last; k = 1 is
        the structured path's closed-form factor of each block."""
        import cupy as cp

        use_fused_path(monkeypatch, path)
        R, V = failing_problem(n, k, j, dtype)
        if k > 512:
            V = np.ascontiguousarray(V[:, ::-1])    # the same V V^T
        R_d = cp.asarray(R)
        with pytest.raises(np.linalg.LinAlgError, match=rf"column {j} \(0-based\)"):
            cholesky_downdate(R_d, cp.asarray(V), overwrite=overwrite)
        assert cp.asnumpy(R_d).tobytes() == R.tobytes()

    @pytest.mark.parametrize("path", FUSED_PATHS)
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k", [(300, 1), (300, 64), (97, 256), (40, 2500), (1, 1),
                                      (32, 5), (33, 7), (1000, 16), (2100, 33), (64, 65),
                                      (65, 2), (129, 64), (4100, 3), (1500, 10)])
    def test_fused_panels(self, n, k, dtype, path, monkeypatch):
        """The fused paths (the structured method for k <= 64; one cooperative launch;
        one launch per panel, of every width it picks: 32, 16, 8) against the NumPy one."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        use_fused_path(monkeypatch, path)
        assert GpuExecutor().fuses_triangle(dtype, k)
        for downdate in (False, True):
            R, V, A64, target = make_problem(n, k, dtype, downdate, seed=k)
            R1 = cp.asnumpy(cholesky_update(cp.asarray(R), cp.asarray(V), downdate=downdate))
            check_factor(R1, A64, V, target, dtype)
            ref = cholesky_update(R, V, downdate=downdate)
            np.testing.assert_allclose(R1, ref, rtol=0,
                                       atol=50 * n * np.finfo(dtype).eps * np.abs(ref).max())

    @pytest.mark.parametrize("chunk", [4, 7, 16, 24])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k, j", [(100, 9, 70), (257, 40, 200), (64, 13, 0),
                                         (33, 48, 32)])
    def test_chain_in_chunks(self, n, k, j, chunk, dtype, monkeypatch):
        """The one launch with V's columns in pipelined chunks (odd and even counts of
        them, a short last one; chunks of 24 rows factored by one warp in float, two in
        double) against the NumPy path, update and downdate, and a
        failing downdate naming the same column (its failing column of V in the last
        chunk) and leaving R alone."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        use_fused_path(monkeypatch, "chain")
        monkeypatch.setattr(GpuExecutor, "triangle_chunk", chunk)
        for downdate in (False, True):
            R, V, A64, target = make_problem(n, k, dtype, downdate, seed=n + k + chunk)
            R1 = cp.asnumpy(cholesky_update(cp.asarray(R), cp.asarray(V), downdate=downdate))
            check_factor(R1, A64, V, target, dtype)
            ref = cholesky_update(R, V, downdate=downdate)
            np.testing.assert_allclose(R1, ref, rtol=0,
                                       atol=50 * n * np.finfo(dtype).eps * np.abs(ref).max())
        R, V = failing_problem(n, k, j, dtype)
        V = np.ascontiguousarray(V[:, ::-1])        # the same V V^T
        R_d = cp.asarray(R)
        with pytest.raises(np.linalg.LinAlgError, match=rf"column {j} \(0-based\)"):
            cholesky_downdate(R_d, cp.asarray(V))
        assert cp.asnumpy(R_d).tobytes() == R.tobytes()

    def test_overwrite(self):
        import cupy as cp
        R, V, _, _ = make_problem(70, 5, np.float32, True, seed=1)
        R_d = cp.asarray(R)
        R1_d = cholesky_downdate(R_d, cp.asarray(V), overwrite=True, block_size=16)
        assert R1_d is R_d
        np.testing.assert_allclose(cp.asnumpy(R1_d), cholesky_downdate(R, V, block_size=16),
                                   rtol=0, atol=1e-4)

    def test_bad_inputs(self):
        import cupy as cp
        R, V, _, _ = make_problem(4, 2, np.float64, False)
        with pytest.raises(TypeError, match="mix of NumPy and CuPy"):
            cholesky_update(cp.asarray(R), V)
        with pytest.raises(ValueError, match="same dtype"):
            cholesky_update(cp.asarray(R), cp.asarray(V, dtype=cp.float32))
        V_nan = cp.asarray(V)
        V_nan[1, 1] = cp.nan
        with pytest.raises(ValueError, match="non-finite"):
            cholesky_update(cp.asarray(R), V_nan)

    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("downdate", [False, True])
    @pytest.mark.parametrize("k", [1, 7, 64])
    def test_structured_reads_r_as_it_is(self, k, dtype, downdate):
        """The structured path reads R's upper triangle only, rows of either sign, in C or
        Fortran order, and V with any strides; results agree with the NumPy path."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        n = 300
        R, V, A64, target = make_problem(n, k, dtype, downdate, seed=3)
        signs = np.where(np.arange(n) % 3 == 0, -1, 1).astype(dtype)
        Rs = R * signs[:, None] + np.tril(np.full((n, n), 7, dtype), -1)   # garbage below
        assert GpuExecutor().structured_passes(dtype, n, k) == 1
        for R_d in (cp.asarray(Rs), cp.asfortranarray(cp.asarray(Rs))):
            V_d = cp.asarray(np.repeat(V, 2, axis=1))[:, ::2]               # strided
            R1 = cp.asnumpy(cholesky_update(R_d, V_d, downdate=downdate))
            check_factor(R1, A64, V, target, dtype)
            tol = 50 * n * np.finfo(dtype).eps * np.abs(R1).max()
            np.testing.assert_allclose(R1, cholesky_update(R, V, downdate=downdate),
                                       rtol=0, atol=tol)
            np.testing.assert_array_equal(cp.asnumpy(R_d), Rs)

    @pytest.mark.parametrize("follow", [True, False])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n", [301, 2100])
    def test_structured_rank1_tiles_by_copy_or_by_loads(self, n, dtype, follow, monkeypatch):
        """For k = 1 on sm_90 the solve takes R's tiles by bulk tensor copies where R's
        address and row stride are 16-byte multiples (R's tensor map), and by its own loads
        otherwise: a view of a wider array whose rows are (or are not) 16 bytes apart, or
        that starts a value in.  Both agree with the NumPy path, in place and not, update
        and downdate, with one launch or two."""
        import cupy as cp

        from qrlab import gpu
        monkeypatch.setattr(gpu.GpuExecutor, "structured_follow", follow)
        item = np.dtype(dtype).itemsize
        per = 16 // item                          # values in 16 bytes
        even = n + per + (-n) % per               # row lengths 16-byte multiples, and not
        odd = even + 1
        for downdate in (False, True):
            R, V, A64, target = make_problem(n, 1, dtype, downdate, seed=n + downdate)
            R1 = cholesky_update(R, V, downdate=downdate)
            tol = 50 * n * np.finfo(dtype).eps * np.abs(R1).max()
            for row, first, copies in ((even, 0, True), (odd, 0, False), (even, 1, False)):
                wide = cp.full((n + first, row), cp.nan, dtype=dtype)
                R_d = wide[first:, first:first + n]
                R_d[...] = cp.asarray(R)
                rows = R_d.strides[0]
                made = gpu._tensor_map(R_d.data.ptr, n, rows, item)
                assert (made is not gpu._NO_TENSOR_MAP) == (copies and gpu._has_tma())
                for overwrite in (False, True):
                    out = cholesky_update(R_d, cp.asarray(V), downdate=downdate,
                                          overwrite=overwrite)
                    got = cp.asnumpy(out)
                    check_factor(got, A64, V, target, dtype)
                    np.testing.assert_allclose(got, R1, rtol=0, atol=tol)
                    if overwrite:
                        assert out is R_d
                        R_d[...] = cp.asarray(R)
                    else:
                        np.testing.assert_array_equal(cp.asnumpy(R_d), R)

    @pytest.mark.parametrize("follow", [True, False])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k", [(130, 1), (301, 7), (2100, 1), (700, 16), (2100, 64)])
    def test_structured_writes_every_value(self, n, k, dtype, follow, monkeypatch):
        """Into an array filled with nan, the structured kernels write every value: the
        factor above the diagonal and zeros below it (written by the solve's blocks when
        the apply follows it in one launch, by the apply's jobs otherwise)."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        monkeypatch.setattr(GpuExecutor, "structured_follow", follow)
        R, V, A64, target = make_problem(n, k, dtype, False, seed=n)
        out = cp.full((n, n), cp.nan, dtype=dtype)
        report = GpuExecutor().structured_update(
            cp.ascontiguousarray(cp.asarray(R)), cp.asarray(V).T, 1, out)
        assert report == (-1, -1, 0, False)
        check_factor(cp.asnumpy(out), A64, V, target, dtype)

    @pytest.mark.parametrize("overwrite", [False, True])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k, at", [(700, 1, 0), (700, 16, 350), (2100, 64, 2098),
                                          (2100, 1, 1000), (700, 150, 640)])
    def test_structured_small_pivot_goes_to_the_chain(self, n, k, at, dtype, overwrite,
                                                      monkeypatch, chain_calls):
        """A diagonal entry of R far below the rest of its row (its column nearly in the
        span of those before it) makes the structured update cancel (error about
        eps / ratio^2); its kernels' growth test reports it, and cholesky_update then
        takes the chain of reflectors: the kernels report R only with the small entry,
        the result has the NumPy path's accuracy, and in place R is written once, by the
        chain."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        R, V, _, _ = make_problem(n, k, dtype, False, seed=at)
        R = np.ascontiguousarray(R)
        W = cp.asarray(V[:, :64]).T
        assert structured_reports(R, W, 1, monkeypatch) == (-1, -1, 0, False)
        ratio = 1e-6 if dtype == np.float64 else 1e-3
        R[at, at] = ratio * np.abs(R[at, at + 1:]).max() * np.sign(R[at, at])
        assert structured_reports(R, W, 1, monkeypatch) == (-1, -1, 0, True)
        # (the test alone says it: with none the kernels take R)
        assert structured_reports(R, W, 1, monkeypatch, growth_max=0) == (-1, -1, 0, False)
        assert_chain_takes_it(R, V, False, overwrite, chain_calls)

    @pytest.mark.parametrize("case, k, dtype", [
        ("every pivot large", 4, np.float32), ("every pivot large", 16, np.float64),
        ("V far larger than R", 64, np.float32), ("V far larger than R", 64, np.float64),
        ("downdate near singular", 16, np.float64)])
    def test_structured_growth_test_sees_more_than_pivots(self, case, k, dtype, monkeypatch,
                                                          chain_calls):
        """Updates that cancel with no diagonal entry of R small beside its row, which a
        test of R's pivots passes: R = I - 0.02 triu(1) (nearly singular: P grows as
        1.02^i), a V a thousand times R's scale, and a downdate to an A - V V^T with
        one small pivot (A itself well conditioned; float64: in float32 this A - V V^T
        is near the chain's limit too).  The growth test reports each (none without it),
        and cholesky_update's result, by the chain, has the NumPy path's accuracy."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        n = 700
        rng = np.random.default_rng(k)
        downdate = case.startswith("downdate")
        if case == "every pivot large":
            R = np.eye(n) - 0.02 * np.triu(np.ones((n, n)), 1)
            V = rng.standard_normal((n, k))
        elif case == "V far larger than R":
            R, V, _, _ = make_problem(n, k, np.float64, False, seed=k)
            V = 1e3 * V
        else:
            R0, V, _, _ = make_problem(n, k, np.float64, False, seed=k)
            R0[n // 2, n // 2] = 0.03 * np.abs(R0[n // 2, n // 2 + 1:]).max()
            R = np.linalg.qr(np.vstack([R0, V.T]), mode="r")
            R *= np.sign(np.diag(R))[:, None]
        R, V = np.ascontiguousarray(R, dtype=dtype), V.astype(dtype)
        assert min(np.abs(np.diag(R)) / np.abs(R).max(axis=1)) > 1e-2
        sgn = -1 if downdate else 1
        W = cp.asarray(V).T
        # The first column that broke down is no part of the test: in float32 the first
        # case's S (P nearly of rank one) is singular to rounding, and whether its factor
        # breaks down is rounding's choice; cholesky_update takes the chain on either.
        assert structured_reports(R, W, sgn, monkeypatch)[1:] == (-1, 0, True)
        fail, *rest = structured_reports(R, W, sgn, monkeypatch, growth_max=0)
        assert rest == [-1, 0, False]
        assert_chain_takes_it(R, V, downdate, False, chain_calls)
        if fail >= 0 and not downdate:
            # with no growth test, an update that broke down goes to the chain too
            monkeypatch.setattr(GpuExecutor, "growth_max", 0)
            assert_chain_takes_it(R, V, downdate, False, chain_calls)

    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k", [(65, 1), (3000, 1), (700, 16), (1100, 64), (4100, 3)])
    def test_structured_one_launch_is_two(self, n, k, dtype, monkeypatch):
        """The apply following the solve in one launch (a new array) gives, bit for bit,
        what the apply after the whole solve (in place) gives: the flags hand over every
        value it needs; repeated, since a missed wait would show only sometimes."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        R, V, _, _ = make_problem(n, k, dtype, True, seed=6)
        R_d, V_d = cp.asarray(R), cp.asarray(V)
        assert GpuExecutor().structured_passes(dtype, n, k) == 1
        for _ in range(5):
            in_place = R_d.copy()
            cholesky_update(in_place, V_d, downdate=True, overwrite=True)
            monkeypatch.setattr(GpuExecutor, "structured_follow", True)
            one = cholesky_update(R_d, V_d, downdate=True)
            cp.testing.assert_array_equal(one, in_place)
            monkeypatch.setattr(GpuExecutor, "structured_follow", False)
            two = cholesky_update(R_d, V_d, downdate=True)
            cp.testing.assert_array_equal(two, in_place)

    @pytest.mark.parametrize("queued", [True, False])
    @pytest.mark.parametrize("overwrite", [False, True])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k, passes", [(64, 65, 2), (300, 128, 2), (1800, 150, 3),
                                              (300, 256, 4), (130, 520, 9), (2100, 129, 3),
                                              (700, 208, 4)])
    def test_structured_in_passes(self, n, k, passes, dtype, overwrite, queued,
                                  monkeypatch):
        """For k > 64 the structured method runs in passes of 64 columns of V (the last
        one shorter: 1, 8, 16 or 22 columns here), each updating the one before's
        result, queued back to back or each launched once the one before has reported:
        against the NumPy path, update and downdate, R in C or Fortran order, V strided;
        in place or not.  (Some take more passes than they would by default at their
        size.)"""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        monkeypatch.setattr(GpuExecutor, "structured_queued", queued)
        monkeypatch.setattr(GpuExecutor, "structured_rows_per_pass", {4: 1, 8: 1})
        assert GpuExecutor().structured_passes(dtype, n, k) == passes
        for downdate in (False, True):
            R, V, A64, target = make_problem(n, k, dtype, downdate, seed=k)
            for R_d in (cp.asarray(R), cp.asfortranarray(cp.asarray(R))):
                V_d = cp.asarray(np.repeat(V, 2, axis=1))[:, ::2]            # strided
                R1_d = cholesky_update(R_d, V_d, downdate=downdate, overwrite=overwrite)
                assert (R1_d is R_d) == overwrite
                R1 = cp.asnumpy(R1_d)
                check_factor(R1, A64, V, target, dtype)
                ref = cholesky_update(R, V, downdate=downdate)
                np.testing.assert_allclose(
                    R1, ref, rtol=0, atol=50 * n * np.finfo(dtype).eps * np.abs(ref).max())
                if not overwrite:
                    np.testing.assert_array_equal(cp.asnumpy(R_d), R)

    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k", [(300, 256), (2100, 129), (700, 150)])
    def test_structured_passes_write_every_value(self, n, k, dtype, monkeypatch):
        """Passes into two arrays filled with nan: only the last pass writes the zeros
        below the diagonal, and no pass reads that triangle of the array it reads, so the
        result has every value (the factor above the diagonal, zeros below)."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        monkeypatch.setattr(GpuExecutor, "structured_rows_per_pass", {4: 1, 8: 1})
        R, V, A64, target = make_problem(n, k, dtype, False, seed=n + k)
        out = cp.full((n, n), cp.nan, dtype=dtype)
        spare = cp.full((n, n), cp.nan, dtype=dtype)
        reports = GpuExecutor().structured_update_passes(
            cp.ascontiguousarray(cp.asarray(R)), cp.asarray(V).T, 1, out, spare)
        assert len(reports) == -(-k // 64)
        assert all(report == (-1, -1, 0, False) for report in reports)
        assert bool(cp.isnan(spare).any())       # (an earlier pass left its triangle)
        check_factor(cp.asnumpy(out), A64, V, target, dtype)

    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("n, k, passes", [(1300, 200, 4), (2100, 129, 3), (4000, 256, 4)])
    def test_structured_queued_passes_are_the_passes(self, n, k, passes, dtype, monkeypatch):
        """Passes queued back to back, overlapped (each launch after the first starting
        while the one before runs, its blocks waiting for that pass's tiles:
        ``structured_overlap``) or not, give the same factor, bit for bit, as passes
        launched one by one: each pass reads a tile of the array the one before wrote only
        once it is done, and writes a tile of the array it shares with the pass before
        that only once the pass in between has read it (four passes: each of the two
        arrays written twice; the last pass of k = 129 a kernel of its own, k = 1).
        Overlapped three times, so that a race has chances to show."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        monkeypatch.setattr(GpuExecutor, "structured_rows_per_pass", {4: 1, 8: 1})
        assert GpuExecutor().structured_passes(dtype, n, k) == passes
        R, V, A64, target = make_problem(n, k, dtype, False, seed=11)
        R_d, V_d = cp.asarray(R), cp.asarray(V)
        overlapped = [cholesky_update(R_d, V_d) for _ in range(3)]
        monkeypatch.setattr(GpuExecutor, "structured_overlap", False)
        queued = cholesky_update(R_d, V_d)
        monkeypatch.setattr(GpuExecutor, "structured_queued", False)
        one_by_one = cholesky_update(R_d, V_d)
        cp.testing.assert_array_equal(queued, one_by_one)
        for R1 in overlapped:
            cp.testing.assert_array_equal(R1, one_by_one)
        check_factor(cp.asnumpy(one_by_one), A64, V, target, dtype)

    @pytest.mark.parametrize("queued", [True, False])
    @pytest.mark.parametrize("overwrite", [False, True])
    @pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("case", ["later in a pass", "in a later pass", "V not finite"])
    def test_structured_passes_fail_like_one(self, case, dtype, overwrite, queued,
                                             monkeypatch):
        """A downdate in passes that fails names the first failing column of A - V V^T,
        which a pass alone may not see: with P = R^{-T} V, A - V V^T = R^T (I - P P^T) R
        fails first where I - P P^T does.  P's column 0 = 1.1 e_150 makes the first pass
        fail at column 150, column 100 = 1.1 e_40 the whole downdate at 40; 0.9 e_40 in
        both makes only the second pass fail.  A value of V that is not finite, in the
        second pass, raises as in one pass.  R is left as it was."""
        import cupy as cp

        from qrlab.gpu import GpuExecutor
        monkeypatch.setattr(GpuExecutor, "structured_queued", queued)
        n, k = 300, 128
        assert GpuExecutor().structured_passes(dtype, n, k) == 2
        R, _, _, _ = make_problem(n, 1, dtype, False, seed=9)
        P = np.zeros((n, k))
        if case == "later in a pass":
            P[150, 0], P[40, 100] = 1.1, 1.1
        else:
            P[40, 0], P[40, 100] = 0.9, 0.9
        V = (R.astype(np.float64).T @ P).astype(dtype)
        exc, match = np.linalg.LinAlgError, r"column 40 \(0-based\)"
        if case == "V not finite":
            V[:, 0] = 0
            V[7, 90] = np.nan
            exc, match = ValueError, "V contains non-finite"
        R_d = cp.asarray(R)
        with pytest.raises(exc, match=match):
            cholesky_downdate(R_d, cp.asarray(V), overwrite=overwrite)
        np.testing.assert_array_equal(cp.asnumpy(R_d), R)

    @pytest.mark.parametrize("overwrite", [False, True])
    @pytest.mark.parametrize("where", ["R", "V", "zero"])
    @pytest.mark.parametrize("k", [5, 1])
    def test_structured_checks_inside_the_kernels(self, k, where, overwrite):
        """Non-finite values and a zero on the diagonal, found by the kernels themselves:
        the same errors as the other paths, R untouched; with check_finite=False a nan is
        not silent.  (The nan in R lies in a tile that block 6 reads in its loop over
        the blocks before it, which for k <= 16 keeps its sums in registers.)"""
        import cupy as cp
        n = 600
        R, V, _, _ = make_problem(n, k, np.float64, False, seed=4)
        if where == "R":
            R[50, 400] = np.nan
        elif where == "V":
            V[599, k - 1] = np.inf
        else:
            R[330, 330] = 0
        R_d, V_d = cp.asarray(R), cp.asarray(V)
        exc, match = ((np.linalg.LinAlgError, "zero on its diagonal at index 330")
                      if where == "zero" else (ValueError, f"{where} contains non-finite"))
        with pytest.raises(exc, match=match):
            cholesky_update(R_d, V_d, overwrite=overwrite)
        np.testing.assert_array_equal(cp.asnumpy(R_d), R)
        if where != "zero":
            try:
                R1 = cp.asnumpy(cholesky_update(R_d, V_d, check_finite=False))
            except np.linalg.LinAlgError:
                return
            assert not np.all(np.isfinite(R1))

