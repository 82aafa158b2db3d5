"""Array-module dispatch: the one place where qrlab chooses between NumPy and CuPy.

Functions take their module from their input arrays (NumPy in, NumPy out; CuPy in,
CuPy out), so callers never pass a backend flag.  Code that must *create* arrays
without an input to copy from (examples, notebooks, benchmarks) asks
:func:`default_module`, which honours ``QRLAB_BACKEND=numpy|cupy`` and otherwise
picks CuPy when it imports and sees a GPU.
"""
from __future__ import annotations

import functools
import os

import numpy as np

__all__ = [
    "BackendError",
    "array_module",
    "require_finite",
    "default_module",
    "gpu_available",
    "is_cupy",
    "to_numpy",
    "describe",
    "executor_for",
    "gpu_name",
    "host_constant",
    "matmul",
    "raise_if",
    "run_update",
    "solve_triangular",
    "working_copy",
]


class BackendError(RuntimeError):
    """The requested array backend cannot be used on this machine."""


@functools.lru_cache(maxsize=1)
def _cupy_or_reason():
    """Return ``(cupy, None)`` when CuPy imports and sees a GPU, else ``(None, reason)``."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        return None, f"CuPy does not import ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"CuPy imports but finds no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return None, "CuPy imports but finds no CUDA device"
    return cupy, None


def gpu_available() -> bool:
    """True when CuPy imports and at least one CUDA device is visible."""
    return _cupy_or_reason()[0] is not None


def default_module():
    """The array module to create new arrays with.

    ``QRLAB_BACKEND=numpy`` or ``QRLAB_BACKEND=cupy`` forces one; otherwise CuPy when
    :func:`gpu_available`, else NumPy.

    Raises
    ------
    BackendError
        If ``QRLAB_BACKEND=cupy`` is set but CuPy is not usable, or the variable holds
        an unknown name.
    """
    forced = os.environ.get("QRLAB_BACKEND", "").strip().lower()
    if forced in ("", "auto"):
        cp = _cupy_or_reason()[0]
        return cp if cp is not None else np
    if forced == "numpy":
        return np
    if forced == "cupy":
        cp, reason = _cupy_or_reason()
        if cp is None:
            raise BackendError(f"QRLAB_BACKEND=cupy, but {reason}. "
                               "Install the 'gpu' extra on a machine with an NVIDIA GPU, "
                               "or set QRLAB_BACKEND=numpy.")
        return cp
    raise BackendError(f"QRLAB_BACKEND={forced!r} is not one of 'numpy', 'cupy', 'auto'")


def is_cupy(x) -> bool:
    """True for a CuPy array (checked without importing CuPy)."""
    return type(x).__module__.split(".")[0] == "cupy"


def array_module(*arrays):
    """The module (``numpy`` or ``cupy``) that owns ``arrays``; ``None`` entries are skipped.

    Non-array inputs (lists, scalars) count as NumPy, like ``numpy.asarray`` would take them.

    Examples
    --------
    >>> import numpy as np
    >>> array_module(np.ones(3), None, [1.0]) is np
    True

    Raises
    ------
    TypeError
        If NumPy and CuPy arrays are mixed: qrlab never copies between host and device
        behind the caller's back.
    """
    kinds = {is_cupy(a) for a in arrays if a is not None}
    if kinds == {True, False}:
        raise TypeError("qrlab got a mix of NumPy and CuPy arrays; move them to one device "
                        "first (cupy.asarray / cupy.asnumpy)")
    if kinds == {True}:
        import cupy
        return cupy
    return np


def to_numpy(x):
    """A NumPy copy (or view) of ``x``, which may live on the GPU."""
    return x.get() if is_cupy(x) else np.asarray(x)


def describe() -> str:
    """One line naming the backend :func:`default_module` picks and why."""
    try:
        xp = default_module()
    except BackendError as exc:
        return f"backend unusable: {exc}"
    if xp is np:
        reason = _cupy_or_reason()[1]
        # Normalised as in default_module, so " NumPy " reads as forced here too.
        forced = os.environ.get("QRLAB_BACKEND", "").strip().lower()
        why = "forced by QRLAB_BACKEND" if forced == "numpy" else reason
        return f"NumPy {np.__version__} on the CPU ({why})"
    return f"CuPy {xp.__version__} on {gpu_name()}"


def gpu_name() -> str:
    """The name of the current CUDA device, as CUDA reports it (needs CuPy)."""
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else name


def executor_for(xp, method: str = "blocked"):
    """The executor that runs update plans on arrays of module ``xp``.

    NumPy gets the reference executor; CuPy gets the GPU executor with fused kernels
    (falling back to the reference executor, which runs on CuPy arrays too, when the
    kernels are not available).  This is the only place that branches on the backend.
    """
    from .executor import Executor
    if xp is not np:
        try:
            from .gpu import GpuExecutor
        except ImportError:
            return Executor(method)
        return GpuExecutor(method)
    return Executor(method)


def host_constant(xp, make, *args):
    """``make(*args)``, a NumPy array, on the device of ``xp`` (the current one): made and
    uploaded once per device and arguments, then kept (the 16 most recent), so that
    later calls upload nothing (and a CUDA graph being recorded holds it,
    :func:`qrlab.graphs.keep_alive`)."""
    if xp is np:
        return _host_constant(np, None, make, args)
    from .graphs import keep_alive
    return keep_alive(_host_constant(xp, xp.cuda.Device().id, make, args))


@functools.lru_cache(maxsize=16)
def _host_constant(xp, device, make, args):
    del device                  # (part of the key: the array is on the current device)
    return xp.asarray(make(*args))


def matmul(A, B):
    """``A @ B`` for 2-D arrays.  On CuPy, real ones go to :func:`qrlab.blas.matmul`
    (cuBLAS called by qrlab itself), which a CUDA graph can record; CuPy's own ``@``
    refuses to run while a graph is being recorded (:mod:`qrlab.graphs`)."""
    if is_cupy(A) and A.ndim == B.ndim == 2 and A.dtype == B.dtype \
            and A.dtype.kind == "f" and A.dtype.itemsize in (4, 8):
        from .blas import matmul as by_cublas
        try:
            return by_cublas(A, B)
        except ValueError:                   # (an operand with no contiguous rows or columns)
            pass
    return A @ B


def require_finite(*arrays):
    """Raise ``ValueError`` if an array (None entries skipped) holds an inf or a NaN."""
    xp = array_module(*arrays)
    for a in arrays:
        if a is not None and a.size and not bool(xp.isfinite(a).all()):
            raise ValueError("array must not contain infs or NaNs")


def raise_if(failed, error):
    """Raise ``error()`` if ``failed``, a boolean scalar array (a test of an update's
    values), is true.  On the device this waits for it, except while a CUDA graph is
    being recorded (:mod:`qrlab.graphs`): the graph then tests it after each replay."""
    if is_cupy(failed):
        from .graphs import defer
        if defer(failed, error):
            return
    if bool(failed):
        raise error()


def run_update(core, arrays, check_finite=False, **params):
    """``core(*arrays, **params)``, an update on validated arrays, after
    :func:`require_finite` of the arrays where asked: directly on NumPy; on CuPy through
    :func:`qrlab.graphs.run`, which replays a small update from a CUDA graph (one launch
    for all of its kernels, the finiteness test included) from its second call on."""
    if array_module(*arrays) is np:
        if check_finite:
            require_finite(*arrays)
        return core(*arrays, **params)
    from .graphs import run
    return run(core, arrays, params, check_finite)


_SINGULAR = "R is singular: the least-squares problem is rank deficient"


def solve_triangular(R, B, check=True, trans=False):
    """Solve ``R X = B`` (``trans``: ``R^T X = B``) for upper triangular ``R`` on the
    module of ``R``.

    Raises ``numpy.linalg.LinAlgError`` for an exactly singular ``R`` (a zero on the
    diagonal), on both backends.  ``check=False`` skips that test (and, on NumPy, SciPy's
    test for non-finite entries), for callers that know ``R``'s diagonal: on a GPU the
    test waits for the device (once, with the solve already queued).

    On CuPy, one right-hand side of a real ``R`` (n >= 128, rows contiguous) goes to
    qrlab's kernel (:func:`qrlab.gpu.back_solve`), anything else to cuBLAS's ``trsm``.
    """
    xp = array_module(R, B)
    if xp is np:
        if check and R.shape[0] and not (np.diagonal(R) != 0).all():
            raise np.linalg.LinAlgError(_SINGULAR)
        from scipy.linalg import solve_triangular
        return solve_triangular(R, B, trans="T" if trans else "N", lower=False,
                                check_finite=check)
    # On a GPU the diagonal test is made by the solve's kernel, or queued before the
    # solve, and read after it: one wait for the device, with the solve already behind it
    # (a zero makes the solve's values non-finite, and they are dropped).
    x, singular = _solve_on_gpu(R, B, trans, check and R.shape[0] > 0)
    if singular is not None and bool(singular):
        raise np.linalg.LinAlgError(_SINGULAR)
    return x


def _solve_on_gpu(R, B, trans=False, check=False):
    """The CuPy solve of :func:`solve_triangular`: ``(x, singular)``, ``singular`` a
    device scalar, true where R's diagonal holds a zero (None without ``check``)."""
    xp = array_module(R)
    if (not trans and (B.ndim == 1 or B.shape[1] == 1) and R.dtype == B.dtype
            and R.dtype.kind == "f" and R.strides[1] == R.itemsize and R.shape[0] >= 128
            and B.strides[0] % B.itemsize == 0):
        # one right-hand side, as a least-squares solve has: a fused kernel (cuBLAS's
        # trsm took 4 to 6 times as long for n = 3000 to 10000 on an H100), which makes
        # the diagonal test too: two launches in all where the test and a copy of a
        # strided right-hand side took four more (tens of microseconds of host time
        # each, at the end of an update, with the GPU idle)
        from .gpu import back_solve
        x, singular = back_solve(R, B.reshape(-1), check=True)
        return (x if B.ndim == 1 else x[:, None]), (singular if check else None)
    singular = (xp.diagonal(R) == 0).any() if check else None
    if trans:
        from cupyx.scipy.linalg import solve_triangular
        return solve_triangular(R, B, trans="T", lower=False), singular
    if R.dtype == B.dtype and R.dtype.kind == "f" and R.dtype.itemsize in (4, 8):
        from .blas import trsm               # (cuBLAS called by qrlab: a graph can record it)
        try:
            return trsm(R, B), singular
        except ValueError:                   # (no contiguous rows or columns)
            pass
    from cupyx.scipy.linalg import solve_triangular     # (no finite test by default)
    return solve_triangular(R, B, lower=False), singular


def working_copy(A, first=(0, 0), upper=False, scale=None):
    """A new row-major copy of the 2-D ``A`` for an update to work on in place.

    ``first = (k, p)`` puts rows ``k .. k + p`` first, then the others in order (removing
    rows starts so); ``upper`` leaves zeros below the diagonal (those entries are not
    read); ``scale`` (one value per row, real ``A``) multiplies row ``i`` by
    ``scale[i]``.  On CuPy one kernel does it in a single pass
    (:func:`qrlab.gpu.copy_rows`): a plain copy of the column-major Q that
    ``cupy.linalg.qr`` returns took 2.7 times as long.

    Examples
    --------
    >>> import numpy as np
    >>> from qrlab.backend import working_copy
    >>> A = np.asfortranarray(np.arange(12.0).reshape(4, 3))
    >>> working_copy(A, first=(2, 1))
    array([[ 6.,  7.,  8.],
           [ 0.,  1.,  2.],
           [ 3.,  4.,  5.],
           [ 9., 10., 11.]])
    >>> working_copy(A[:3], upper=True, scale=np.array([1.0, -1.0, 2.0]))
    array([[ 0.,  1.,  2.],
           [ 0., -4., -5.],
           [ 0.,  0., 16.]])
    """
    xp = array_module(A)
    if xp is not np:
        from .gpu import copy_rows
        out = copy_rows(A, first, upper, scale)
        if out is not None:
            return out
    k, p = first
    out = xp.concatenate([A[k:k + p], A[:k], A[k + p:]]) if p else A.copy(order="C")
    out = xp.ascontiguousarray(out)
    if scale is not None:
        out *= scale[:, None]
    return xp.triu(out) if upper else out
