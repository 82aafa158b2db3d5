"""qrlab.graphs: small updates on CuPy arrays recorded once as CUDA graphs and replayed.

A replay must give what the update gives without a graph, on every call's own inputs
(never a recorded call's), for every update, full, economic and Q-less, in both dtypes;
updates that read the device on the host (or upload from it) must be refused and run
without a graph.
"""
import numpy as np
import pytest
import scipy.linalg as sl

import qrlab
from qrlab import graphs

gpu = [pytest.mark.gpu,
       pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")]

#: (update, mode) pairs: all can be recorded at the sizes tested here (an economic
#: update's new basis comes from a panel QR in one block's shared memory; see
#: test_large_panels_run_without_a_graph for one that does not fit)
CASES = [("insert rows", "full"), ("insert rows", "thin"), ("insert rows", "none"),
         ("insert cols", "full"), ("insert cols", "thin"), ("delete rows", "full"),
         ("delete rows", "thin"), ("delete cols", "full"), ("delete cols", "thin"),
         ("delete cols", "none"), ("rank", "full"), ("rank", "thin")]


# --- the switch (no GPU needed) -------------------------------------------------------

def test_switch(monkeypatch):
    monkeypatch.delenv("QRLAB_GRAPHS", raising=False)
    with graphs.using(True):
        assert graphs.enabled()
        with graphs.using(False):
            assert not graphs.enabled()
        assert graphs.enabled()
    for value, on in (("0", False), ("off", False), (" No ", False), ("1", True), ("", True)):
        monkeypatch.setenv("QRLAB_GRAPHS", value)
        with graphs.using(True):                 # using wins over the variable
            assert graphs.enabled()
        assert graphs.enabled() is on or graphs._switch    # (the suite's own `using`)


def test_numpy_never_records():
    graphs.clear()
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 4))
    Q, R = np.linalg.qr(A, mode="complete")
    with graphs.using(True):
        for _ in range(3):
            qrlab.qr_insert(Q, R, rng.standard_normal(4), 2, "row")
    assert graphs.info()["recorded"] == graphs.info()["plain"] == 0


# --- replays on the GPU ---------------------------------------------------------------

def _call(update, Q, R, U, V, k, p):
    if update == "insert rows":
        return qrlab.qr_insert(Q, R, U, k, "row")
    if update == "insert cols":
        return qrlab.qr_insert(Q, R, U, k, "col")
    if update == "delete rows":
        return qrlab.qr_delete(Q, R, k, p, "row")
    if update == "delete cols":
        return qrlab.qr_delete(Q, R, k, p, "col")
    return qrlab.qr_update(Q, R, U, V)


def _problem(rng, update, mode, m, n, p, dtype):
    """Fresh A, its factors in ``mode`` (NumPy), the update's operands and the updated A."""
    A = rng.standard_normal((m, n)).astype(dtype)
    Q, R = sl.qr(A, mode="economic" if mode == "thin" else "full")
    Q, R = Q.astype(dtype), R.astype(dtype)
    k = m // 3 if "rows" in update else n // 2
    U = V = None
    if update == "insert rows":
        U = rng.standard_normal((p, n)).astype(dtype)
        A1 = np.insert(A, [k] * p, U, axis=0)
    elif update == "insert cols":
        U = rng.standard_normal((m, p)).astype(dtype)
        A1 = np.insert(A, [k] * p, U, axis=1)
    elif update == "delete rows":
        A1 = np.delete(A, range(k, k + p), axis=0)
    elif update == "delete cols":
        A1 = np.delete(A, range(k, k + p), axis=1)
    else:
        U, V = (rng.standard_normal((s, p)).astype(dtype) for s in (m, n))
        A1 = A + U @ V.T
    return (None if mode == "none" else Q), R, U, V, k, A1


def _check(Q1, R1, A1, dtype):
    """QR equals the updated A, Q's columns are orthonormal, R is exactly triangular (R
    alone: R^T R equals A1^T A1)."""
    t = 200 * np.finfo(dtype).eps * max(A1.shape)
    scale = max(1.0, np.linalg.norm(A1))
    assert np.all(np.tril(R1, -1) == 0)
    if Q1 is None:
        h = min(R1.shape)
        assert np.linalg.norm(R1[:h].T @ R1[:h] - A1.T @ A1) <= t * scale ** 2
    else:
        assert np.linalg.norm(Q1 @ R1 - A1) <= t * scale
        assert np.linalg.norm(Q1.T @ Q1 - np.eye(Q1.shape[1])) <= t


@pytest.mark.parametrize("update, mode", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n, p", [(60, 20, 3), (300, 120, 1)])
@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_replay_matches_the_update(update, mode, dtype, m, n, p):
    import cupy as cp
    import cupyx
    graphs.clear()
    rng = np.random.default_rng(m + n + p)
    for call in range(4):
        Q, R, U, V, k, A1 = _problem(rng, update, mode, m, n, p, dtype)
        on_gpu = [None if a is None else cp.asarray(a) for a in (Q, R, U, V)]
        before = [None if a is None else a.copy() for a in on_gpu]
        with graphs.using(False):
            plain = _call(update, *on_gpu, k, p)
        with graphs.using(True):
            replayed = _call(update, *on_gpu, k, p)
        for a, b in zip(on_gpu, before):            # the caller's arrays: only read
            assert a is None or bool((a == b).all())
        plain, replayed = ((r,) if mode == "none" else r for r in (plain, replayed))
        t = 20 * np.finfo(dtype).eps * max(m, n)
        for x, y in zip(plain, replayed):
            assert x.shape == y.shape and x.dtype == y.dtype
            assert float(abs(x - y).max()) <= t * max(1.0, float(abs(x).max()))
        Q1, R1 = (None, replayed[0]) if mode == "none" else replayed
        _check(None if Q1 is None else Q1.get(), R1.get(), A1, dtype)
        # scribble over freed pinned memory: a graph that read an upload's staging buffer
        # at its replays would now read this
        junk = cupyx.empty_pinned((1 << 16,), np.float64)
        junk[:] = np.nan
        del junk
    info = graphs.info()
    assert (info["recorded"], info["replayed"], info["refused"]) == (1, 3, 0), info


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("tall", [True, False], ids=["tall_qr", "geqrf"])
def test_large_panels_run_without_a_graph(tall, monkeypatch):
    """An economic row removal whose new basis is a panel too tall for shared memory goes
    to ``tall_qr`` (every SM, one launch), which a graph holds; or, with that kernel off,
    to cuSOLVER's QR, which a graph cannot hold: refused, and right without a graph."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    if not tall:
        monkeypatch.setattr(GpuExecutor, "tall_w_max", 0)
    graphs.clear()
    rng = np.random.default_rng(17)
    with graphs.using(True):
        for call in range(3):
            Q, R, _, _, k, A1 = _problem(rng, "delete rows", "thin", 12000, 8, 3, np.float64)
            Q1, R1 = qrlab.qr_delete(cp.asarray(Q), cp.asarray(R), k, 3, "row")
            _check(Q1.get(), R1.get(), A1, np.float64)
    info = graphs.info()
    if tall:
        assert (info["recorded"], info["refused"]) == (1, 0) and info["replayed"] >= 1, info
    else:
        assert (info["recorded"], info["refused"], info["plain"]) == (0, 1, 3), info


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_graph_holds_the_copy_of_q_beside_a_tall_panel(dtype, monkeypatch):
    """Adding columns with the full Q where ``tall_qr`` takes the rows of Q^T U below R
    (1940 x 40): with ``copy_q_beside``, Q's working copy runs on another stream beside
    it, which a graph records too (a fork and a join of streams; inputs under
    ``MAX_INPUT_BYTES``); the replays are right."""
    import cupy as cp

    from qrlab.gpu import GpuExecutor
    monkeypatch.setattr(GpuExecutor, "copy_q_beside", True)
    graphs.clear()
    rng = np.random.default_rng(23)
    with graphs.using(True):
        for call in range(3):
            Q, R, U, _, k, A1 = _problem(rng, "insert cols", "full", 2000, 60, 40, dtype)
            Q1, R1 = qrlab.qr_insert(cp.asarray(Q), cp.asarray(R), cp.asarray(U), k, "col")
            _check(Q1.get(), R1.get(), A1, dtype)
    info = graphs.info()
    assert (info["recorded"], info["refused"]) == (1, 0) and info["replayed"] >= 1, info


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_replays_raise_and_fall_back_like_the_update(dtype):
    """The tests an update makes of its values run in the replay too: a column of u in
    the span of an economic Q raises SciPy's LinAlgError from a replay, and a row of
    leverage one (its removal needs a fallback direction) replays right."""
    import cupy as cp
    graphs.clear()
    rng = np.random.default_rng(19)
    with graphs.using(True):
        for call in range(5):
            A = rng.standard_normal((40, 6)).astype(dtype)
            Q, R = (cp.asarray(x.astype(dtype)) for x in sl.qr(A, mode="economic"))
            u = rng.standard_normal((40, 2)).astype(dtype)
            if call == 3:
                u[:, 1] = A[:, 2]
                with pytest.raises(np.linalg.LinAlgError, match="span of Q"):
                    qrlab.qr_insert(Q, R, cp.asarray(u), 2, "col")
                continue
            Q1, R1 = qrlab.qr_insert(Q, R, cp.asarray(u), 2, "col")
            _check(Q1.get(), R1.get(), np.insert(A, [2, 2], u, axis=1), dtype)
        for call in range(4):
            A = rng.standard_normal((40, 6)).astype(dtype)
            if call % 2:
                A[:, 5] = 0
                A[17, 5] = 1               # only row 17 touches column 5
            Q, R = (cp.asarray(x.astype(dtype)) for x in sl.qr(A, mode="economic"))
            Q1, R1 = qrlab.qr_delete(Q, R, 16, 2, "row")
            _check(Q1.get(), R1.get(), np.delete(A, [16, 17], axis=0), dtype)
    info = graphs.info()
    assert (info["recorded"], info["replayed"], info["refused"]) == (2, 7, 0), info


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_layouts_and_streams():
    """Fortran-ordered and strided inputs, and a stream of the caller's: each its own
    graph, each replay right."""
    import cupy as cp
    graphs.clear()
    rng = np.random.default_rng(7)
    stream = cp.cuda.Stream(non_blocking=True)
    for call in range(9):
        A = rng.standard_normal((50, 12))
        Q, R = np.linalg.qr(A, mode="complete")
        u = rng.standard_normal((12, 3))
        Qd, Rd, ud = cp.asarray(Q), cp.asarray(R), cp.asarray(u)[:, 1]     # u: strided
        if call % 3 == 1:
            Qd = cp.asfortranarray(Qd)
        cp.cuda.Stream.null.synchronize()       # (the other stream does not wait for it)
        with graphs.using(True), (stream if call % 3 == 2 else cp.cuda.Stream.null):
            Q1, R1 = qrlab.qr_insert(Qd, Rd, ud, 5, "row")
        stream.synchronize()
        _check(Q1.get(), R1.get(), np.insert(A, 5, u[:, 1], axis=0), np.float64)
    info = graphs.info()
    assert (info["recorded"], info["replayed"], info["graphs"]) == (3, 6, 3), info


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_reads_and_uploads_are_refused():
    """A core that reads the device on the host, or uploads from it, cannot be recorded:
    it runs without a graph, every time, and gives its own result."""
    import cupy as cp

    def reads(a):
        return a * float(a.sum())

    def uploads(a):
        return a + cp.asarray(np.arange(a.size, dtype=a.dtype))

    graphs.clear()
    with graphs.using(True):
        for call in range(3):
            a = cp.arange(5, dtype=cp.float64) + call
            assert bool((graphs.run(reads, (a,), {}) == a * float(a.sum())).all())
            assert bool((graphs.run(uploads, (a,), {}) == a + cp.arange(5.0)).all())
    info = graphs.info()
    assert (info["recorded"], info["refused"], info["plain"]) == (0, 2, 6), info
    assert any("reads" in r for r in info["refusals"])
    assert any("uploads" in r and "upload" in r.split(":", 1)[1] for r in info["refusals"])


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_budget_drops_the_oldest(monkeypatch):
    import cupy as cp
    monkeypatch.setattr(graphs, "BUDGET_BYTES", 1)
    graphs.clear()
    rng = np.random.default_rng(3)
    with graphs.using(True):
        for n in (10, 10, 10, 11, 11, 11, 10):
            A = rng.standard_normal((30, n))
            R = cp.asarray(np.linalg.qr(A, mode="r"))
            R1 = qrlab.qr_delete(None, R, 2, 1, "col")
            _check(None, R1.get(), np.delete(A, 2, axis=1), np.float64)
            assert graphs.info()["graphs"] <= 1
    info = graphs.info()
    # n = 10 recorded, then dropped for n = 11's graph; seen before, so recorded again
    assert (info["recorded"], info["replayed"]) == (3, 5), info
    graphs.clear()
    assert graphs.info()["graphs"] == 0


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_replay_tests_finiteness():
    """A replay tests its inputs itself: a NaN raises ValueError (the caller's arrays as
    they were), and the next call replays as before; check_finite=False is its own key."""
    import cupy as cp
    graphs.clear()
    rng = np.random.default_rng(11)
    A = rng.standard_normal((40, 10))
    Q, R = (cp.asarray(x) for x in np.linalg.qr(A, mode="complete"))
    with graphs.using(True):
        for call in range(5):
            u = cp.asarray(rng.standard_normal(10))
            if call == 3:
                u[4] = np.nan
                kept = u.copy()
                with pytest.raises(ValueError, match="infs or NaNs"):
                    qrlab.qr_insert(Q, R, u, 7, "row")
                assert bool(cp.isnan(u[4])) and bool((u[:4] == kept[:4]).all())
                continue
            Q1, R1 = qrlab.qr_insert(Q, R, u, 7, "row")
            _check(Q1.get(), R1.get(), np.insert(A, 7, u.get(), axis=0), np.float64)
        for call in range(3):
            qrlab.qr_insert(Q, R, u, 7, "row", check_finite=False)
    info = graphs.info()
    assert (info["recorded"], info["replayed"], info["graphs"]) == (2, 6, 2), info


@pytest.mark.parametrize("q", ["full", "thin", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_least_squares_replays(q, dtype):
    """LeastSquaresQR's updates replay too: a sliding window (a row added at the end, the
    oldest removed) and a column tried and dropped again, each solving like
    recomputation at every step; each update recorded once (q='none' removes rows by a
    Cholesky downdate, which is not recorded)."""
    import cupy as cp
    graphs.clear()
    rng = np.random.default_rng(23)
    m, n, steps = 60, 5, 6
    X = rng.standard_normal((m + steps, n)).astype(dtype)
    y = rng.standard_normal(m + steps).astype(dtype)
    ls = qrlab.LeastSquaresQR(cp.asarray(X[:m]), cp.asarray(y[:m]), q=q)
    t = 1e-9 if dtype == np.float64 else 2e-3

    def check(A, b):
        A, b = A.astype(np.float64), b.astype(np.float64)
        x = np.linalg.lstsq(A, b, rcond=None)[0]
        np.testing.assert_allclose(ls.solve().get(), x, rtol=t, atol=t)
        np.testing.assert_allclose(float(ls.residual_norm()), np.linalg.norm(A @ x - b),
                                   rtol=t)

    with graphs.using(True):
        for s in range(steps):
            ls.add_rows(cp.asarray(X[m + s]), cp.asarray(y[m + s:m + s + 1]))
            if q == "none":
                ls.remove_rows(0, 1, U=cp.asarray(X[s]), e=cp.asarray(y[s:s + 1]))
            else:
                ls.remove_rows(0, 1)
            check(X[s + 1:m + s + 1], y[s + 1:m + s + 1])
        window = graphs.info()
        A, b = X[steps:], y[steps:]
        for s in range(4 if q != "none" else 0):
            c = rng.standard_normal(m).astype(dtype)
            ls.add_columns(cp.asarray(c))
            check(np.column_stack([A, c]), b)
            ls.remove_columns(n)
            check(A, b)
    info = graphs.info()
    # each update recorded once and replayed from then on (the recording call's own
    # result is a replay); the first call of each, and a second one where its first
    # found R in another layout (the state an update before it left), runs plain
    if q == "none":
        assert (window["recorded"], window["refused"], window["replayed"]) == (1, 0, 5)
    else:
        assert (window["recorded"], window["refused"]) == (2, 0), window
        assert window["replayed"] + window["plain"] == 12 and window["plain"] <= 4, window
        assert (info["recorded"], info["refused"]) == (4, 0), info
        assert info["replayed"] - window["replayed"] >= 4, info


@pytest.mark.parametrize("cupy_binding", [False, True], ids=["ctypes", "cupy-fallback"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
def test_blas_products_and_solves(dtype, cupy_binding, monkeypatch):
    """qrlab.blas against NumPy: products of row- and column-major operands and of
    transposed views, in place with alpha and beta, and triangular solves, through
    qrlab's own cuBLAS handle and through CuPy's (where the library is not found)."""
    import cupy as cp
    from qrlab import blas
    if cupy_binding:
        monkeypatch.setattr(blas, "_library", lambda: None)
    rng = np.random.default_rng(5)
    t = 50 * np.finfo(dtype).eps
    A, B, C = (rng.standard_normal(s).astype(dtype) for s in ((7, 5), (5, 4), (7, 4)))
    for a in (cp.asarray(A), cp.asfortranarray(cp.asarray(A)), cp.asarray(A.T.copy()).T):
        for b in (cp.asarray(B), cp.asfortranarray(cp.asarray(B))):
            out = cp.asarray(C)
            blas.gemm(a, b, out, alpha=-2.0, beta=0.5)
            np.testing.assert_allclose(out.get(), -2 * A @ B + 0.5 * C, atol=t * 20)
            np.testing.assert_allclose(blas.matmul(a, b).get(), A @ B, atol=t * 20)
    R = np.triu(rng.standard_normal((6, 6))).astype(dtype) + 4 * np.eye(6, dtype=dtype)
    Y = rng.standard_normal((6, 3)).astype(dtype)
    for r in (cp.asarray(R), cp.asfortranarray(cp.asarray(R))):
        for y in (cp.asarray(Y), cp.asarray(Y[:, 0])):
            x = blas.trsm(r, y)
            assert x.shape == y.shape
            np.testing.assert_allclose(R @ x.get(), y.get(), atol=t * 20)
    with pytest.raises(ValueError, match="contiguous"):
        blas.gemm(cp.asarray(A)[::2, ::2], cp.asarray(B)[:3], cp.empty((4, 4), dtype))
    with pytest.raises(ValueError, match="shapes"):
        blas.gemm(cp.asarray(A), cp.asarray(A), cp.empty((7, 5), dtype))
