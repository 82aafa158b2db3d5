"""The GPU executor: the reference executor with its hot loops replaced by CUDA kernels.

Householder panels (removing columns, adding rows, the rank-p update, the Cholesky
update) of up to 32 columns are one launch each of ``reflect_panel``
(``qrlab/kernels/reflect.cu``): every thread block loads the panel into shared memory,
builds its reflectors column by column and applies them in compact WY form to its share
of the trailing columns of R; Q, when kept, gets them by three cuBLAS products.  Wider
panels (the p-wide Stage 1 of adding columns) use ``panel_qr``
(``qrlab/kernels/panel.cu``: panel and ``T`` in shared memory) and matrix products; panels
too tall for one block's shared memory (the rows of Q^T U below R, thousands, adding
columns; the rows of Q to remove in their columns past R) one cooperative launch of
``tall_qr`` (``qrlab/kernels/tall.cu``: a chunk of rows per SM, two grid barriers per
reflector), where cuSOLVER's ``geqrf`` took a few launches per column.

The rank-k Cholesky update and downdate run with no chain of reflectors, in passes of
up to 64 columns of V where that is faster (:meth:`GpuExecutor.structured_passes`;
``qrlab/kernels/structured.cu``, :meth:`GpuExecutor.structured_update`): thread blocks
that solve ``P = R^{-T} V`` block by block and factor the diagonal blocks of the
structured factor ``M`` of ``I +- P P^T``, and in the same launch thread blocks that form
``M R`` as matrix products as soon as their rows are solved (in place, a second launch);
the products run on the tensor cores (DMMA in float64; 3xTF32 in float32, but the solve's
64 x 64 x 64 products at k = 64 by DMMA in float64).  Each pass after the first starts
while the one before finishes (:meth:`GpuExecutor.structured_update_passes`).

The Cholesky update where passes are slower (large k at small n), a triangle
``[R; V^T]`` reduced to ``[R'; 0]``, adding rows (``[R; U]``, right-hand sides carried),
removing columns (the ``p`` rows above the triangle that follows the removed columns) and
the band left by a rank-p update's sweeps (the same shape) run whole in one cooperative
launch of ``triangle_update`` (``qrlab/kernels/triangle.cu``; with Q, the identity of the touched
rows carried along, then two GEMMs of Q's columns): one block per SM owns
tiles of 32 columns of a chunk of B's rows, each panel is published through a flag in
device memory as soon as it is factored against a chunk, and the next panel (and the
next chunk) is factored while the other blocks are still applying this one.

Givens sweeps are what cost the papers O(m) launches; here they take two launches
whatever ``m``:

1. ``sweep_strips`` (``qrlab/kernels/strips.cu``, one thread block per strip of 32 driver
   lines): every rotation of the pipelined sweeps.  Line ``j`` is rotated only by sweeps
   ``s <= j``, so block ``b`` computes the sweeps of its own lines and applies those of the
   lines before it, which the blocks before it publish as they go: all blocks run at
   once, each a few waves behind the one before, with one block barrier per wave.  Where
   the rotations bound the update, the sweeps go in passes of 32 that run pipelined in the
   same launch (a block per strip and pass), since a block holding fewer sweeps makes
   shorter waves;
2. ``apply_sweeps`` (``qrlab/kernels/sweeps.cu``, persistent thread blocks): the
   rotations of each group of :func:`apply_waves` waves applied straight to tiles of 32
   rows of Q or 32 columns of R in shared memory, sweep by sweep, each thread carrying
   the rows of its warp's sweeps in registers.  (An earlier design multiplied each
   group's rotations into a small orthogonal ``G`` and applied it by cuBLAS: about 2.8
   times the flops at p = 100, and 1.1 to 1.6 times the time of the whole update.)

Step 1 keeps one SM per strip busy and leaves the others free: step 2 runs beside it on
another stream, each tile taking each group as soon as its waves are done, and so do the
products of a Householder stage before the sweeps with Q (:meth:`GpuExecutor.reflect`
leaves them to :meth:`GpuExecutor.flush`).

An update starts from working copies of Q and R (the caller's arrays are never written),
made in one pass whatever their layout by ``copy_rows`` (``qrlab/kernels/copy.cu``,
:func:`copy_rows`).

A small update launches its kernels from a CUDA graph from its second call on
(:mod:`qrlab.graphs`); its matrix products go to cuBLAS through :mod:`qrlab.blas`, which
a graph can record.  The kernels are compiled once by CuPy's ``RawModule``.  Complex input and
``method='paper'`` (one wave at a time, the papers' scheme) use the reference executor on
CuPy arrays.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .backend import working_copy
from .blas import gemm, matmul
from .executor import Executor
from .graphs import keep_alive
from .householder import wy_factor
from .stages import Reflect, Sweeps

__all__ = ["GpuExecutor", "kernels", "back_solve", "copy_rows"]

_SOURCES = [Path(__file__).with_name("kernels") / name
            for name in ("vector.cuh", "flags.cuh", "sweeps.cu", "panel.cu", "reflect.cu",
                         "structured.cu", "copy.cu")]
_COOPERATIVE = [Path(__file__).with_name("kernels") / name
                for name in ("vector.cuh", "flags.cuh", "triangle.cu", "strips.cu", "tall.cu")]
_SMEM_LIMIT = 200 * 1024            # dynamic shared memory a panel may use (H100: 227 KB)


@functools.lru_cache(maxsize=None)
def kernels():
    """The compiled module (compiled on first use, then cached by CuPy on disk)."""
    import cupy as cp
    return cp.RawModule(code="\n".join(p.read_text() for p in _SOURCES),
                        options=("-std=c++17",))


@functools.lru_cache(maxsize=None)
def cooperative_kernels():
    """``kernels/triangle.cu``, ``kernels/strips.cu`` and ``kernels/tall.cu``, launched
    cooperatively: their blocks wait on each other's flags, so all of them must be resident
    at once."""
    import cupy as cp
    return cp.RawModule(code="\n".join(p.read_text() for p in _COOPERATIVE),
                        options=("-std=c++17",), enable_cooperative_groups=True)


@functools.lru_cache(maxsize=None)
def _sm_count():
    import cupy as cp
    return cp.cuda.Device().attributes["MultiProcessorCount"]


@functools.lru_cache(maxsize=None)
def _side_stream():
    """A stream for work that runs beside a kernel using few SMs (made once and kept: the
    memory pool keeps freed blocks per stream)."""
    import cupy as cp
    return cp.cuda.Stream(non_blocking=True)


def _reflect_smem(h, w, size):
    """Dynamic shared memory of ``reflect_panel`` (512 threads): panel, G, Y, tau and the
    buffer that halves the partial sums of Y (8 warps x w x 32)."""
    return (h * w + w * w + 32 * 32 + w + 8 * w * 32) * size


def _tall_blocks(h, w, size, nsm):
    """Blocks and rows per block of ``tall_qr`` (``kernels/tall.cu``) for an ``h x w``
    panel: a block per 32 rows, at most one per SM; None where a block's rows do not fit
    its shared memory."""
    nb = min(nsm, -(-h // 32))
    rows = -(-h // nb)
    nb = -(-h // rows)                  # (no block without rows)
    return (nb, rows) if _tall_smem(rows, w, size) <= _SMEM_LIMIT else None


def _tall_smem(rows, w, size):
    """Dynamic shared memory of ``tall_qr`` (512 threads): a block's rows, 512 partial
    sums, three vectors of w."""
    return ((rows | 1) * w + 512 + 3 * w) * size


def _triangle_rpw(k, size):
    """Rows of B per factoring warp of ``triangle_update`` (the kernel's ``tri_rpw``,
    repeated here for the padding of its shared memory)."""
    return 4 if k <= 4 else 16 if (k <= 16 or size == 8) else 32


def _triangle_smem(k, size):
    """Dynamic shared memory of ``triangle_update`` (panels of 32) for chunks of at most k
    rows: V_B, L^T, a tile of 32 + k rows (k padded to the rows per factoring warp), Z
    (rows of 33), the diagonal block, G, the partial dots (two buffers of 32 columns, 20
    floats or 18 doubles apart) and tau."""
    kp = -(-k // _triangle_rpw(k, size)) * _triangle_rpw(k, size)
    ps = 20 if size == 4 else 18
    return ((k + 32) * 32 + (32 + kp) * 32 + 32 * 33 + 2 * 32 * 32 + 2 * 32 * ps + 32) * size


def _triangle_rows_max(size):
    """The most rows of B in one chunk of ``triangle_update``: its panel factor holds them
    in the registers of at most 16 warps (512 in float, 256 in double)."""
    return 16 * _triangle_rpw(10 ** 9, size)


#: the model of :func:`_triangle_chunks`, per value size: microseconds per panel step
#: (a + b kp for kp rows, padded to the factor's warps) and per item (d + e kc for kc
#: rows), the constants whose picks lose least against the fastest count measured for 26
#: shapes on an H100 (``benchmarks/fit_triangle_chunks.py``: the timings are in
#: ``benchmarks/results/triangle-chunks-*.json``)
_TRIANGLE_MODEL = {4: (4.5, 0.075, 9.0, 0.04), 8: (7.5, 0.1688, 14.5, 0.115)}


@functools.lru_cache(maxsize=256)      # host time before the launch, with the GPU idle
def _triangle_chunks(npanels, ntiles, k, size, nsm, most=None):
    """How many chunks the one launch of ``triangle_update`` splits B's ``k`` rows into:
    ``most`` rows each at most, or else the count a model of the launch predicts fastest.

    Fewer chunks make a longer critical path: ``npanels + chunks`` steps, each a panel
    factored against one chunk (``a + b kp`` us for ``kc`` rows, ``kp`` padded to the
    factor's warps).  More make more items for the thread blocks: every chunk applies
    every panel to every tile after it, ``d + e kc`` us each, shared by ``nsm`` blocks.
    The time is about the larger of the items' total and the critical path plus half of
    it (:data:`_TRIANGLE_MODEL`).  Against the fastest count measured for each of 26
    shapes (H100), the model's choice was 2.5% slower on average in float32 (17% at
    most) and 1.7% in float64 (12% at most); on an H200, 3.1% (22%) and 1.5% (8.6%),
    and a fit to those measurements found no better constants."""
    rows_max = _triangle_rows_max(size)
    fewest = -(-k // rows_max)
    if most is not None:
        return max(fewest, -(-k // max(1, min(most, rows_max))))
    items = npanels * ntiles - npanels * (npanels - 1) / 2
    a, b, d, e = _TRIANGLE_MODEL[size]

    def predicted(chunks):
        kc = -(-k // chunks)
        rpw = _triangle_rpw(kc, size)
        path = (npanels + chunks) * (a + b * (-(-kc // rpw) * rpw))
        work = chunks * items * (d + e * kc) / nsm
        return max(work, path + work / 2)
    return min(range(fewest, max(fewest, -(-k // 32)) + 1), key=predicted)


def _structured_blocks(n, item):
    """``structured_update``'s blocks of 64 rows and blocks per segment of its apply:
    at least 8, and at most 16 segments (each keeps a copy of z, k x n); 5 in double up
    to 80 blocks.  In double (one thread block per SM) the apply's jobs get only the SMs
    that the solve leaves, and a job holds its SM while it waits for its rows, so shorter
    jobs keep up with the chain better there.  On an H100 (A/B with each build in its own
    process, k = 1, 16, 64, new array) 5 against 8 took the update in double to 0.95 to
    0.97 of the time at n = 2000, 0.96 to 0.98 at 3000 and 0.97 to 0.995 at 5000 (in
    place 0.95 to 0.997); patched in one process it had left float within 1.2 percent
    at n = 5000 and made double at n = 10000 0.5 to 9 percent slower (segments of 3 to
    6).  In float at n = 10000 (157 blocks) segments of 4, 5 and 7 against 10 took 0.99 to
    1.05 of the time on an H200 (k = 1, 16, 64), and segments shortening towards the end
    (a segment followed by d blocks at most max(1, d // 2) long) 0.98 to 1.03 in both
    dtypes at n = 5000 to 20000 (``benchmarks/results/structured-phases-NVIDIA-H200.md``)."""
    nb = -(-n // 64)
    return nb, 5 if item == 8 and nb <= 80 else max(8, -(-nb // 16))


def _structured_smem(item, kp, ring=False):
    """Dynamic shared memory of ``structured_solve`` and ``structured_apply`` for values of
    ``item`` bytes and ``k`` padded to ``kp``: the solve's four 64 x 68 tiles (rows of
    68: see the kernel) and two 64 x kp blocks, and with ``ring`` (k = 1 on sm_90) two
    64 x 64 tiles more and 128 bytes to align them (``StRing``); the apply's R_I and Z
    (rows of 68), F and P_I.  The rows of the kp-wide blocks are padded to kp + 4 where
    kp is a multiple of 8, and those of F to 36 values in double, 40 in float (``st_kp_ld``,
    ``st_f_ld``); in float, for the product in 3xTF32, Z has kp rounded up to 8 rows and
    F is held twice, split (``st_apply_out``; the most that float asks, for any k)."""
    kl = kp + 4 if kp % 8 == 0 else kp
    if item == 8:
        apply = (32 + kp) * 68 + (32 + kp) * 36 + 32 * kl
    else:
        kz = -(-kp // 8) * 8
        apply = (32 + kz) * 68 + 2 * (32 + kz) * 40 + 32 * kl
    return (4 * 64 * 68 + 2 * 64 * kl + 2 * 64 * 64 * ring) * item + 128 * ring, apply * item


@functools.lru_cache(maxsize=None)
def _structured_kernels(item, width=64):
    """``structured_solve``, ``structured_apply`` and ``structured_update`` (the two in
    one launch) for values of ``item`` bytes, with the solve's kernels for k up to
    ``width`` (1, 16 or 64; see the kernel file), each allowed the shared memory of the
    largest k (the limit belongs to the function, so one value serves every launch)."""
    dt, w = ("f32" if item == 4 else "f64"), ("" if width == 64 else str(width))
    solve, apply = _structured_smem(item, 64)
    solve = max(solve, _structured_smem(item, 4, ring=_ring(width))[0])
    both = max(solve, apply, _alone_smem() if item == 4 else 0)
    fns = []
    a = "1" if width == 1 else ""       # k = 1: its own apply (float: M_II in closed form)
    for name, smem in ((f"structured_solve{w}_{dt}", solve),
                       (f"structured_apply{a}_{dt}", apply),
                       (f"structured_update{w}_{dt}", both)):
        fn = kernels().get_function(name)
        fn.max_dynamic_shared_size_bytes = smem
        fns.append(fn)
    return fns


@functools.lru_cache(maxsize=None)
def _has_tma():
    """Whether the current device copies tensor tiles by itself (TMA: sm_90 and later)."""
    import cupy as cp
    return int(cp.cuda.Device().compute_capability) >= 90


def _ring(width):
    """Whether the solve's kernels for k up to ``width`` (see :func:`_structured_kernels`)
    load R's tiles by bulk tensor copies into a ring of shared memory (``StRing``)."""
    return width == 1 and _has_tma()


#: R's tensor map where the kernels of k = 1 load R's tiles by themselves (see
#: :func:`_tensor_map`)
_NO_TENSOR_MAP = np.zeros(1, dtype=np.dtype((np.void, 128)))


@functools.lru_cache(maxsize=64)
def _tensor_map(ptr, n, row_bytes, item):
    """R's tensor map (``cuTensorMapEncodeTiled``, 128 bytes, as a one-value array that
    a launch passes by value) for the bulk tensor copies of 64 x 64 tiles in which the
    solve of k = 1 loads R (``StRing`` in the kernel file): R n x n of values of ``item``
    bytes at ``ptr``, its rows ``row_bytes`` apart, zeros past its edges.  Made by the
    host, as CUDA requires, and passed as a kernel parameter: it then goes with the
    launch into a CUDA graph.  :data:`_NO_TENSOR_MAP` where the copies cannot serve (no
    TMA, or an address or row stride not a positive multiple of 16 bytes)."""
    import ctypes
    if not _has_tma() or row_bytes <= 0 or (ptr | row_bytes) % 16:
        return _NO_TENSOR_MAP
    encode = _launch_ex()[0].cuTensorMapEncodeTiled
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    encode.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p,
                       ctypes.POINTER(u64), ctypes.POINTER(u64), ctypes.POINTER(u32),
                       ctypes.POINTER(u32)] + [ctypes.c_int] * 4
    buf = np.zeros(192, dtype=np.uint8)
    tmap = buf[-buf.ctypes.data % 64:][:128]                 # 64-byte aligned, as CUDA asks
    # data type FLOAT32 (7) or FLOAT64 (8); rank 2, columns first; boxes of 64 x 64, every
    # element; no interleave, no swizzle, L2 promotion of 128 bytes (2), zeros out of bounds
    status = encode(tmap.ctypes.data, 7 if item == 4 else 8, 2, ptr, (u64 * 2)(n, n),
                    (u64 * 1)(row_bytes), (u32 * 2)(64, 64), (u32 * 2)(1, 1), 0, 0, 2, 0)
    if status:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed (CUresult {status})")
    return tmap.copy().view(_NO_TENSOR_MAP.dtype)


#: float's one launch of the structured update takes a whole SM per thread block (not
#: two) while the solve's blocks are at most this share of the SMs, by the solve's
#: kernels (k = 1, 1 < k <= 16, k <= 64): see :func:`_structured_plan`
_STRUCTURED_ALONE = {1: 0.6, 16: 0.6, 64: 0.75}


@functools.lru_cache(maxsize=None)
def _alone_smem():
    """Dynamic shared memory that leaves room for one thread block per SM (more than
    half an SM's), or 0 where a block may not ask that much."""
    import cupy as cp
    attrs = cp.cuda.Device().attributes
    half = attrs["MaxSharedMemoryPerMultiprocessor"] // 2 + 1
    return half if half <= attrs["MaxSharedMemoryPerBlockOptin"] else 0


def back_solve(R, y, check=False):
    """``x`` with ``R x = y`` for an upper triangular ``R`` (n x n, float32 or float64,
    rows contiguous) and one right-hand side ``y`` (n,), in one launch of
    ``back_solve`` (``kernels/structured.cu``): a block per 64 rows, the diagonal blocks
    inverted while they wait for the rows below.  Reads only ``triu(R)``, and ``y`` with
    its own stride (a column of a row-major array: no copy).  A zero on the diagonal
    gives non-finite values; with ``check``, returns ``(x, singular)``, ``singular`` a
    device int that the launch sets to 1 where R's diagonal holds a zero (the test of
    :func:`qrlab.backend.solve_triangular`, made by the blocks that read the diagonal
    anyway: no launches of its own, and reading it waits for the solve alone)."""
    import cupy as cp
    n, item = R.shape[0], R.dtype.itemsize
    if (R.strides[1] != item or R.dtype != y.dtype or item not in (4, 8)
            or y.strides[0] % item):
        raise ValueError("back_solve: R needs contiguous rows, and y R's real dtype "
                         "(whole values apart)")
    x = cp.empty(n, dtype=R.dtype)
    nb = -(-n // 64)
    # ticket, a flag per block, singular: one memset
    sync = cp.zeros(2 + nb, dtype=cp.int32)
    if n:
        smem = (2 * 64 * 68 + 32 * 68 + 64) * item
        fn = kernels().get_function("back_solve_" + ("f32" if item == 4 else "f64"))
        fn.max_dynamic_shared_size_bytes = smem
        fn((nb,), (256,), (R, np.int64(R.strides[0] // item), y,
                           np.int64(y.strides[0] // item), x, np.int32(n), sync),
           shared_mem=smem)
    return (x, sync[1 + nb]) if check else x


#: copy_rows' kernel for each (kind, item size): real values, or complex as bytes
_COPY_KERNELS = {("f", 4): "f32", ("f", 8): "f64", ("c", 8): "b8", ("c", 16): "b16"}


def copy_rows(A, first=(0, 0), upper=False, scale=None, out=None, rows=None):
    """A new row-major copy of the 2-D ``A`` (any strides) in one launch of ``copy_rows``
    (``kernels/copy.cu``, tiles through shared memory: 2.7 TB/s read and written on an
    H100, where CuPy's copy of a column-major array runs at 1): rows ``k .. k + p`` first
    for ``first = (k, p)``, each row ``i`` times ``scale[i]`` (real ``A``), zero below the
    diagonal with ``upper``; see :func:`qrlab.backend.working_copy`.  With ``out`` (a
    C-contiguous array of A's shape and dtype) and ``rows = (r0, r1)``, only rows
    ``r0 .. r1`` of the copy, written into ``out``.  Returns None for what the kernel does
    not take (other dtypes, strides that are not whole elements)."""
    import cupy as cp
    m, n = A.shape
    item = A.dtype.itemsize
    name = _COPY_KERNELS.get((A.dtype.kind, item))
    if (name is None or any(s % item for s in A.strides)
            or (scale is not None and A.dtype.kind != "f")):
        return None
    out = cp.empty((m, n), dtype=A.dtype) if out is None else out
    r0, r1 = (0, m) if rows is None else rows
    if n and r1 > r0:
        k, p = first
        if scale is not None:
            scale = cp.ascontiguousarray(scale, dtype=A.dtype)
        kernels().get_function("copy_rows_" + name)(
            (-(-n // 32), -(-(r1 - r0) // 32)), (32, 8),
            (A, np.int64(A.strides[0] // item), np.int64(A.strides[1] // item), out,
             np.int32(r1), np.int32(n), np.int32(k), np.int32(p),
             np.uint64(0) if scale is None else scale, np.int32(bool(upper)), np.int32(r0)))
    return out


@functools.lru_cache(maxsize=64)
def _structured_table(n, item, device, follow):
    """The jobs of ``structured_apply`` for order n, one int4 per thread block: (tile of
    64 columns, segment, first row, end row); segment -1 zeroes rows below the diagonal
    block.  After the solve (follow false): tiles from the last (the tallest) first.
    Following it in the same launch: segment by segment, the order in which the solve
    makes them ready, and no zeros (the solve's blocks write them while they wait).
    Made once per n (and item size and device)."""
    import cupy as cp
    del device                                   # (part of the cache key)
    nb, sb = _structured_blocks(n, item)
    seg = 64 * sb
    jobs = []
    for t in reversed(range(nb)):
        top = min(64 * t + 64, n)
        jobs += [(t, s, s * seg, min(s * seg + seg, top)) for s in range(-(-top // seg))]
        if not follow:
            jobs += [(t, -1, r, min(r + seg, n)) for r in range(top, n, seg)]
    if follow:
        jobs.sort(key=lambda job: job[1])
    return cp.asarray(np.array(jobs, dtype=np.int32))


class _StructuredPlan(NamedTuple):
    """What ``structured_update`` needs for one (n, k, itemsize, device, follow) beside its
    arrays: the kernels with their grids and shared memory, the apply's jobs, where the
    parts of its workspace start (bytes: P, Zs, F, G) and where its flags start (after
    the values) and how many bytes they take; ``ring``: whether its solve loads R's tiles
    by bulk tensor copies (k = 1 on sm_90; it then takes R's tensor map)."""
    kernels: tuple
    grids: tuple
    smem: tuple
    table: object
    sb: int
    parts: tuple
    sync_at: int
    sync_bytes: int
    ring: bool


@functools.lru_cache(maxsize=256)
def _structured_plan(n, k, item, device, follow):
    """The :class:`_StructuredPlan` of ``structured_update`` (made once per key).

    The workspace holds P (npad x kp), z at each segment's start (segment 0 starts from
    W: unused), F (per 32 rows, (32 + kp) x 32) and G (per block, kp x kp), then the
    flags: ticket, fail, non-finite, zero, per block flags for P, G, z written and F
    written and a count of the apply's jobs done in its tile of 64 columns (each part
    padded to 16 bytes), and a count of the solve's blocks done (4 ints), then for
    k <= 16 P again, as words that say they have come (per block, k = 1: 64 values beside
    tags, 8 or 16 bytes each; else 64 x 16 values), zeroed with the flags.

    In float two thread blocks fit on an SM, and a block of the solve then shares its SM
    with one of the apply (or of the solve), which slows its steps of the chain.  Where
    the solve's blocks are few enough to leave SMs for the apply (``_STRUCTURED_ALONE``),
    the one launch asks for more than half an SM's shared memory, so that every block
    has an SM to itself.  On an H100 (132 SMs; float32, a new array, median of 8
    interleaved in one process, the same results bit for bit), one block per SM took
    0.80 of the time for k = 64 at n = 3000, 4000 and 5000, 0.88 at 6000, 0.99 at 7000
    and 1.11 at 8000 (79, 94, 110 and 125 blocks of the solve at n = 5000 to 8000); for
    k = 16 0.86 to 0.90 at n = 3000 to 5000, 0.97 at 6000, 1.07 at 7000 and 1.16 at
    8000; for k = 1 0.90 at 3000, 0.975 at 5000 and 1.03 at 6000; for k = 256 (four
    passes) 0.85, 0.82, 0.92 and 1.04 at n = 3000, 5000, 6000 and 7000; within 1
    percent at n = 1000 and 2000."""
    kp = -(-k // 4) * 4
    nb, sb = _structured_blocks(n, item)
    npad, nseg = nb * 64, -(-nb // sb)
    nf = 2 * nb * (32 + kp) * 32
    values = (1 + nseg) * npad * kp + nf + nb * kp * kp
    parts = tuple(item * at for at in (0, npad * kp, (1 + nseg) * npad * kp,
                                       (1 + nseg) * npad * kp + nf))
    width = 1 if k == 1 else 16 if k <= 16 else 64       # the solve's kernels
    tagged = nb * 64 * {1: 2, 16: 16, 64: 0}[width] * item
    sync_bytes = 4 * (8 + 5 * -(-nb // 4) * 4) + tagged
    solve, apply, both = _structured_kernels(item, width)
    ring = _ring(width)
    smem1, smem2 = _structured_smem(item, kp, ring)
    table = _structured_table(n, item, device, follow)
    if follow:
        one = max(smem1, smem2)                     # the one launch's shared memory
        if item == 4 and nb <= _STRUCTURED_ALONE[width] * _sm_count():
            one = max(one, _alone_smem())
        kernels, grids, smem = (both,), ((nb + table.shape[0],),), (one,)
    else:
        kernels, grids, smem = (solve, apply), ((nb,), (table.shape[0],)), (smem1, smem2)
    return _StructuredPlan(kernels, grids, smem, table, sb, parts, item * values,
                           sync_bytes, ring)


def _structured_workspace(plan, dt):
    """The workspace of a structured launch (its values, then its flags, zeroed on the
    current stream) and its report in pinned host memory that the GPU writes:
    ``(work, where the flags start, the report as 4 int32, its device address)``."""
    return _structured_workspaces([plan], dt)[0]


def _structured_workspaces(plans, dt):
    """``_structured_workspace`` for each of several launches (passes) in one allocation,
    every launch's flags side by side at its end and zeroed by one memset (one call of
    the host before the first launch, not one per pass), and one pinned report each."""
    import cupy as cp
    item = dt.itemsize
    values = [plan.sync_at // item for plan in plans]
    flags = [-(-plan.sync_bytes // 16) * 16 // item for plan in plans]
    work = cp.empty(sum(values) + sum(flags), dtype=dt)
    found = cp.cuda.alloc_pinned_memory(16 * len(plans))
    reports = np.frombuffer(found, np.int32, 4 * len(plans))
    reports[:] = 0
    to_host = cp.cuda.runtime.pointerGetAttributes(found.ptr).devicePointer
    flags_at = work.data.ptr + item * sum(values)
    cp.cuda.runtime.memsetAsync(flags_at, 0, item * sum(flags),
                                cp.cuda.get_current_stream().ptr)
    out, at = [], 0
    for p in range(len(plans)):
        out.append((work[at:at + values[p]], flags_at, reports[4 * p:4 * p + 4],
                    np.uint64(to_host + 16 * p)))
        at += values[p]
        flags_at += item * flags[p]
    return out


def _structured_outcome(report, n):
    """Wait for the report of a structured launch (written by the last block of its
    solve), and return ``(fail, zero, nonfinite, grew)``: the first column whose pivot
    failed and the first zero on the diagonal (-1 if none), the bits of the values that
    are not finite (1: R, 2: W), and whether the growth test failed."""
    import cupy as cp
    current = cp.cuda.get_current_stream()
    if current.is_capturing():         # (recording a graph: this read of the device
        cp.cuda.runtime.streamSynchronize(current.ptr)   # refuses it, as it raises)
    looks = 0
    while not report[3]:
        looks += 1
        # (a launch that ended without its report failed: the stream says how)
        if (looks % 1024 == 0 and _stream_ended(current, cp.cuda.runtime.streamQuery)
                and not report[3]):
            raise RuntimeError("structured_update: the solve ended without its report")
    fail, bits, zero = (int(v) for v in report[:3])
    return (n - fail if fail else -1), (n - zero if zero else -1), bits & 3, bool(bits & 4)


#: what ``cudaStreamQuery`` returns while work on the stream is still running
_CUDA_NOT_READY = 600


def _stream_ended(stream, query):
    """Whether ``stream`` has no work left running (``query``: CuPy's
    ``runtime.streamQuery``, which returns the CUDA status).  Where its work failed (a
    kernel that faulted), the query returns that error, not success, so CuPy's
    ``Stream.done`` stays False: a loop waiting on it would never end.  Raises the error
    instead (by synchronising the stream, which raises it)."""
    status = query(stream.ptr)
    if status in (0, _CUDA_NOT_READY):
        return status == 0
    stream.synchronize()
    raise RuntimeError(f"the CUDA stream reports error {status}")


@functools.lru_cache(maxsize=None)
def _launch_ex():
    """The driver (ctypes) with ``cuLaunchKernelEx``, and its CUlaunchAttribute and
    CUlaunchConfig as ctypes structures."""
    import ctypes

    class Attribute(ctypes.Structure):            # an id, then a union of 64 bytes
        _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_int), ("value", ctypes.c_int * 16)]

    class Config(ctypes.Structure):
        _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                    ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                    ("attrs", ctypes.POINTER(Attribute)), ("count", ctypes.c_uint)]

    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuLaunchKernelEx.argtypes = [ctypes.POINTER(Config), ctypes.c_void_p,
                                        ctypes.c_void_p, ctypes.c_void_p]
    return driver, Attribute, Config


def _launch_dependent(fn, grid, block, args, smem):
    """``fn(grid, block, args, shared_mem=smem)`` on the current stream as a programmatic
    dependent launch (the launch attribute PROGRAMMATIC_STREAM_SERIALIZATION, through the
    driver's ``cuLaunchKernelEx``: CuPy's launch sets no attributes).  Its blocks may start
    once every block of the kernel before it on the stream has started and executed
    ``griddepcontrol.launch_dependents``, rather than once that kernel has ended; what it
    reads of that kernel's results it must wait for itself (``st_update``'s flags)."""
    import ctypes

    import cupy as cp
    driver, Attribute, Config = _launch_ex()
    attr = Attribute(6)          # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value[0] = 1
    config = Config((ctypes.c_uint * 3)(*grid, *(1,) * (3 - len(grid))),
                    (ctypes.c_uint * 3)(*block, *(1,) * (3 - len(block))), smem,
                    cp.cuda.get_current_stream().ptr, ctypes.pointer(attr), 1)
    # (a NumPy array of one value, as CuPy's launch takes it: that value's bytes)
    values = [ctypes.c_uint64(a.data.ptr) if isinstance(a, cp.ndarray)
              else ctypes.create_string_buffer(a.tobytes()) if isinstance(a, np.ndarray)
              else np.ctypeslib.as_ctypes_type(a.dtype)(a.item()) for a in args]
    params = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    function = fn.kernel.ptr                      # (RawKernel.kernel: the CUfunction)
    status = driver.cuLaunchKernelEx(ctypes.byref(config), function, params, None)
    if status != 0:
        raise RuntimeError(f"cuLaunchKernelEx failed (CUresult {status})")


def _strip_smem(size, q):
    """Dynamic shared memory of ``sweep_strips`` (``kernels/strips.cu``) with ``q`` sweeps
    per warp: 16 waves of the earlier strips' c and s (32 q sweeps), the rows between its
    32 warps (two of 32 each) and five rows of D coming in."""
    return (2 * 16 * 32 * q + 32 * 2 * 32 + 5 * 32) * size


def _strip_sweeps_per_warp(sweeps):
    """The fewest sweeps per warp of ``sweep_strips`` (2, 4 or 8) with which its 32 warps
    hold ``sweeps``: fewer per warp make shorter waves."""
    return 2 if sweeps <= 64 else 4 if sweeps <= 128 else 8


def _pipeline_pays(vectors, p, size):
    """Whether passes of 32 sweeps run pipelined (:func:`_strip_passes`) should make a
    sweep faster: where the rotation kernel bounds it, that is where the apply kernel's
    work spread over the SMs takes less than 3/4 of one launch's time a wave.  Pipelined,
    a wave takes less time but more SMs, which the apply kernel and the products beside
    it then lack.  On an H100 a wave of one launch of ``s`` sweeps took about
    0.35 + 0.0047 s us in float32 and 0.52 + 0.0058 s in float64, and the apply kernel
    43 and 75 ps of an SM per vector (a row of Q or a column of R), sweep and wave.  With
    that rule, against passes one after the other (every cell of 000 Tables 2, 3, 10 and
    11, median of 7 interleaved in one process): 0.67 to 0.94 of the time for adding 200
    columns to 4000 x 3000 (k <= 2000), 8000 x 3000 (k = 0) and 8000 x 6000 (k <= 4500),
    removing 100 rows of 8000 x 6000, 60 rows of 12000 x 8000 or 10000 and 80 of
    12000 x 8000 (float32; in float64 0.71 to 0.87 adding 200 columns to 4000 x 3000,
    k <= 2000, and removing 100 rows of 8000 x 6000); where else it pipelines, 0.96 to
    1.024.  Pipelining every sweep of 100 or 200 instead made the update 1 to 3 percent
    slower with 12000 or 16000 rows of Q, which this rule leaves alone
    (``benchmarks/results/pipeline-passes-*.md``)."""
    wave_us = (0.35 + 0.0047 * min(p, 256)) if size == 4 else (0.52 + 0.0058 * min(p, 256))
    apply_us = vectors * p * (43e-6 if size == 4 else 75e-6) / _sm_count()
    return apply_us < 0.75 * wave_us


def _strip_passes(p, per_launch, per_pass, max_blocks, pays=True):
    """Sweeps per pass of the rotation kernel, and whether its passes run pipelined in one
    launch.  A pass of fewer sweeps makes shorter waves (its block's warps hold fewer), so
    where that ``pays`` (:func:`_pipeline_pays`) the passes of ``per_pass`` sweeps run at
    once, each a chunk of waves behind the pass before over the same strip, as long as
    their blocks (one per strip and pass) number at most ``max_blocks``; else passes of
    ``per_launch`` one after the other."""
    if pays and per_pass and p > per_pass and per_pass % 32 == 0:
        strips = -(-p // 32)
        blocks = sum(strips - s // 32 for s in range(0, p, per_pass))
        if blocks <= max_blocks:
            return per_pass, True
    return min(p, per_launch), False


def sweep_waves(op: Sweeps):
    """``B`` and every sweep's first and last wave (arrays; first > last for a sweep
    without rotations).  Rotation ``i = B - t + 2 s`` of sweep ``s`` runs at wave ``t``
    while ``tops[s] < i < bottoms[s]``, that is for
    ``B - bottoms[s] + 2 s < t < B - tops[s] + 2 s``."""
    tops = np.asarray(op.tops, dtype=np.int64)
    bottoms = np.asarray(op.bottoms, dtype=np.int64)
    s = np.arange(len(tops))
    B = int(bottoms.max()) - 1
    return B, B - bottoms + 2 * s + 1, B - tops + 2 * s - 1


def wave_groups(op: Sweeps, nbw: int):
    """Host-side schedule of ``op`` in groups of ``nbw`` waves: ``B``, the number of
    waves, and for every group the lowest and highest row its rotations touch (``lo``,
    ``hi`` exclusive; a group without rotations gets ``lo`` = int64 max, ``hi = -1``).
    Each group's rows follow from the first and last wave of each sweep inside it
    (:func:`sweep_waves`), in O(groups x p) without a device round trip."""
    B, first, last = sweep_waves(op)
    s = np.arange(len(first))
    busy = first <= last
    big = np.iinfo(np.int64).max
    if not busy.any():
        return B, 0, np.array([big]), np.array([-1])
    nwaves = int(last[busy].max()) + 1
    t0 = np.arange(0, nwaves, nbw)[:, None]
    t_first = np.maximum(t0, first)                            # groups x sweeps
    t_last = np.minimum(np.minimum(t0 + nbw, nwaves) - 1, last)
    active = t_first <= t_last
    lo = np.where(active, B - t_last + 2 * s - 1, big).min(axis=1)
    hi = np.where(active, B - t_first + 2 * s + 1, -1).max(axis=1)
    return B, nwaves, lo, hi


def apply_waves(p, size):
    """Waves per group of the sweeps' apply kernel for ``p`` sweeps of ``size``-byte
    values: 256 for float32 and 128 for float64, or as many fewer (a multiple of 16) as
    fit its shared memory (a group's rows, about ``waves + 2 p``, are one tile).  Removing
    20 or 100 rows of a 12000 x 6000 or 12000 x 10000 factorization and adding 200
    columns at the front of a 12000 x 3000 one took the same or less with 256 than with
    400 to 1024 waves in float32 (H100): the groups follow the rotation kernel closely,
    and a tile of fewer rows lets two blocks share an SM.  In float64 that takes 128:
    removing 100 rows of 12000 x 6000, 13.4 ms with 256 and 11.4 with 128."""
    k, nwarp = _apply_warps(p, size)
    nbw = 256 if size == 4 else 128
    while nbw > 16 and _apply_smem(nbw + 2 * p, nwarp, k, size) > _SMEM_LIMIT:
        nbw -= 16
    return nbw


#: the most warps per block of the sweeps' apply kernel (each takes K sweeps; more
#: sweeps are taken in turns)
_APPLY_WARPS = 16


def _apply_warps(p, size):
    """Sweeps per warp of the apply kernel (its K: 1, 2, 4 or 8) for ``p`` sweeps of
    ``size``-byte values, and its warps per block.  More sweeps per warp make fewer shared
    memory accesses per rotation and fewer warps to fill the pipeline with, but the last
    warp's spare sweeps are wasted work, and eight float64 rows and their (c, s) do not
    fit the registers (spilled, removing 100 rows of 12000 x 6000 took 11.5 ms against
    11.4 with four).  Fewer warps, so that the last round of chunks is full (13 for 25),
    took 1.0 to 1.08 of the time, and eight float64 sweeps a warp at 128 registers (8
    warps a block) 0.98 to 1.07 (``results/apply-step-*.md``)."""
    k = 8 if p > 64 else 4 if p > 8 else 2 if p > 2 else 1
    k = min(k, 4) if size == 8 else k
    return k, min(_APPLY_WARPS, -(-p // k))


def _apply_smem(rows, nwarp, k, size):
    """Dynamic shared memory of the apply kernel: a tile of ``rows`` rows of 32 vectors
    (pitch 33, rounded to 16 bytes), and per warp 16 waves of its ``k`` sweeps' (c, s)."""
    return (-(-rows * 33 // 4) * 4 + nwarp * 16 * k * 2) * size


@functools.lru_cache(maxsize=64)
def _sweep_schedule(op: Sweeps, nbw, device):
    """What :meth:`GpuExecutor.sweeps` needs of ``op``'s schedule in groups of ``nbw``
    waves, made once per operation of a plan (and device), not on every update: on the
    host ``B``, the number of waves and each group's rows ``lo`` and ``hi``
    (:func:`wave_groups`, an empty group's set to 0, 0: no work); on the device the int32
    arrays ``tops``, ``bottoms``, ``lo``, ``hi``.  (Removing 20 rows of 12000 x 6000 spent a
    quarter of its host time, which the GPU waits for, making them.)"""
    import cupy as cp
    del device                                   # (part of the cache key)
    B, nwaves, lo_g, hi_g = wave_groups(op, nbw)
    empty = hi_g < 0
    lo_g[empty], hi_g[empty] = 0, 0
    p, ng = len(op.tops), len(lo_g)
    ints = cp.asarray(np.concatenate([op.tops, op.bottoms, lo_g, hi_g]).astype(np.int32))
    cp.cuda.get_current_stream().synchronize()   # (once) before any other stream reads them
    return B, nwaves, lo_g, hi_g, (ints[:p], ints[p:2 * p], ints[2 * p:-ng], ints[-ng:])


#: ints per pass in the rotation kernel's table of passes (``STRIP_PASS``, kernels/strips.cu)
_STRIP_PASS = 6


@functools.lru_cache(maxsize=64)
def _strip_table(op: Sweeps, per_launch, device):
    """The passes of ``op``'s rotation kernel with ``per_launch`` sweeps each (those where
    a sweep rotates), made once: on the host a tuple of (first sweep, end sweep, first
    wave, end wave, where its strips' counts of waves done start, its strips) per pass,
    and the same as a device int32 array (:data:`_STRIP_PASS` ints a pass)."""
    import cupy as cp
    del device                                   # (part of the cache key)
    _, t_first, t_last = sweep_waves(op)
    p, passes, strips = len(op.tops), [], 0
    for s_lo in range(0, p, per_launch):
        s_hi = min(p, s_lo + per_launch)
        busy = t_first[s_lo:s_hi] <= t_last[s_lo:s_hi]
        if busy.any():
            nstrips = -(-(p - s_lo) // 32)
            passes.append((s_lo, s_hi, int(t_first[s_lo:s_hi][busy].min()),
                           int(t_last[s_lo:s_hi][busy].max()) + 1, strips, nstrips))
            strips += nstrips
    table = cp.asarray(np.array(passes, dtype=np.int32).reshape(-1))
    cp.cuda.get_current_stream().synchronize()   # (once) before any other stream reads it
    return tuple(passes), table


def wave_rows(op: Sweeps):
    """The schedule of ``op`` wave by wave: :func:`wave_groups` with groups of one."""
    return wave_groups(op, 1)


#: a fail slot that no breakdown has written: every byte 0x7f (one memset), above any
#: column, so that the kernels' atomicMin keeps the first failing column
_NO_FAIL = 0x7F7F7F7F


def _no_fail(slot):
    """``slot`` (one int32 on the device) set to :data:`_NO_FAIL` on the current stream."""
    slot.data.memset_async(0x7F, 4)
    return slot


def _reflects(plan, kind):
    """The plan's operations if it is of ``kind`` and all Householder panels, else None."""
    ops = list(plan.ops()) if plan.kind == kind else []
    return ops if ops and all(isinstance(op, Reflect) for op in ops) else None


def _triangle_lead(plan):
    """:meth:`GpuExecutor.triangle_rows` read off the plan alone (once per plan)."""
    ops = _reflects(plan, "insert_rows")
    if ops is None or len(ops[0].rows) != 2:
        return None
    new = ops[0].rows[1]
    count, n = 0, 0
    for op in ops:
        c1 = op.cols[1]
        # the diagonal rows n .. c1 and the new rows (one span where c1 meets them)
        rows = ((n, new[1]),) if c1 == new[0] else ((n, c1), new)
        if op.cols[0] != n or op.rows != rows:
            break
        count, n = count + 1, c1
    return (n, new, ops[count:]) if count else None


def _triangle_band(plan):
    """:meth:`GpuExecutor.triangle_cols` read off the plan alone (once per plan)."""
    if plan.kind not in ("delete_cols", "rank_update"):
        return None
    ops = list(plan.ops())
    first = len(ops)                 # the band: the Householder panels that end the plan
    while first and isinstance(ops[first - 1], Reflect):
        first -= 1
    if first == len(ops):
        return None
    k, p = ops[first].cols[0], ops[first].rows[0][1] - ops[first].cols[1]
    c0 = k
    for op in ops[first:]:
        if op.cols[0] != c0 or op.rows != ((c0, op.cols[1] + p),):
            return None
        c0 = op.cols[1]
    return (k, p, c0 - k, tuple(ops[:first])) if p > 0 else None


class GpuExecutor(Executor):
    """Executor for CuPy arrays: fused kernels for Givens sweeps and Householder panels
    (real dtypes)."""

    threads = 1024
    #: device ints for reflect_panel (its panel counter, a spare fail slot), made on first use
    _scratch = None
    #: run a triangle update as one cooperative launch (when False, one reflect_panel
    #: launch per panel)
    one_launch = True
    #: the most rows of B per chunk of the one launch (its chunks run pipelined); None:
    #: as many chunks as :func:`_triangle_chunks` predicts fastest
    triangle_chunk = None
    #: sweeps per launch of the rotation kernel (at most 256, what its registers hold)
    sweeps_per_launch = 256
    #: sweeps per pass of the rotation kernel when its passes run pipelined in one launch
    #: (a multiple of 32; None: never), as long as their blocks number at most
    #: :attr:`pipeline_blocks` (None: the SMs)
    sweeps_per_pass = 32
    pipeline_blocks = None
    #: pipeline the passes wherever they fit, not only where that should pay
    #: (:func:`_pipeline_pays`)
    pipeline_always = False
    #: sweeps per warp of the rotation kernel (2, 4 or 8); None: the fewest that hold a
    #: launch's sweeps (:func:`_strip_sweeps_per_warp`)
    strip_sweeps_per_warp = None
    #: apply the rotations beside the rotation kernel, on another stream, when it is one
    #: launch (else after it)
    overlap_groups = True
    #: make the working copies of removing rows beside the rotation kernel
    #: (:meth:`working_copies`)
    copies_behind = True
    #: with Q, run adding rows, removing columns and a rank update's band as one triangle
    #: launch and two GEMMs of Q (:meth:`_triangle_with_q`; else panel by panel)
    triangle_keeps_q = True

    def panel_width(self, p, dtype):
        """Columns per Householder panel for a block of ``p``: the widest of 32, 16, 8 whose
        ``(p + w) x w`` panel fits the shared memory of the fused panel kernel
        (``kernels/reflect.cu``), else the widest up to 128 that fits :func:`panel_qr`."""
        size = np.dtype(dtype).itemsize
        for w in (32, 16, 8):
            if _reflect_smem(p + w, w, size) <= _SMEM_LIMIT:
                return w
        nb = 128
        while nb > 8 and (p + nb) * nb * size > _SMEM_LIMIT:
            nb //= 2
        return nb

    def run(self, plan, Q, R, operands=None):
        """As the reference executor, except where a plan is a triangle update
        (:meth:`triangle_update`, one launch): adding rows (without Q, then the plan's
        remaining panels: carried columns, a wide matrix) and removing columns; with Q,
        the identity carried and then two GEMMs of Q (:meth:`_triangle_with_q`).
        Without Q, where the triangle left is square (R was, carried columns included),
        the structured update may take it instead (:meth:`_square_triangle`)."""
        lead = self.triangle_rows(plan, Q, R, (operands or {}).get("carried"))
        if lead is not None:
            n, (b0, b1), rest = lead
            if Q is None:
                # a square R (carried columns included): its new triangle at once
                square = b0 == R.shape[1]
                if not (square and self._square_triangle(R[:b0], R[b0:b1], R[:b0],
                                                         R[b0:b1])):
                    self.triangle_update(R[:n], R[b0:b1], 1, positive=False, check=False)
                    for op in rest:
                        self.reflect(op, Q, R)
            else:
                self.flush()
                rows, X = self._triangle_with_q(Q, R, (0, n), (b0, b1), 0)
                R[:n], R[b0:b1] = rows[:n], rows[n:]
                Q[:, :n], Q[:, b0:b1] = X[:, :n], X[:, n:]
            return Q, R
        band = self.triangle_cols(plan, Q, R)
        if band is not None:
            # after the plan's lead (a rank update's sweeps and rank-p term), rows k .. k + p
            # of the columns past k are dense, the rows below them a triangle: reduce
            # [T; B] to [T'; 0], then put T' on rows k .. and the rows of B (zero but for
            # carried columns: the residual) below it; with Q, Q's columns in the rows'
            # new order: the triangle's, then the p
            k, p, n_tri, lead = band
            for op in lead:
                self.run_op(op, Q, R, operands)
            self.flush()
            if Q is None:
                S, B = R[k + p:, k:], R[k:k + p, k:]
                # rows past the band square with its columns (carried ones included):
                # the new triangle of S at once, put on rows k ..
                end = R.shape[0] - p
                if not (S.shape[0] == S.shape[1]
                        and self._square_triangle(S, B, R[k:end, k:], R[end:, k:])):
                    T = R[k + p:k + p + n_tri, k:]
                    self.triangle_update(T, B, 1, positive=False, check=False)
                    R[k:k + p + n_tri, k:] = working_copy(R[k:k + p + n_tri, k:],
                                                          first=(p, n_tri))
            else:
                rows, X = self._triangle_with_q(Q, R, (k + p, k + p + n_tri), (k, k + p), k)
                R[k:k + p + n_tri, k:] = rows
                Q[:, k:k + p + n_tri] = X
            return Q, R
        super().run(plan, Q, R, operands)
        self.flush()
        return Q, R

    def _launches_triangle(self, Q, R):
        """Whether a plan on these arrays may run as one launch of :meth:`triangle_update`:
        a real dtype it takes, contiguous rows, and no Q or (with :attr:`triangle_keeps_q`)
        a Q of R's dtype with contiguous rows, for :meth:`_triangle_with_q`."""
        keeps_q = Q is None or (self.triangle_keeps_q and Q.dtype == R.dtype
                                and Q.strides[1] == Q.itemsize)
        return (keeps_q and self.method != "paper" and self.launches_once(R.dtype)
                and R.flags.c_contiguous)

    def triangle_rows(self, plan, Q, R, carried=None):
        """For a plan that adds rows, the leading panels whose rows are their own diagonal
        block and the same new rows (a triangle update): ``(n, (b0, b1), rest)``, the
        triangle's size, the new rows and the panels after it; else None.  With Q, only
        where that is the whole plan (not a wide matrix) and at most one right-hand-side
        column is carried (``carried``: how many; None, not known).  With a full Q the
        carried columns are dense below R's triangle, and the plan reduces them too, so
        the triangle's last rows are those of R's rows past n: with two or more carried
        columns those rows have entries below the diagonal, which the triangle update
        does not read."""
        if not self._launches_triangle(Q, R) or (
                Q is not None and (carried is None or carried > 1)):
            return None
        lead = plan.derived(_triangle_lead)
        return lead if Q is None or (lead is not None and not lead[2]) else None

    def triangle_cols(self, plan, Q, R):
        """For a plan that removes ``p`` columns at ``k``, or makes a rank-p update
        (``k = 0``), ``(k, p, n_tri, lead)``: after the operations ``lead`` (the rank
        update's sweeps and rank-p term), its band panels, each spanning its columns and
        the ``p`` rows below, reduce rows ``k:`` of the columns past ``k``, ``p`` dense
        rows over a triangle of ``n_tri``; else None (a wide matrix, whose last panels
        are cut short).  The band covers R's own columns only, so carried ones (the rank
        update's Q^H U) are carried, with Q or without."""
        return plan.derived(_triangle_band) if self._launches_triangle(Q, R) else None

    def _triangle_with_q(self, Q, R, t, b, c0):
        """A triangle update that keeps Q, for :meth:`run`.  Its reflectors touch only
        R's rows ``t`` (a triangle from column ``c0``) and ``b`` (dense rows), and the
        columns of Q that go with them.  Those rows go into ``W = [R_t; R_b | I]``, which
        :meth:`triangle_update` reduces with the identity carried along: it ends as
        ``H^T``, the product of the reflectors on those rows, and ``Q_S H`` (Q_S: Q's
        columns ``t``, then ``b``) takes two GEMMs.  Returns the reduced rows
        (``[R_t'; 0]``, columns ``c0:``) and ``Q_S H``, for the caller to put in place.

        Panel by panel (a launch of ``reflect_panel``, then T and Q's columns gathered,
        multiplied and scattered back) the host spent about 0.7 ms a panel of 32
        columns.  On an H100, with the full Q, in float64, the same errors: adding a row
        to a 8000 x 1000 factorization took 23.4 ms that way and 3.6 this way (500 rows
        to 8000 x 3000: 127 and 13 ms); removing its first column 21.0 and 2.9 ms (500
        columns of 12000 x 3000: 144 and 12.5 ms)."""
        import cupy as cp
        (t0, t1), (b0, b1) = t, b
        nt, nc = t1 - t0, R.shape[1] - c0
        s = nt + b1 - b0
        W = cp.zeros((s, nc + s), dtype=R.dtype)
        W[:nt, :nc] = R[t0:t1, c0:]
        W[nt:, :nc] = R[b0:b1, c0:]
        W[:, nc:].diagonal().fill(1)           # (a view: no index arrays, no scatter)
        self.triangle_update(W[:nt], W[nt:], 1, positive=False, check=False)
        Ht = W[:, nc:]
        X = cp.empty((Q.shape[0], s), dtype=Q.dtype)
        gemm(Q[:, t0:t1], Ht[:, :nt].T, X)
        gemm(Q[:, b0:b1], Ht[:, nt:].T, X, beta=1.0)
        return W[:, :nc], X

    #: without Q, reduce ``[S; B]`` with a square triangle ``S`` (adding rows to a square
    #: R, removing columns of one) by the structured update (:meth:`_square_triangle`)
    #: where :meth:`square_passes` takes it, else by :meth:`triangle_update`
    square_by_structured = True

    def _square_triangle(self, S, B, dest, zero):
        """``[S; B] -> [S'; 0]`` without Q, for :meth:`run`: ``S`` (s x s, upper
        triangular) is square, so ``S'`` is the Cholesky factor of ``S^T S + B^T B``,
        which :meth:`structured_update_passes` makes with no chain of reflectors (each
        row of S times the sign of its diagonal entry, so S' has a positive diagonal).
        ``S'`` goes into ``dest`` (s x s, which may overlap ``S`` and ``B``), zeros into
        ``zero`` (the p rows that are left).
        Returns False, with nothing written, where the structured update does not take
        the case (:meth:`square_passes`; a CUDA graph being recorded, which cannot
        wait for its report) or does not succeed (a zero on S's diagonal, a value not
        finite): the caller then runs the chain of reflectors.

        Adding rows to the triangle of ``[A, b]`` (:class:`~qrlab.LeastSquaresQR` with
        ``q='none'``) and removing its columns are such updates: the right-hand side's
        column is one of the triangle's, and the corner entry carries the residual norm.
        Its error is within a few times the reflectors' unless the structured update's
        small factorizations cancel (a diagonal entry of S small beside the rest of its
        row, then about ``eps / ratio^2``, ``benchmarks/results/square-route-*.md``; or
        S nearly singular in other ways), so such an S (the growth test of
        :meth:`structured_update`, :attr:`growth_max`) goes to the chain too."""
        import cupy as cp
        s, p = S.shape[0], B.shape[0]
        if (not p or cp.cuda.get_current_stream().is_capturing()
                or not self.square_passes(S.dtype, s, p)):
            return False
        # (a diagonal entry small beside the rest of its row, a column nearly in the span
        # of those before it, fails the update's growth test: the chain of reflectors,
        # backward stable whatever S, takes such a triangle)
        out = cp.empty((s, s), dtype=S.dtype)
        if any(fail >= 0 or zero >= 0 or nonfinite or grew
               for fail, zero, nonfinite, grew in self.structured_update_passes(S, B, 1, out)):
            return False
        dest[...] = out
        zero.fill(0)
        return True

    def working_copies(self, Q, R, first=(0, 0)):
        """As the reference executor's, but with :attr:`copies_behind` only Q's first
        rows (those to remove, which drive the first operations) are copied now; the
        rest of Q and all of R are left to :meth:`flush`, which :meth:`sweeps` runs on
        its apply kernel's stream once the rotation kernel is launched.  So the rotation
        kernel, which needs only those rows, no longer waits for 1 to 2 GB of copies:
        removing 100 rows of 12000 x 6000 in float32, it started 1.7 ms into the update
        (H100), the copies taking 0.93 of them."""
        k, p = first
        if self.copies_behind and p:
            Q_w, R_w = copy_rows(Q, first, rows=(0, p)), copy_rows(R, rows=(0, 0))
            if Q_w is not None and R_w is not None:      # (R_w only allocated so far)
                def rest():
                    copy_rows(Q, first, out=Q_w, rows=(p, Q.shape[0]))
                    copy_rows(R, out=R_w)
                self._defer(rest, stales_driver=False, r_from=0)   # (Q's rows past p)
                return Q_w, R_w
        return super().working_copies(Q, R, first)

    # -- Householder panels: one fused launch each ------------------------------------
    def reflect(self, op: Reflect, Q, R):
        """Factor the panel and apply it to the trailing columns of R in one launch
        (``reflect_panel``); Q, when kept, gets the same reflectors by three GEMMs, left
        to :meth:`flush`: the next operation's first kernels need only R (the rotations
        of :meth:`sweeps` run beside those GEMMs; adding 200 columns at the front of a
        12000 x 3000 factorization spends 2.2 ms of its first stage on them).  A panel
        that this launch does not take (a tall one: the rows of ``Q^H U`` below R, or
        the rows of Q to remove) is factored now and all else is left to :meth:`flush`,
        its compact WY ``T`` included: the sweeps after it start from the panel alone,
        and each array operation queued before their launch is time the GPU waits."""
        if op.driver == "Q":
            # a panel of rows of Q (removing rows): found now, since the sweeps after it
            # start from those rows; its reflectors on the other rows of Q and on R (two
            # GEMMs over the columns past n, the larger part of the work) are left to
            # flush, which sweeps calls on the stream of its apply kernel, after what
            # was left before (the working copies) unless that changes the panel's rows
            if self._deferred_stales_driver:
                self.flush()
            return self._defer(super().reflect(op, Q, R, later=True), stales_driver=False,
                               r_from=self.reflect_cols_from(op))
        if self._deferred is not None:
            self.flush()                # (Q's copy first, if left: that work may need it)
        w, h = op.width, op.height
        (a0, a1), (b0, b1) = op.rows[0], (op.rows[1] if len(op.rows) == 2 else (0, 0))
        if (not self.fusable(R.dtype, h, w) or len(op.rows) > 2 or a1 - a0 < w
                or not R.flags.c_contiguous):
            # (a tall panel's QR starts Q's copy, if left, beside it: tall_qr)
            return self._defer(super().reflect(op, Q, R, later=True),
                               stales_driver=Q is not None, r_from=self.reflect_cols_from(op))
        import cupy as cp
        V = tau = None
        if Q is not None:
            V = cp.empty((h, w), dtype=R.dtype)
            tau = cp.empty(w, dtype=R.dtype)
        self.launch_reflect(R, a0, a1 - a0, R, b0, b1 - b0, 1, False, op.cols[0], w,
                            R.shape[1], V, tau)     # (one span of columns: zero_to unused)
        if Q is not None:
            rows = self.panel_rows(op, Q)
            self._defer(lambda: self.reflect_q(Q, rows, V, wy_factor(V, tau)),
                        stales_driver=True)

    #: work left for later (reflectors on Q, on R past a panel, the working copies): a
    #: callable, run by :meth:`flush`
    _deferred = None
    #: whether the deferred work leaves rows of Q that drive sweeps out of date
    _deferred_stales_driver = False
    #: the first column of R that the deferred work changes (sweeps driven by R's
    #: columns from there on wait for it)
    _deferred_r_from = np.inf

    def _defer(self, work, stales_driver, r_from=np.inf):
        """Leave ``work()`` to :meth:`flush`, after what is left already; ``stales_driver``:
        whether it changes rows of Q that drive sweeps; ``r_from``: the first column of R
        it changes."""
        before = self._deferred
        self._deferred = work if before is None else (lambda: (before(), work()))
        # (with nothing left, the marks are False and inf: flush clears them)
        self._deferred_stales_driver = self._deferred_stales_driver or stales_driver
        self._deferred_r_from = min(self._deferred_r_from, r_from)

    def _stales(self, op: Sweeps):
        """Whether the deferred work changes the lines that drive ``op``."""
        if op.driver == "Q":
            return self._deferred_stales_driver
        return self._deferred_r_from < op.lines[1]

    #: adding columns with the full Q: Q's working copy made on another stream beside
    #: the QR of the rows of ``Q^H U`` below R where ``tall_qr`` takes that panel
    #: (:meth:`working_copy_of_q`), else when the work left for later first needs it.
    #: On an H200 (float64, ``benchmarks/ab_paper_cells.py --rounds 2``) it took 0.96 of
    #: the time at 000 Table 2's 8000 x 3000, k = 3000, 0.96 at Table 3's 12000 x 6000,
    #: k = 4500, 0.98 at Table 5's 8000 x 3000, p = 500, and 1.00 at Table 3's
    #: 16000 x 6000, k = 0 (where the sweeps, not the path to them, take the time)
    copy_q_beside = True
    #: ``(Q, Q_w)``: the copy that :meth:`working_copy_of_q` left for later
    _q_copy = None

    def working_copy_of_q(self, Q):
        """As the reference executor's, but with :attr:`copy_q_beside` only allocated
        now: the copy is made beside the tall panel's QR that comes next (``tall_qr``,
        latency bound, leaves the SMs room and memory bandwidth to spare), not on the
        path before it; else by :meth:`flush`."""
        Q_w = copy_rows(Q, rows=(0, 0)) if self.copy_q_beside else None
        if Q_w is None:
            return super().working_copy_of_q(Q)
        self._q_copy = (Q, Q_w)
        return Q_w

    def _copy_q(self, gate=None):
        """Make the copy that :meth:`working_copy_of_q` left: now, on the current stream,
        or with ``gate = (event, counts, blocks)`` of a ``tall_qr`` launch (its stream
        before the launch, its grid barrier's count) on the side stream once every block
        of that launch has reached its first barrier (so that the copy's blocks do not
        hold back the cooperative launch's), the current stream then waiting for it."""
        job, self._q_copy = self._q_copy, None
        if job is None:
            return
        Q, Q_w = job
        if gate is None:
            copy_rows(Q, out=Q_w)
            return
        import cupy as cp
        event, counts, nb = gate
        side = _side_stream()
        side.wait_event(event)              # (all before the panel: the caller's Q too)
        with side:
            kernels().get_function("wait_for_waves")((1,), (32,), (counts, np.int32(nb)))
            copy_rows(Q, out=Q_w)
        cp.cuda.get_current_stream().wait_event(side.record())

    def flush(self):
        """Apply what was left for later, on the current stream."""
        self._copy_q()
        apply, self._deferred = self._deferred, None
        self._deferred_stales_driver, self._deferred_r_from = False, np.inf
        if apply is not None:
            apply()

    def run_op(self, op, Q, R, operands=None):
        """As the reference executor's; what was left for later is done first, except
        before a panel or sweeps (they know what the deferred work changes)."""
        if not isinstance(op, (Reflect, Sweeps)):
            self.flush()
        super().run_op(op, Q, R, operands)

    def reflect_q(self, Q, rows, V, T):
        """``Q[:, rows] = Q[:, rows] (I - V T V^H)`` by two cuBLAS products on Q's own
        columns (``Q[:, rows] -= ((Q[:, rows] V) T) V^H``), where they are one span and
        the dtype real: no copy of them in or out."""
        if not isinstance(rows, slice) or Q.dtype.kind != "f" or Q.strides[1] != Q.itemsize:
            return super().reflect_q(Q, rows, V, T)
        Qr = Q[:, rows]
        X = matmul(matmul(Qr, V), T)
        gemm(X, V.T, Qr, alpha=-1.0, beta=1.0)

    @staticmethod
    def fusable(dtype, h, w):
        """Whether ``reflect_panel`` takes an ``h x w`` panel of ``dtype``."""
        dtype = np.dtype(dtype)
        return (dtype.kind == "f" and dtype.itemsize in (4, 8) and 1 <= w <= 32 and h >= w
                and _reflect_smem(h, w, dtype.itemsize) <= _SMEM_LIMIT)

    def launch_reflect(self, A, a0, ha, B, b0, hb, sgn, positive, c0, w, ncols, V=None,
                       tau=None, fail=None):
        """One launch of ``reflect_panel``: the panel of rows ``A[a0:a0+ha]`` and
        ``B[b0:b0+hb]``, columns ``c0:c0+w``, reduced and applied to columns ``c0+w:ncols``
        under the signature ``diag(1, sgn)`` (see ``kernels/reflect.cu``).  ``A`` and
        ``B`` may be views with contiguous rows."""
        import cupy as cp
        dt = A.dtype
        if self._scratch is None:                       # one per executor (per update):
            self._scratch = cp.zeros(2, dtype=cp.int32)  # the panel counter, a fail slot
        counter = self._scratch[:1]
        fail = self._scratch[1:] if fail is None else fail
        smem = _reflect_smem(ha + hb, w, dt.itemsize)
        fn = kernels().get_function("reflect_panel_" + ("f32" if dt.itemsize == 4 else "f64"))
        fn.max_dynamic_shared_size_bytes = smem
        ntrail = ncols - c0 - w
        grid = max(1, min(-(-ntrail // 32), _sm_count()))   # every block factors the panel
        null = np.uint64(0)                             # a null pointer argument
        fn((grid,), (512,),
           (A, np.int64(A.strides[0] // dt.itemsize), np.int32(a0), np.int32(ha),
            B, np.int64(B.strides[0] // dt.itemsize), np.int32(b0), np.int32(hb),
            dt.type(sgn), np.int32(bool(positive)), np.int32(c0), np.int32(w), np.int32(ncols),
            V if V is not None else null, tau if tau is not None else null,
            counter, fail), shared_mem=smem)

    def fuses_triangle(self, dtype, k):
        """Whether :meth:`triangle_update` takes ``k`` rows below the triangle."""
        w = self.panel_width(k, dtype)
        return self.launches_once(dtype) or self.fusable(dtype, k + w, w)

    def launches_once(self, dtype):
        """Whether :meth:`triangle_update` runs as one launch rather than one launch per
        panel."""
        dtype = np.dtype(dtype)
        return self.one_launch and dtype.kind == "f" and dtype.itemsize in (4, 8)

    def triangle_chunks(self, n, ncols, k, dtype):
        """How many chunks of ``W``'s ``k`` rows the one launch of :meth:`triangle_update`
        takes for an ``n x ncols`` triangle (:attr:`triangle_chunk`, or else
        :func:`_triangle_chunks`' model)."""
        return _triangle_chunks(-(-n // 32), -(-ncols // 32), k, np.dtype(dtype).itemsize,
                                _sm_count(), self.triangle_chunk)

    def triangle_update(self, R1, W, sgn, positive=True, trace=None, check=True):
        """Reduce ``[R1; W]`` to ``[R1'; 0]`` in place by (hyperbolic, ``sgn = -1``)
        Householder reflectors.  ``R1`` (n x ncols, ncols >= n) must be upper triangular;
        its columns past n (``W``'s too) are carried along; both may be views with
        contiguous rows.  With ``positive`` every reflector is built (beta = -sign(alpha)
        ||x||), so a negative diagonal comes out positive; without, as in LAPACK, a column
        with nothing below is left alone.

        One cooperative launch of ``triangle_update`` (``kernels/triangle.cu``) for any
        number of rows of ``W``: they are taken in chunks of at most
        :attr:`triangle_chunk` rows, each chunk reducing ``[R1; W_c]`` in turn, the chunks
        pipelined (chunk c works on panel J while chunk c + 1 is on panel J - 1).
        Otherwise one ``reflect_panel`` launch per panel of :meth:`panel_width` columns.
        Returns the first column whose pivot failed, or -1 (one host synchronisation, at
        the end: the first failure shows in the chunk where it happens, and the columns
        before it are exact in every later chunk, so the smallest column reported is the
        first); with ``check=False``, None and no synchronisation (for reflectors that
        cannot break down, ``sgn = 1``: the host goes on queueing work while the launch
        runs).  ``trace``: None, or an int64 device array of 8 per chunk and panel that
        the launch fills with time stamps (ns; see the kernel) for profiling."""
        import cupy as cp
        (n, ncols), k = R1.shape, W.shape[0]
        dt = R1.dtype
        if not R1.strides[1] == W.strides[1] == dt.itemsize:
            raise ValueError("triangle_update: the rows of R1 and W must be contiguous")
        if self.launches_once(dt):
            npanels, ntiles = -(-n // 32), -(-ncols // 32)
            chunks = self.triangle_chunks(n, ncols, k, dt)
            kb = -(-k // chunks)              # rows per chunk, the chunks balanced
            # the fail slot and the flags in one allocation and two memsets (host time
            # before the launch is time the GPU waits)
            flags = cp.zeros(1 + chunks * npanels + npanels * ntiles, dtype=cp.int32)
            fail = _no_fail(flags[:1])
            published, handed = flags[1:1 + chunks * npanels], flags[1 + chunks * npanels:]
            work = cp.empty(chunks * npanels * (kb + 32) * 32, dtype=dt)   # V_B, L^T
            fn = cooperative_kernels().get_function(
                "triangle_update_" + ("f32" if dt.itemsize == 4 else "f64"))
            grid = max(1, min(chunks * ntiles, _sm_count()))   # one block per SM at most
            smem = _triangle_smem(kb, dt.itemsize)
            fn.max_dynamic_shared_size_bytes = smem
            fn((grid,), (512,),
               (R1, np.int64(R1.strides[0] // dt.itemsize), W,
                np.int64(W.strides[0] // dt.itemsize), np.int32(n), np.int32(ncols),
                np.int32(k), np.int32(kb), dt.type(sgn), np.int32(bool(positive)), work,
                published, handed, fail, np.uint64(0) if trace is None else trace),
               shared_mem=smem)
        else:
            fail = _no_fail(cp.empty(1, dtype=cp.int32))
            w = min(n, self.panel_width(k, dt))
            for c0 in range(0, n, w):
                wc = min(w, n - c0)
                self.launch_reflect(R1, c0, wc, W, 0, k, sgn, positive, c0, wc, ncols,
                                    fail=fail)
        if not check:
            return None
        first = int(fail.get()[0])
        return -1 if first == _NO_FAIL else first

    #: the most columns of V that one :meth:`structured_update` takes
    structured_k_max = 64
    #: whether :meth:`structured_update` into a new array runs the apply in the solve's
    #: launch, each block as soon as its rows are ready (else after it, a second launch)
    structured_follow = True

    #: whether :meth:`structured_update_passes` queues its passes back to back, else
    #: launches each once the one before has reported
    structured_queued = True
    #: whether queued passes overlap: each launch after the first a programmatic dependent
    #: launch whose blocks start as the blocks of the pass before finish, and wait for that
    #: pass's tiles of 64 columns (else each pass starts when the one before has ended)
    structured_overlap = True
    #: by itemsize: n divided by this is the most passes that :meth:`structured_passes`
    #: takes (but :attr:`structured_min_passes` at least)
    structured_rows_per_pass = {4: 400, 8: 200}
    structured_min_passes = {4: 6, 8: 8}

    def structured_passes(self, dtype, n, k):
        """How many passes of at most :attr:`structured_k_max` columns of V (each
        updating the result of the one before; :meth:`structured_update_passes`) a
        rank-``k`` update of an ``n x n`` factor takes, or 0 where it goes to the chain of
        reflectors (:meth:`triangle_update`) instead.

        Each pass is a whole structured update, with its own chain of the solve, so the
        passes' time grows in steps of 64 columns; the chain of reflectors' one launch
        grows slowly with k at small n and about as fast as the passes at large n.  On an
        H100 (a new array, median of 5 with L2 flushed, the passes queued and overlapped;
        chain time / passes time), in float32: 1.07, 1.07, 1.08 and 1.29 for k = 384 at
        n = 1000, 2000, 3000 and 5000, 0.82, 0.83, 0.89 and 1.14 for 512, 0.93 for 768
        at 5000; at n = 7000, 1.17 for 640 and 1.04 for 896; at 10000, 1.26 for 1024 and
        1.19 for 1280.  Then with one thread block per SM up to n = 6300
        (``_structured_plan``): 0.80, 0.94, 1.37, 1.31 and 1.31 for 512 at n = 2000,
        3000, 4000, 5000 and 6000, and 0.64, 0.76, 1.11, 1.006 and 1.016 for 896.  In
        float64: 1.27, 1.46, 1.77 and 2.17 for 384 at n = 1000, 2000, 3000 and 5000, 1.03,
        1.25, 1.44 and 1.92 for 512, 0.73, 0.98, 1.11 and 1.59 for 768, and 0.65, 0.81,
        0.98 and 1.51 for 1024.  Where the two times cross, by linear interpolation in the
        passes: about 7 passes at n = 1000 to 3000, 14 at 5000 and 6000, 15.5 at 7000 and
        more than 20 at 10000 in float32, and 8.2, 11.7 and 15.5 at n = 1000, 2000 and 3000
        in float64 (more than 16 at 5000).  Hence passes up to ``max(6, n // 400)`` in
        float32 and ``max(8, n // 200)`` in float64 (:attr:`structured_rows_per_pass`,
        :attr:`structured_min_passes`).  (Before the passes overlapped the float32
        crossings were about 5 passes up to n = 3000 and 7 at 5000.)"""
        passes, size = self._passes(dtype, k)
        most = max(self.structured_min_passes[size], n // self.structured_rows_per_pass[size])
        return passes if passes <= most else 0

    def _passes(self, dtype, k):
        """``(passes, itemsize)``: the passes of at most :attr:`structured_k_max` columns
        that a rank-``k`` structured update takes, 0 where its kernels do not take
        ``dtype``."""
        dtype = np.dtype(dtype)
        if not (self.one_launch and dtype.kind == "f" and dtype.itemsize in (4, 8)
                and k >= 1 and self.structured_k_max >= 1):
            return 0, dtype.itemsize
        return -(-k // self.structured_k_max), dtype.itemsize

    #: by itemsize: without Q, a square triangle of n rows goes to the structured update
    #: (:meth:`square_passes`) from ``square_min_n`` rows, in at most ``square_few_passes``
    #: passes, and from ``square_wide_n`` rows in up to ``n // square_rows_per_pass``
    square_min_n = {4: 4000, 8: 2000}
    square_few_passes = {4: 4, 8: 4}
    square_wide_n = {4: 4000, 8: 4000}
    square_rows_per_pass = {4: 400, 8: 200}

    def square_passes(self, dtype, n, k):
        """As :meth:`structured_passes`, for :meth:`_square_triangle`: the passes that
        reduce ``[S; B]`` (S square, n x n; B k x n) without Q, or 0 where the chain of
        reflectors (:meth:`triangle_update`) goes instead.

        The chain there needs no report and no copy of the result, so it goes further
        than :meth:`structured_passes` has it.  On an H100 (the papers' cases of adding
        rows and removing columns, ``python -m qrlab.bench``'s ``t_update`` by one route
        and the other in one process, three runs on three machines; structured / chain), in
        float64: 0.47 to 0.76 for k = 101 at n = 2401 and 2901 (2 passes), 0.49 to 0.82
        for 201 at 3001 to 7001 (4), 0.73 to 0.87 for 1501 at 5001 and 7001 (24), but
        0.95 to 1.16 for 501 at 2001 to 3001 (8) and 1.09 for 201 at 1001; in float32
        0.73 to 0.95 for 201 at 5001 and 7001, but 0.61 to 1.04 for 101 at 2401 and 2901,
        1.02 to 1.16 for 201 at 3001 and 1.71 at 1001 (and, the launches alone, 1.13 for
        64 at 300).  Hence these limits (:attr:`square_min_n` and after it)."""
        passes, size = self._passes(dtype, k)
        if not self.square_by_structured or n < self.square_min_n[size]:
            return 0
        most = self.square_few_passes[size]
        if n >= self.square_wide_n[size]:
            most = max(most, n // self.square_rows_per_pass[size])
        return passes if passes <= most else 0

    def structured_update_passes(self, R, W, sgn, out, spare=None, check_finite=True,
                                 growth_max=None):
        """:meth:`structured_update` for ``W`` of any k: passes of 64 rows of ``W`` (the
        last one shorter), each updating the result of the one before, launched back to
        back with no wait between them (:attr:`structured_queued`); the reports are read
        once all are queued.  The passes write ``out`` (a new n x n array with contiguous
        rows, or with one pass ``R`` itself) and ``spare`` (another, made here where it
        is needed and not given) in turn, the last one ``out``.  Returns each pass's
        ``(fail, zero, nonfinite, grew)`` as :meth:`structured_update` does; a pass
        after one that reports has run on that one's result, and what it says means
        nothing.  Every pass makes the growth test of its own update.

        Waiting for each pass's report before launching the next (the host's loop over
        :meth:`structured_update`) left the GPU idle between passes: on an H100 (A/B in
        one process, median of 7 with L2 flushed, k = 128 to 512) queuing them took
        float32 to 0.86 to 0.93 of the time at n = 1000 to 5000 (0.94 to 0.96 at 10000)
        and float64 to 0.80 to 0.95 (within 0.3 percent at 10000 and 20000); the results
        the same bit for bit.  (Running the passes in one launch as a wavefront, pass p
        starting on a tile of 64 columns once pass p - 1 had written it, took 0.76 to
        0.95 of the one-by-one time at n = 1000, at 2000 in float64 and at 5000 in
        float32, but 0.99 to 1.11 at n = 2000 in float32 and 1.4 to 2 times as long in
        float64 at n = 5000 and in both at n >= 10000: block C of pass p subtracts the
        products of every P_J before its own, which keeps up with its chain only if it
        starts early, and the solve's blocks of four passes do not fit on the GPU at
        once.)

        Queued passes into new arrays overlap (:attr:`structured_overlap`): every pass's
        flags are zeroed first, and each launch after the first is a programmatic
        dependent launch, whose blocks may start once every block of the pass before has
        started (no wait for its end: its apply's last jobs and its last block's factor
        of ``M`` run beside the next pass's first steps).  Its blocks wait by tiles of 64
        columns for that pass's apply (``st_update``), so each pass still reads only
        finished tiles and writes a tile of the array it shares with the pass two before
        only once the pass in between has read it; the results are the same bit for bit.
        On an H100 (A/B with each build in its own process, k = 256, median of 3 rounds):
        float32 0.86, 0.94, 0.88 and 0.94 of the time at n = 1000, 2000, 5000 and 10000,
        float64 0.94 at n = 5000 (the same code without the overlap: within 1.6 percent
        of the code before).

        Only the last pass writes the zeros below the diagonal (``zeros`` of
        :meth:`_structured_launch`): no pass reads that triangle of the array it reads.
        On an H100 (A/B with each build in its own process, k = 256, median of 3 rounds):
        float32 0.977, 0.984 and 0.975 of the time at n = 2000, 5000 and 10000, float64
        0.980 and 0.959 at 5000 and 10000 (k = 128 at 5000 in float32: 0.996), with the
        same errors against the float64 update (nothing above the diagonal changed)."""
        import cupy as cp
        n, k = R.shape[0], W.shape[0]
        width = self.structured_k_max
        npass = -(-k // width)
        if npass > 1 and spare is None:
            spare = cp.empty_like(out)
        steps, source = [], R
        for p in range(npass):
            dst = out if (npass - 1 - p) % 2 == 0 else spare
            steps.append((source, W[width * p:width * (p + 1)], dst))
            source = dst
        plans = [self._structured_plan_for(*step) for step in steps]
        # (passes into new arrays, each one launch)
        overlap = (self.structured_overlap and self.structured_queued and npass > 1
                   and all(len(plan.kernels) == 1 for plan in plans))
        # overlapped, every pass's flags are zeroed before the first launch, so that the
        # launches follow one another on the stream with nothing between them
        works = _structured_workspaces(plans, R.dtype) if overlap else [None] * npass
        reports = []
        for p, (source, Wp, dst) in enumerate(steps):
            before = works[p - 1][1] if overlap and p else None
            # only the last pass writes the zeros below the diagonal: a pass reads
            # nothing of that triangle
            reports.append(self._structured_launch(source, Wp, sgn, dst, check_finite,
                                                   plans[p], works[p], before,
                                                   zeros=p == npass - 1,
                                                   growth_max=growth_max))
            if not self.structured_queued:
                _structured_outcome(reports[-1], n)          # (waits for this pass)
        return [_structured_outcome(report, n) for report in reports]

    def structured_update(self, R, W, sgn, out, check_finite=True, growth_max=None):
        """The factor of ``R^T R + sgn W^T W`` into ``out`` (``R`` itself, or a new n x n
        array with contiguous rows), by the structured factor ``M`` of ``I + sgn P P^T``,
        ``P = R^{-T} W^T``, with no chain of reflectors (``kernels/structured.cu``).
        ``structured_solve`` solves for ``P`` block by block (its chain: one 64-row block,
        one small product per step) and factors the diagonal blocks of ``M``;
        ``structured_apply`` forms ``out = M R`` as products, one thread block per 64
        columns and segment of rows.  Into a new array both run in one launch
        (``structured_update``), each apply block starting as soon as the solve has made
        its rows ready, and the solve's blocks writing the zeros below the diagonal while
        they wait for the chain; in place (``out`` is ``R``) the apply is a second launch, since
        the solve reads R to the end.  ``R`` (n x n, contiguous rows) is read as
        ``triu(R)`` with each row times the sign of its diagonal entry; ``W`` is k x n
        (k <= 64, any strides).  Both are checked on the way (non-finite values, a zero on
        the diagonal) at no extra pass.

        The growth test (``growth_max``, default :attr:`growth_max`; 0 for none): whether
        the small factorizations of the solve cancel by more than ``growth_max``: for
        ``S = L L^T`` the largest ``S_qq / L_qq^2``, and for ``C = I + sgn X X^T = U^T U``
        the largest ``C_rr`` and ``1 / U_rr^2``, over every block.  There the structured
        update's error grows about as that growth times ``eps`` (a diagonal entry of R
        small beside its row, ratio r, makes it about ``1 / r^2``; so does an R nearly
        singular with every pivot large, a downdate near singularity, a V much larger
        than R), where the chain of reflectors (:meth:`triangle_update`) stays backward
        stable.  Each block of the solve tests its own factorizations, at no extra pass.

        Returns ``(fail, zero, nonfinite, grew)``: the first column whose pivot failed,
        the first zero on the diagonal (each -1 if none), whether a value of ``triu(R)``
        (bit 1) or ``W`` (bit 2) is not finite, and whether the growth test failed.  When
        any is set (``nonfinite`` only with ``check_finite``) ``R`` is not written; a new
        ``out`` may hold partial values.
        It returns once the solve has reported them: the apply may still be running, and
        work queued next on the stream follows it."""
        return _structured_outcome(self._structured_launch(R, W, sgn, out, check_finite,
                                                           growth_max=growth_max),
                                   R.shape[0])

    def _structured_plan_for(self, R, W, out):
        """The plan of :meth:`structured_update`'s launch (``_structured_plan``)."""
        import cupy as cp
        n, k = R.shape[0], W.shape[0]
        item = R.dtype.itemsize
        if R.strides[1] != item or out.strides[1] != item:
            raise ValueError("structured_update: the rows of R and out must be contiguous")
        # into a new array, the apply follows the solve in the same launch; in place it
        # must wait for the whole solve (which reads R, and may fail)
        follow = out is not R and self.structured_follow
        return keep_alive(_structured_plan(n, k, item, cp.cuda.Device().id, follow))

    def _structured_launch(self, R, W, sgn, out, check_finite, plan=None, workspace=None,
                           before=None, zeros=True, growth_max=None):
        """:meth:`structured_update`'s launch, with no wait: returns its report (pinned host
        memory that the solve's last block writes; see ``_structured_outcome``).  ``plan``
        (:meth:`_structured_plan_for`) and ``workspace`` (``_structured_workspace``) are
        made here where not given; ``before``: where the flags of the pass before start,
        whose launch this one follows on the stream as a programmatic dependent launch
        (``_launch_dependent``; into a new array only).  ``zeros=False`` leaves the strict
        lower triangle of a new ``out`` unwritten in the one launch (for a pass whose
        result only the next pass reads).  ``growth_max``: the growth test of
        :meth:`structured_update` (None: :attr:`growth_max`)."""
        n, k = R.shape[0], W.shape[0]
        growth_max = self.growth_max if growth_max is None else growth_max
        dt = R.dtype
        item = dt.itemsize
        plan = plan or self._structured_plan_for(R, W, out)
        workspace = workspace or _structured_workspace(plan, dt)
        follow = len(plan.kernels) == 1
        # The host's work before the launch and after the kernel is time the GPU or the
        # caller waits, so a call makes one allocation (the workspace and the flags), one
        # memset and one launch: on an H100 (A/B in one process) that took 13 to 44 us off
        # a call (3 to 12 percent, n = 200 to 10000) against three allocations, array
        # views and ``get()``.  The outcome comes back in pinned host memory that the last
        # block of the solve writes (``st_report``), read as soon as it is there: no copy,
        # and no wait for the apply's end (what the caller queues next on the stream
        # follows it anyway).  Against a copy and a stream synchronisation, together with
        # the apply's looks at 32 flags at once (``st_apply``): 19 to 27 us less a call at
        # n = 1000 and 2000 (float32, k = 1: 106 against 86 us), 0.87 to 0.98 of the time
        # at n = 5000 and 10000 (H100, A/B with each build in its own process).
        work, flags_at, report, to_host = workspace
        P, Zs, F, G = (np.uint64(work.data.ptr + at) for at in plan.parts)
        sync = np.uint64(flags_at)
        rmap = (_tensor_map(R.data.ptr, n, R.strides[0], item) if plan.ring
                else _NO_TENSOR_MAP)
        ldr, ldo = np.int64(R.strides[0] // item), np.int64(out.strides[0] // item)
        wq, wc = np.int64(W.strides[0] // item), np.int64(W.strides[1] // item)
        n_, k_, sb, sgn = np.int32(n), np.int32(k), np.int32(plan.sb), dt.type(sgn)
        if follow:
            args = (R, ldr, out, ldo, W, wq, wc, n_, k_, sgn, P, F, Zs, G, sb, plan.table, sync,
                    to_host, np.uint64(before or 0), np.int32(bool(zeros)), dt.type(growth_max),
                    rmap)
            if before:
                _launch_dependent(plan.kernels[0], plan.grids[0], (256,), args, plan.smem[0])
            else:
                plan.kernels[0](plan.grids[0], (256,), args, shared_mem=plan.smem[0])
        else:
            solve, apply = plan.kernels
            solve(plan.grids[0], (256,), (R, ldr, W, wq, wc, n_, k_, sgn, P, F, Zs, G, sb, sync,
                                          to_host, dt.type(growth_max), rmap),
                  shared_mem=plan.smem[0])
            apply(plan.grids[1], (256,), (R, ldr, out, ldo, W, wq, wc, n_, k_, P, F, Zs,
                                          plan.table, np.int32(bool(check_finite)), sync),
                  shared_mem=plan.smem[1])
        return report

    #: the widest panel that :meth:`factor_panel` gives ``tall_qr`` (each of its
    #: reflectors sums a partial Gram row of every block); 0: never
    tall_w_max = 512
    #: and the fewest rows per column: its time grows with w alone (6 us a reflector on
    #: an H200), geqrf's with h too; at h = 4 w and 5 w they tied, from 10 w on
    #: ``tall_qr`` took 0.53 to 0.85 of geqrf's time (benchmarks/results/tall-panels-*.md)
    tall_rows_per_column = 8

    def factor_panel(self, panel, later=False):
        """As the reference executor's: in one block (``panel_qr``, ``kernels/panel.cu``)
        where the panel fits its shared memory, else across the SMs (:meth:`tall_qr`)
        where it is tall enough and that takes it, else cuSOLVER's ``geqrf``."""
        import cupy as cp

        h, w = panel.shape
        smem = (h * w + 34) * panel.dtype.itemsize
        if panel.dtype.kind == "c" or panel.dtype.itemsize not in (4, 8) or h < w:
            return super().factor_panel(panel, later)
        if smem > _SMEM_LIMIT:
            tall = self.tall_qr(panel) if h >= self.tall_rows_per_column * w else None
            if tall is None:
                return super().factor_panel(panel, later)
            V, tau, Rp = tall
            return V, self.wy(V, tau, later), Rp
        P = cp.ascontiguousarray(panel)
        tau = cp.empty(w, dtype=P.dtype)
        T = cp.empty((w, w), dtype=P.dtype)
        fn = kernels().get_function("panel_qr_" + ("f32" if P.dtype.itemsize == 4 else "f64"))
        fn.max_dynamic_shared_size_bytes = smem
        fn((1,), (self.threads,), (P, np.int32(h), np.int32(w), tau, T), shared_mem=smem)
        V = cp.tril(P, -1)
        cp.fill_diagonal(V, 1)                  # (one strided fill, no index arrays)
        return V, (lambda: T) if later else T, cp.triu(P[:w])

    def tall_qr(self, panel):
        """Householder QR of a tall ``h x w`` panel (any strides) in one cooperative
        launch of ``tall_qr`` (``kernels/tall.cu``): ``(V, tau, Rp)`` as
        :func:`qrlab.householder.panel_qr` returns them (the same reflectors as LAPACK's
        ``geqrf``, up to rounding), or None where the kernel does not take the panel
        (a complex dtype, ``w`` past :attr:`tall_w_max`, ``h < w``, or rows per block
        that do not fit a block's shared memory) or :attr:`method` is the papers'.

        Each block keeps ``ceil(h / blocks)`` rows in shared memory; each reflector is
        two grid barriers around a sum of the blocks' partial Gram rows (see the kernel),
        added up in a fixed order: the same bits on every run.  cuSOLVER's ``geqrf``
        takes a few launches per column.  On an H200 (interleaved, CUDA events,
        ``benchmarks/tall_panels.py``): 9000 x 200 in 1.24 ms (float32) and 1.33
        (float64) where geqrf took 2.13 and 2.34; 6000 x 100 in 0.58 and 0.63 (0.91,
        0.99).  Such panels come before the Givens sweeps of adding columns (the rows of
        Q^T U below R) and of removing rows (the rows of Q to remove, past R)."""
        import cupy as cp

        h, w = panel.shape
        dt = panel.dtype
        item = dt.itemsize
        if (self.method == "paper" or dt.kind != "f" or item not in (4, 8) or h < w
                or not 1 <= w <= min(self.tall_w_max, 512)
                or any(s % item for s in panel.strides)):
            return None
        shape = _tall_blocks(h, w, item, _sm_count())
        if shape is None:
            return None
        nb, rows = shape
        V = cp.empty((h, w), dtype=dt)
        Rp = cp.empty((w, w), dtype=dt)
        tau = cp.empty(w, dtype=dt)
        work = cp.empty((nb + 2 * w) * w, dtype=dt)
        counts = cp.zeros(2, dtype=cp.int32)
        # Q's working copy, if left for later (working_copy_of_q), beside this launch
        gate = None if self._q_copy is None else cp.cuda.get_current_stream().record()
        smem = _tall_smem(rows, w, item)
        fn = cooperative_kernels().get_function("tall_qr_" + ("f32" if item == 4 else "f64"))
        fn.max_dynamic_shared_size_bytes = smem
        fn((nb,), (512,), (panel, np.int64(panel.strides[0] // item),
                           np.int64(panel.strides[1] // item), np.int32(h), np.int32(w),
                           np.int32(rows), V, Rp, tau, work, counts), shared_mem=smem)
        if gate is not None:
            self._copy_q((gate, counts, nb))
        return V, tau, Rp

    def extend_basis(self, Y, width):
        """:meth:`Executor.extend_basis` in one launch of ``extend_basis``
        (``kernels/panel.cu``: both QRs, the fallbacks, ``Qy`` and ``Ry`` in one block's
        shared memory), where the panel and ``Qy`` fit there; else as array operations.
        On an H100 (A/B in one process, one row or column, 500 x 50 and 2000 x 200, both
        dtypes) that took the economic rank update, column insertion and row removal from
        0.27-0.59 to 0.21-0.52 ms a call replayed from a CUDA graph, and from 2.5-4.0 to
        1.5-2.5 ms without one (the array operations cost host time)."""
        import cupy as cp

        m, p = Y.shape[0], Y.shape[1] - width
        dt = Y.dtype
        item = dt.itemsize
        smem = (2 * m * width + 34 + 2 * width) * item
        if (dt.kind == "c" or item not in (4, 8) or m < width or smem > _SMEM_LIMIT
                or any(s % item for s in Y.strides)):
            return super().extend_basis(Y, width)
        Qy = cp.empty((m, width), dtype=dt)
        Ry = cp.empty((width, p), dtype=dt)
        d = cp.empty(width, dtype=dt)
        fn = kernels().get_function("extend_basis_" + ("f32" if item == 4 else "f64"))
        fn.max_dynamic_shared_size_bytes = smem
        tol = dt.type(self.weak_tolerance(dt, m))
        fn((1,), (self.threads,), (Y, np.int64(Y.strides[0] // item),
                                   np.int64(Y.strides[1] // item), np.int32(m), np.int32(p),
                                   np.int32(width), tol, Qy, Ry, d), shared_mem=smem)
        return Qy, Ry, d

    def sweeps(self, op: Sweeps, Q, R):
        if self.method == "paper" or R.dtype.kind == "c" or R.dtype.itemsize not in (4, 8):
            self.flush()
            return super().sweeps(op, Q, R)
        import cupy as cp

        l0, l1 = op.lines
        p = l1 - l0
        dt = R.dtype
        k_sweeps, nwarp = _apply_warps(p, dt.itemsize)
        nbw = self.wave_block or apply_waves(p, dt.itemsize)
        smem = _apply_smem(nbw + 2 * p, nwarp, k_sweeps, dt.itemsize)
        if smem > _SMEM_LIMIT:                 # a group's rows do not fit shared memory
            self.flush()
            return super().sweeps(op, Q, R)
        B, nwaves, lo_g, hi_g, (tops, bottoms, lo_dev, hi_dev) = keep_alive(
            _sweep_schedule(op, nbw, cp.cuda.Device().id))    # (cached: a graph holds it)
        if nwaves == 0:
            self.flush()
            return
        suffix = "f32" if dt.itemsize == 4 else "f64"
        # all else that the kernels read, made before `ready` (the apply kernel's stream
        # waits for nothing after it): the ticket and the tiles' counts of groups done
        ng = len(lo_g)
        a0, a1 = op.apply_cols
        a1 = R.shape[1] if a1 is None else a1
        q_rows = self.driven_rows(op)
        Qv = None if Q is None else Q[q_rows]
        nq = 0 if Qv is None else Qv.shape[0]
        ntiles = -(-nq // 32) + (-(-(a1 - a0) // 32) if a1 > a0 else 0)
        pays = self.pipeline_always or _pipeline_pays(nq + max(a1 - a0, 0), p, dt.itemsize)
        per_launch, pipelined = _strip_passes(p, self.sweeps_per_launch, self.sweeps_per_pass,
                                              self.pipeline_blocks or _sm_count(), pays)
        q = self.strip_sweeps_per_warp or _strip_sweeps_per_warp(per_launch)
        if not (q in (2, 4, 8) and per_launch <= 32 * q):
            raise ValueError(f"the rotation kernel holds at most {32 * q} sweeps with "
                             f"{q} per warp (q = 2, 4 or 8), not {per_launch}")
        fn = cooperative_kernels().get_function(f"sweep_strips_{suffix}_q{q}")
        smem = fn.max_dynamic_shared_size_bytes = _strip_smem(dt.itemsize, q)
        passes, table = keep_alive(_strip_table(op, per_launch, cp.cuda.Device().id))
        strips = sum(nstrips for *_, nstrips in passes)
        # the ticket, per tile its groups done, per strip its waves done: one memset
        flags = cp.zeros(1 + ntiles + strips, dtype=cp.int32)
        sync, progress = flags[:1 + ntiles], flags[1 + ntiles:]

        # 1. all rotations, computed on the driver lines: one block per strip of 32 lines
        # and pass of sweeps (a later pass sees the earlier only through D), the passes
        # pipelined in one launch where that pays, else up to 256 sweeps per launch
        if self._stales(op):
            self.flush()                       # the driver lines must be current
        D = self.take_driver(op, Q, R)
        C = cp.empty((nwaves, p), dtype=dt)
        S = cp.empty((nwaves, p), dtype=dt)
        ready = cp.cuda.get_current_stream().record()   # all that comes before
        args = (D, np.int32(p), tops, bottoms, np.int32(B))
        # a warp per q sweeps, no more: at 1024 threads (64 registers each) a block took
        # every register of its SM, so that no block of the apply kernel or of a product
        # could run beside it.  (Not timed alone: from the paper runs before it to those
        # after, the cells of Tables 2 and 3 with 12000 or 16000 rows that do not pipeline
        # took 0.98 to 1.01 of their time, both dtypes.)
        threads = 32 * -(-per_launch // q)
        if pipelined:                          # every pass at once, each behind the one before
            fn((strips,), (threads,), args + (table, np.int32(len(passes)), C, S, progress,
                                              np.int32(0)), shared_mem=smem)
            launches = 1
        else:                                  # one pass after the other
            per = _sm_count()                  # one block per SM; more strips: more launches
            launches = 0
            for r, (*_, nstrips) in enumerate(passes):
                for first in range(0, nstrips, per):
                    fn((min(per, nstrips - first),), (threads,),
                       args + (table[_STRIP_PASS * r:], np.int32(1), C, S, progress,
                               np.int32(first)), shared_mem=smem)
                    launches += 1
        self.put_driver(op, Q, R, D)

        # 2. the rotations applied to the rows of Q and the columns of R, group of waves
        # by group of waves, by one launch of persistent blocks (``kernels/sweeps.cu``).
        # Rows lo.. of R are zero left of column lo - p (Sweeps), so a group starts
        # there, or at the carried columns (dense in every row) if they come first.  The
        # rotation kernel uses one SM per strip: when it is one launch, this runs beside
        # it on another stream, each group as soon as the last strip has published its
        # waves, on the SMs it leaves free.  (Blocks of the apply may share the rotation
        # kernel's SMs; keeping those for it alone, its shared memory padded so that no
        # block of the apply fits beside it, changed the time by at most 1.5 percent at
        # 000 Tables 2, 5, 10 and 11, both dtypes, interleaved in one process.)
        item = dt.itemsize
        tile_rows = max(1, int((hi_g - lo_g).max()))
        smem = _apply_smem(tile_rows, nwarp, k_sweeps, item)
        apply = kernels().get_function(f"apply_sweeps_{suffix}_k{k_sweeps}")
        apply.max_dynamic_shared_size_bytes = smem
        per_sm = max(1, min(2048 // (32 * nwarp), (228 * 1024) // (smem + 1024)))
        items = ng * ntiles
        null = np.uint64(0)

        def launch(progress):
            apply((max(1, min(items, per_sm * _sm_count())),), (32 * nwarp,),
                  (null if Qv is None else Qv, np.int64(0 if Qv is None else Qv.strides[0] // item),
                   np.int64(0 if Qv is None else Qv.strides[1] // item), np.int32(nq),
                   R, np.int64(R.strides[1] // item), np.int64(R.strides[0] // item),
                   np.int32(a0), np.int32(a1),
                   np.int32(np.iinfo(np.int32).max if op.dense_from is None else op.dense_from),
                   C, S, np.int32(p), tops, bottoms, np.int32(B), np.int32(nwaves),
                   np.int32(nbw), lo_dev, hi_dev, np.int32(ng),
                   np.int32(tile_rows), null if progress is None else progress, sync,
                   sync[1:]),
                  shared_mem=smem)

        main = cp.cuda.get_current_stream()
        # what the operation before left for now (its reflectors on Q, and for a panel of
        # rows of Q on R) goes first; `pending` keeps its arrays, made on this stream,
        # alive until this stream waits for the apply kernel
        pending = self._deferred
        if launches == 1 and self.overlap_groups:
            side = _side_stream()
            side.wait_event(ready)
            last = progress[-1:]               # the last strip's count of waves done (of
                                               # the last pass, which follows all others)
            with side:
                self.flush()
                # the rotation kernel resident before the blocks that wait on it
                kernels().get_function("wait_for_waves")((1,), (32,), (last, np.int32(1)))
                launch(last)
            main.wait_event(side.record())
        else:                                  # after all the rotations
            self.flush()
            launch(None)
        del pending
