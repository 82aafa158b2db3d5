"""qrlab.backend: which array module qrlab uses, and the errors when it cannot."""
import numpy as np
import pytest

from qrlab import backend


@pytest.fixture(autouse=True)
def fresh_detection():
    """Forget the cached CuPy probe before and after each test, so none sees another's."""
    backend._cupy_or_reason.cache_clear()
    yield
    backend._cupy_or_reason.cache_clear()


def _cupy_with_gpu():
    """CuPy, or skip the test: the mixed-device checks need real CuPy arrays."""
    cp = pytest.importorskip("cupy")
    if not backend.gpu_available():
        pytest.skip("CuPy imports but no CUDA device is visible")
    return cp


# --- default_module and QRLAB_BACKEND ---------------------------------------------------

@pytest.mark.parametrize("value", ["numpy", "NumPy", " numpy "])
def test_forced_numpy(monkeypatch, value):
    monkeypatch.setenv("QRLAB_BACKEND", value)
    assert backend.default_module() is np


def test_auto_without_gpu_is_numpy(monkeypatch):
    monkeypatch.setenv("QRLAB_BACKEND", "auto")
    if backend.gpu_available():
        pytest.skip("a GPU is present, so auto picks CuPy")
    assert backend.default_module() is np


def test_unset_picks_according_to_gpu(monkeypatch):
    monkeypatch.delenv("QRLAB_BACKEND", raising=False)
    xp = backend.default_module()
    assert (xp is not np) == backend.gpu_available()


def test_forced_cupy_without_gpu_raises(monkeypatch):
    if backend.gpu_available():
        pytest.skip("a GPU is present, so forcing CuPy works")
    monkeypatch.setenv("QRLAB_BACKEND", "cupy")
    with pytest.raises(backend.BackendError, match="QRLAB_BACKEND=cupy") as info:
        backend.default_module()
    # The message must say how to get out: install the gpu extra or force NumPy.
    assert "QRLAB_BACKEND=numpy" in str(info.value)


def test_forced_cupy_when_import_fails(monkeypatch):
    # Simulate a machine without CuPy even where it is installed: None in sys.modules
    # makes "import cupy" raise ImportError.
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)
    monkeypatch.setenv("QRLAB_BACKEND", "cupy")
    with pytest.raises(backend.BackendError, match="does not import"):
        backend.default_module()
    assert not backend.gpu_available()


@pytest.mark.parametrize("value", ["torch", "gpu", "cuda"])
def test_unknown_backend_raises(monkeypatch, value):
    monkeypatch.setenv("QRLAB_BACKEND", value)
    with pytest.raises(backend.BackendError, match=value):
        backend.default_module()


def test_backend_error_is_a_runtime_error():
    assert issubclass(backend.BackendError, RuntimeError)


# --- array_module -----------------------------------------------------------------------

def test_numpy_arrays_give_numpy():
    a = np.zeros((3, 2))
    assert backend.array_module(a) is np
    assert backend.array_module(a, np.ones(2, dtype=np.float32)) is np


def test_lists_and_scalars_count_as_numpy():
    assert backend.array_module([1.0, 2.0], 3.0) is np


def test_none_is_skipped():
    assert backend.array_module(None, np.eye(2), None) is np
    assert backend.array_module(None) is np
    assert backend.array_module() is np


@pytest.mark.gpu
def test_cupy_arrays_give_cupy():
    cp = _cupy_with_gpu()
    assert backend.array_module(cp.eye(2), None) is cp


@pytest.mark.gpu
def test_mixing_numpy_and_cupy_raises():
    cp = _cupy_with_gpu()
    with pytest.raises(TypeError, match="mix of NumPy and CuPy"):
        backend.array_module(np.eye(2), cp.eye(2))


def test_mixed_check_works_without_cupy():
    # is_cupy looks at the type's module name only, so a stand-in class exercises the check
    # on machines without a GPU too.
    FakeCupyArray = type("ndarray", (), {"__module__": "cupy._core.core"})
    assert backend.is_cupy(FakeCupyArray())
    assert not backend.is_cupy(np.eye(2))
    with pytest.raises(TypeError, match="mix of NumPy and CuPy"):
        backend.array_module(np.eye(2), FakeCupyArray())


# --- to_numpy and describe --------------------------------------------------------------

def test_to_numpy_of_numpy_and_lists():
    a = np.arange(4.0)
    assert backend.to_numpy(a) is a
    assert isinstance(backend.to_numpy([1, 2]), np.ndarray)


@pytest.mark.gpu
def test_to_numpy_of_cupy():
    cp = _cupy_with_gpu()
    out = backend.to_numpy(cp.arange(3.0))
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])


@pytest.mark.parametrize("value", [None, "numpy", "cupy", "nonsense"])
def test_describe_is_one_line(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("QRLAB_BACKEND", raising=False)
    else:
        monkeypatch.setenv("QRLAB_BACKEND", value)
    text = backend.describe()   # never raises, even for a bad setting
    assert isinstance(text, str) and text and "\n" not in text


@pytest.mark.parametrize("value", ["numpy", " NumPy "])
def test_describe_names_forced_numpy(monkeypatch, value):
    monkeypatch.setenv("QRLAB_BACKEND", value)
    assert backend.describe().startswith("NumPy")
    assert "forced by QRLAB_BACKEND" in backend.describe()


# --- solve_triangular ---------------------------------------------------------------------

def test_solve_triangular_numpy_and_singular():
    rng = np.random.default_rng(0)
    R = np.triu(rng.standard_normal((6, 6))) + 4 * np.eye(6)
    b = rng.standard_normal(6)
    np.testing.assert_allclose(R @ backend.solve_triangular(R, b), b, atol=1e-12)
    R[3, 3] = 0
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        backend.solve_triangular(R, b)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [128, 200, 1000, 3001])
@pytest.mark.parametrize("shape", ["vector", "column", "view"])
def test_cupy_back_solve_matches_numpy(dtype, n, shape):
    """One right-hand side on CuPy goes to qrlab's back_solve kernel: the same solution
    as SciPy's substitution (float64 reference), on R with rows of both signs and a
    lower triangle full of garbage (never read), for a vector, an (n, 1) column, and
    views with a leading dimension past n (as the least-squares R carries Q^T b)."""
    cp = _cupy_with_gpu()
    import scipy.linalg as sl
    rng = np.random.default_rng(n)
    M = rng.standard_normal((n, n + 1))
    M[:, :n] += np.diag(rng.choice([-1, 1], n) * (2 + np.sqrt(n)))
    R = np.triu(M[:, :n])
    b = M[:, n]
    x_ref = sl.solve_triangular(R, b, lower=False)
    Md = cp.asarray(M, dtype=dtype)
    if shape == "view":                          # rows of n + 1, the lower triangle dense
        Rd, bd = Md[:, :n], Md[:, n]
    else:
        Rd = cp.asarray(R + np.tril(rng.standard_normal((n, n)), -1), dtype=dtype)
        bd = cp.asarray(b, dtype=dtype)
        bd = bd[:, None] if shape == "column" else bd
    x = backend.solve_triangular(Rd, bd)
    assert x.shape == bd.shape and x.dtype == dtype and isinstance(x, cp.ndarray)
    err = np.abs(cp.asnumpy(x).reshape(-1) - x_ref).max() / np.abs(x_ref).max()
    assert err < 50 * np.finfo(dtype).eps * np.sqrt(n), err
    # the same kernel called directly, and cuBLAS's answer beside it
    from cupyx.scipy.linalg import solve_triangular as trsm
    from qrlab.gpu import back_solve
    x2 = back_solve(Rd, bd.reshape(-1))
    x3 = trsm(cp.triu(Rd), bd.reshape(-1), lower=False)
    np.testing.assert_allclose(cp.asnumpy(x2), cp.asnumpy(x3),
                               atol=100 * np.finfo(dtype).eps * float(cp.abs(x3).max()))


@pytest.mark.gpu
def test_cupy_back_solve_rejects_and_small_cases():
    cp = _cupy_with_gpu()
    from qrlab.gpu import back_solve
    R = cp.triu(cp.ones((200, 200))) + cp.eye(200)
    with pytest.raises(ValueError, match="contiguous rows"):
        back_solve(cp.asfortranarray(R), cp.ones(200))
    with pytest.raises(ValueError, match="dtype"):
        back_solve(R, cp.ones(200, dtype=cp.float32))
    assert back_solve(R[:0, :0], cp.ones(0)).shape == (0,)
    # below 128 rows, and for several right-hand sides, cuBLAS solves
    x = backend.solve_triangular(R[:50, :50], cp.ones((50, 3)))
    np.testing.assert_allclose(cp.asnumpy(R[:50, :50] @ x), np.ones((50, 3)), atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):
        backend.solve_triangular(R - cp.diag(cp.diag(R)), cp.ones(200))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_at", [0, 63, 64, 199, 299])
def test_cupy_back_solve_flags_a_zero_pivot(dtype, zero_at):
    """The solve kernel makes solve_triangular's test of the diagonal itself: one zero
    pivot in any block (the first, the last, either side of a block's edge) raises
    LinAlgError, for a right-hand side with a stride (a column of a row-major [R, b]); a
    nonzero diagonal with check=False still solves."""
    cp = _cupy_with_gpu()
    n = 300
    rng = np.random.default_rng(zero_at)
    M = np.triu(rng.standard_normal((n, n + 1))) + np.eye(n, n + 1) * (2 + np.sqrt(n))
    M[:, n] = rng.standard_normal(n)
    Md = cp.asarray(M, dtype=dtype)
    Rd, bd = Md[:, :n], Md[:, n]                      # bd: a stride of n + 1 values
    import scipy.linalg as sl
    x_ref = sl.solve_triangular(M[:, :n], M[:, n], lower=False)
    x = backend.solve_triangular(Rd, bd)
    err = np.abs(cp.asnumpy(x) - x_ref).max() / np.abs(x_ref).max()
    assert err < 50 * np.finfo(dtype).eps * np.sqrt(n), err
    Md[zero_at, zero_at] = 0
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        backend.solve_triangular(Rd, bd)
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        backend.solve_triangular(Rd, bd[:, None])
    from qrlab.gpu import back_solve
    x, singular = back_solve(Rd, bd, check=True)
    assert int(singular) == 1 and x.shape == (n,)
    Md[zero_at, zero_at] = 1
    assert int(back_solve(Rd, bd, check=True)[1]) == 0


# --- working_copy ----------------------------------------------------------------------
def _layouts(M):
    """M as the layouts an update receives: row-major, column-major (cupy.linalg.qr's Q),
    and a strided view with rows and columns both apart."""
    xp = backend.array_module(M)
    wide = xp.zeros((2 * M.shape[0], 3 * M.shape[1]), dtype=M.dtype)
    wide[::2, ::3] = M
    return {"C": xp.ascontiguousarray(M), "F": xp.asfortranarray(M), "view": wide[::2, ::3]}


def _reference_copy(M, first, upper, scale):
    k, p = first
    order = list(range(k, k + p)) + list(range(k)) + list(range(k + p, M.shape[0]))
    out = M[order] * (1 if scale is None else scale[:, None])
    return np.triu(out) if upper else out


@pytest.mark.parametrize("layout", ["C", "F", "view"])
@pytest.mark.parametrize("first", [(0, 0), (0, 3), (4, 2), (7, 3)])
def test_working_copy_numpy(layout, first):
    """Rows k .. k + p first, then the rest in order; a new row-major array; the input
    untouched; with upper, zeros below the diagonal; with scale, rows scaled."""
    rng = np.random.default_rng(1)
    M = rng.standard_normal((10, 6))
    A = _layouts(M)[layout]
    before = A.copy()
    out = backend.working_copy(A, first=first)
    assert out.flags.c_contiguous and not np.shares_memory(out, A)
    np.testing.assert_array_equal(out, _reference_copy(M, first, False, None))
    s = rng.choice([-1.0, 2.0], 10)
    np.testing.assert_array_equal(backend.working_copy(A, first, upper=True, scale=s),
                                  _reference_copy(M, first, True, s))
    np.testing.assert_array_equal(A, before)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(1, 1), (31, 33), (64, 64), (200, 97), (97, 300)])
@pytest.mark.parametrize("layout", ["C", "F", "view"])
def test_cupy_working_copy_matches_numpy(dtype, shape, layout):
    """The copy kernel against the NumPy reference: every layout, every dtype (complex
    values moved as bytes), shapes that fill no tile or leave partial tiles, rows moved
    to the top at the start, the middle and the end; for real dtypes also upper with a
    row scale.  The output is poisoned by the allocator's earlier contents: every entry
    must be written."""
    cp = _cupy_with_gpu()
    from qrlab.gpu import copy_rows
    rng = np.random.default_rng(shape[0] * shape[1])
    M = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        M = M + 1j * rng.standard_normal(shape)
    M = M.astype(dtype)
    m = shape[0]
    A = _layouts(cp.asarray(M))[layout]
    before = A.copy()
    for first in {(0, 0), (0, min(3, m)), (m // 2, (m + 1) // 3), (m - 1, 1)}:
        cp.full(shape, np.nan, dtype=dtype)     # leave NaN in the pool for out to get
        out = backend.working_copy(A, first=first)
        assert isinstance(out, cp.ndarray) and out.flags.c_contiguous and out.dtype == dtype
        np.testing.assert_array_equal(cp.asnumpy(out), _reference_copy(M, first, False, None))
        if np.dtype(dtype).kind == "f":
            s = rng.choice([-1.0, 0.5, 2.0], m)
            got = backend.working_copy(A, first=first, upper=True, scale=cp.asarray(s))
            np.testing.assert_array_equal(cp.asnumpy(got), _reference_copy(M, first, True, s))
        else:                                    # the kernel takes no complex scale
            assert copy_rows(A, first, upper=True, scale=cp.ones(m)) is None
    np.testing.assert_array_equal(cp.asnumpy(A), cp.asnumpy(before))
    assert backend.working_copy(A[:0]).shape == (0, shape[1])


class _FakeStream:
    """A stream whose synchronize raises `error` (as CuPy's does for a failed launch)."""
    ptr = 12345

    def __init__(self, error=None):
        self.error, self.synced = error, 0

    def synchronize(self):
        self.synced += 1
        if self.error:
            raise self.error


def test_stream_ended_raises_where_the_stream_failed():
    """The wait for a structured launch's report looks at its stream now and then: done
    (status 0), still running (600, not ready) or failed (any other status, e.g. 700
    after a kernel fault, where CuPy's Stream.done stays False for ever), which raises
    the stream's error rather than waiting for a report that will not come."""
    from qrlab.gpu import _stream_ended
    asked = []

    def query(status):
        return lambda ptr: asked.append(ptr) or status

    stream = _FakeStream()
    assert _stream_ended(stream, query(0)) is True
    assert _stream_ended(stream, query(600)) is False
    assert asked == [stream.ptr, stream.ptr] and stream.synced == 0
    failed = _FakeStream(ValueError("an illegal memory access was encountered"))
    with pytest.raises(ValueError, match="illegal memory access"):
        _stream_ended(failed, query(700))
    assert failed.synced == 1
    with pytest.raises(RuntimeError, match="error 700"):
        _stream_ended(_FakeStream(), query(700))
