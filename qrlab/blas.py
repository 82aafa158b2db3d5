"""Matrix products and triangular solves on CuPy arrays by cuBLAS, callable while a CUDA
graph is being recorded.

CuPy refuses every cuBLAS call while its stream is capturing ("calling cuBLAS API during
stream capture is currently unsupported"), although cuBLAS itself records into graphs.
So qrlab calls the two cuBLAS routines its updates need (``gemm``, ``trsm``) itself,
through ``ctypes``, on a handle of its own per device and thread, bound to the current
stream at each call.  The library is the one CuPy has loaded; where it cannot be found,
:func:`gemm` and :func:`trsm` fall back to CuPy's own bindings (and graphs of updates
that multiply matrices are then refused, see :mod:`qrlab.graphs`).

Arrays are row-major views as they are (or their transposes): a row-major ``X`` is the
column-major ``X^T``, so cuBLAS computes ``C^T = B^T A^T``; no operand is copied.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import re
import threading

import numpy as np

__all__ = ["gemm", "trsm", "matmul"]

_N, _T = 0, 1                        # cublasOperation_t
_LOWER, _UPPER = 0, 1                # cublasFillMode_t
_RIGHT = 1                           # cublasSideMode_t
_NON_UNIT = 0                        # cublasDiagType_t
_handles = threading.local()         # .by_device: device id -> cublasHandle_t


@functools.lru_cache(maxsize=None)
def _library():
    """The cuBLAS library CuPy loaded (ctypes), or None where it is not found."""
    importlib.import_module("cupy_backends.cuda.libs.cublas")    # (loads libcublas)
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps
                     if re.search(r"/libcublas\.so[.\d]*$", line.strip())}
        lib = ctypes.CDLL(sorted(paths)[0]) if paths else None
    except OSError:
        return None
    if lib is None:
        return None
    handle, ptr, i = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int
    for name in ("cublasSgemm_v2", "cublasDgemm_v2"):
        getattr(lib, name).argtypes = [handle, i, i, i, i, i, ptr, ptr, i, ptr, i, ptr, ptr,
                                       i]
    for name in ("cublasStrsm_v2", "cublasDtrsm_v2"):
        getattr(lib, name).argtypes = [handle, i, i, i, i, i, i, ptr, ptr, i, ptr, i]
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(handle)]
    lib.cublasSetStream_v2.argtypes = [handle, ptr]
    return lib


def _handle(lib):
    """qrlab's cuBLAS handle for the current device and thread, bound to the current
    stream (host pointer mode: the scalars are read at the call, so a graph holds them)."""
    import cupy as cp
    by_device = _handles.__dict__.setdefault("by_device", {})
    device = cp.cuda.Device().id
    if device not in by_device:
        h = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
        by_device[device] = h
    h = by_device[device]
    _check(lib.cublasSetStream_v2(h, ctypes.c_void_p(cp.cuda.get_current_stream().ptr)),
           "cublasSetStream")
    return h


def _check(status, name):
    if status != 0:
        raise RuntimeError(f"{name} failed with cuBLAS status {status}")


def _layout(X, size, what):
    """(operation, leading dimension) of ``X`` for cuBLAS: N for contiguous rows, T for
    contiguous columns."""
    if X.strides[1] == size and X.strides[0] >= max(1, X.shape[1]) * size:
        return _N, X.strides[0] // size
    if X.strides[0] == size and X.strides[1] >= max(1, X.shape[0]) * size:
        return _T, X.strides[1] // size
    raise ValueError(f"{what}: operands need contiguous rows or columns")


def gemm(A, B, C, alpha=1.0, beta=0.0):
    """``C = alpha A B + beta C`` in place, for views of row-major matrices (or their
    transposes) as they are: no copies of strided operands, no temporary for ``C``."""
    size = C.dtype.itemsize
    if C.strides[1] != size or not (A.dtype == B.dtype == C.dtype and size in (4, 8)
                                    and C.dtype.kind == "f"):
        raise ValueError("gemm: C needs contiguous rows, and one real dtype for all")
    (m, k), n = A.shape, B.shape[1]
    if B.shape[0] != k or C.shape != (m, n):
        raise ValueError(f"gemm: shapes {A.shape} x {B.shape} into {C.shape}")
    (op_a, ld_a), (op_b, ld_b) = _layout(A, size, "gemm"), _layout(B, size, "gemm")
    if m == 0 or n == 0:
        return C
    scalars = np.array([alpha, beta], dtype=C.dtype)
    args = (op_b, op_a, n, m, k, scalars.ctypes.data, B.data.ptr, ld_b, A.data.ptr, ld_a,
            scalars.ctypes.data + size, C.data.ptr, C.strides[0] // size)
    _call("gemm", size, args)
    return C


def trsm(R, B):
    """``X = R^{-1} B`` for an upper triangular ``R`` (n x n, a real dtype, contiguous rows
    or columns) and ``B`` (n x k): a new row-major array."""
    import cupy as cp
    size = R.dtype.itemsize
    if not (R.dtype == B.dtype and size in (4, 8) and R.dtype.kind == "f"):
        raise ValueError("trsm: one real dtype for R and B")
    X = cp.array(B, order="C", copy=True)
    if X.size == 0:
        return X
    # R X = B is X^T R^T = B^T, the column-major X^T (k x n, leading dimension k) solved
    # from the right by R^T: lower triangular where R has contiguous rows, R itself
    # transposed where R has contiguous columns
    op_r, ld_r = _layout(R, size, "trsm")
    uplo = _LOWER if op_r == _N else _UPPER
    n, k = X.shape[0], X.reshape(X.shape[0], -1).shape[1]
    if R.shape != (n, n):
        raise ValueError(f"trsm: R of shape {R.shape} for B of shape {B.shape}")
    one = np.ones(1, dtype=R.dtype)
    args = (_RIGHT, uplo, op_r, _NON_UNIT, k, n, one.ctypes.data, R.data.ptr, ld_r,
            X.data.ptr, k)
    _call("trsm", size, args)
    return X


def matmul(A, B):
    """``A @ B`` into a new row-major array by :func:`gemm` (real dtypes)."""
    import cupy as cp
    return gemm(A, B, cp.empty((A.shape[0], B.shape[1]), dtype=A.dtype))


def _call(routine, size, args):
    """cuBLAS's ``routine`` for values of ``size`` bytes (S or D) with ``args`` after the
    handle: on qrlab's handle, or on CuPy's where the library was not found."""
    prefix = "S" if size == 4 else "D"
    lib = _library()
    if lib is None:
        return _with_cupy_handle(prefix.lower() + routine, args)
    name = f"cublas{prefix}{routine}_v2"
    _check(getattr(lib, name)(_handle(lib), *args), name)


def _with_cupy_handle(name, args):
    """Call CuPy's binding of cuBLAS's ``name`` on CuPy's handle (current stream, host
    pointer mode), leaving the handle as it was for CuPy's own calls."""
    import cupy as cp
    from cupy.cuda import cublas
    handle = cp.cuda.device.get_cublas_handle()
    stream, mode = cublas.getStream(handle), cublas.getPointerMode(handle)
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    try:
        getattr(cublas, name)(handle, *args)
    finally:
        cublas.setStream(handle, stream)
        cublas.setPointerMode(handle, mode)
