"""Small updates on a GPU replayed as CUDA graphs: one launch instead of dozens.

A small update (a row added to a 500 x 50 factorization, say) does microseconds of GPU
work, but queues 20 to 100 operations from Python, and those cost 0.5 to 6 ms of host
time a call on an H100 machine: more than recomputing the QR with cuSOLVER.  So the
second call of an update (``qr_insert``, ``qr_delete``, ``qr_update``, and the updates of
:class:`~qrlab.LeastSquaresQR`) with the same shapes, layouts, dtypes, arguments and stream
records its operations into a CUDA graph (stream capture), and every later call
replays the graph:

1. copy the caller's arrays into the graph's own input buffers (the caller's arrays are
   only read, as without a graph);
2. launch the graph: one call into the driver for all of the update's kernels, copies
   and matrix products;
3. copy the graph's outputs into new arrays for the caller (the next replay overwrites
   the graph's own).

The addresses a graph reads and writes are fixed when it is recorded, so each graph gets
a memory pool of its own, which nothing else allocates from; device arrays the update
keeps across calls (a schedule cached per shape, say) are held by the graph too
(:func:`keep_alive`).  The graphs' pools together stay under :data:`BUDGET_BYTES`; the
least recently used graph goes first.  Inputs of more than :data:`MAX_INPUT_BYTES` run
without a graph: there the GPU's work, not the host's, takes the time.

Tests of the values that raise (inputs not finite, with ``check_finite``; a column of
``u`` in the span of an economic Q) are recorded as device flags
(:func:`qrlab.backend.raise_if`), which the host reads in one wait after each replay.
An update whose host code must read the device otherwise (a factorization on cuSOLVER,
say, which reads its status) cannot be recorded: its capture fails, and from then on
that key runs without a graph, as do the keys of failed recordings.
Uploads from the host are refused while recording (a graph would read their staging
buffer at every replay, long after it was reused), so an update that uploads runs
without a graph too.

``QRLAB_GRAPHS=0`` turns graphs off, and :func:`using` turns them on or off inside a
``with`` block (the test suite runs without them, except where it tests them).

Examples
--------
>>> from qrlab import graphs
>>> with graphs.using(False):
...     graphs.enabled()
False
>>> sorted(graphs.info())
['bytes', 'graphs', 'plain', 'recorded', 'refusals', 'refused', 'replayed']
"""
from __future__ import annotations

import collections
import contextlib
import os
import threading

__all__ = ["run", "enabled", "using", "keep_alive", "defer", "info", "clear",
           "MAX_INPUT_BYTES", "BUDGET_BYTES"]

#: the most bytes of input for which an update is recorded (a 2000 x 2000 float64 Q is 32 MB)
MAX_INPUT_BYTES = 64 << 20
#: the most bytes that all graphs' memory pools hold together
BUDGET_BYTES = 1 << 30
#: how many keys seen once, or refused, are remembered
_REMEMBERED = 512

_lock = threading.RLock()
_graphs: collections.OrderedDict = collections.OrderedDict()    # key -> _Graph
_seen: collections.OrderedDict = collections.OrderedDict()      # key -> None
_refused: collections.OrderedDict = collections.OrderedDict()   # key -> reason
_counts = collections.Counter()
_switch: list = []                  # the innermost `using` flag last
_recording = threading.local()      # .keep: what the graph being recorded must hold,
                                    # .tests: its deferred tests (defer)


class _Refused(RuntimeError):
    """Something that a graph cannot hold was asked for while recording."""


def enabled() -> bool:
    """Whether updates on CuPy arrays may be recorded and replayed as CUDA graphs: the
    innermost :func:`using`, else ``QRLAB_GRAPHS`` (off for ``0``, ``off``, ``false``,
    ``no``), else on."""
    if _switch:
        return _switch[-1]
    value = os.environ.get("QRLAB_GRAPHS", "").strip().lower()
    return value not in ("0", "off", "false", "no")


@contextlib.contextmanager
def using(flag: bool = True):
    """Turn graphs on (or off, ``flag=False``) inside a ``with`` block."""
    _switch.append(bool(flag))
    try:
        yield
    finally:
        _switch.pop()


def keep_alive(obj):
    """Let the graph being recorded (if any) hold ``obj``: a device array that the update
    reads but that lives beyond the call (a cached schedule), so that its memory is not
    freed and reused while the graph still reads it.  Returns ``obj``."""
    keep = getattr(_recording, "keep", None)
    if keep is not None:
        keep.append(obj)
    return obj


def defer(failed, error) -> bool:
    """While a graph is being recorded: have it test ``failed`` (a boolean device scalar
    the update computed) after each replay, and raise ``error()`` when it is true; True.
    Otherwise False (the caller tests it now).  See :func:`qrlab.backend.raise_if`."""
    tests = getattr(_recording, "tests", None)
    if tests is None:
        return False
    tests.append((failed, error))
    return True


def info() -> dict:
    """Counts since the last :func:`clear`: calls ``recorded`` (then replayed), replayed
    from a graph (``replayed``), run without one (``plain``), recordings ``refused``;
    the ``graphs`` held and the ``bytes`` their pools hold; and ``refusals``, why each
    refused key was refused."""
    with _lock:
        return {"recorded": _counts["recorded"], "replayed": _counts["replayed"],
                "plain": _counts["plain"], "refused": _counts["refused"],
                "graphs": len(_graphs),
                "bytes": sum(g.pool.total_bytes() for g in _graphs.values()),
                "refusals": sorted(set(_refused.values()))}


def clear():
    """Drop every graph (freeing their memory), every remembered key and the counts."""
    with _lock:
        while _graphs:
            _drop_oldest()
        _seen.clear()
        _refused.clear()
        _counts.clear()


def run(core, arrays, params, check_finite=False):
    """``core(*arrays, **params)`` for CuPy ``arrays`` (None entries allowed), replayed
    from a CUDA graph where it can be (see the module's description); with
    ``check_finite``, ``ValueError`` if an array holds an inf or a NaN.

    ``core`` must only read ``arrays``, return a CuPy array or a tuple of them (None
    entries allowed), and depend on nothing but the arrays' shapes, layouts and dtypes,
    the values in them and ``params`` (hashable).  Its results are new arrays either
    way.  A graph tests the values itself (and runs the update's deferred tests,
    :func:`defer`), and the call waits for the device once, for all their answers
    (three waits, one per array, took 0.2 ms of a 0.3 ms replay on an H100)."""
    import cupy as cp
    if not enabled() or sum(a.nbytes for a in arrays if a is not None) > MAX_INPUT_BYTES:
        return _plain(core, arrays, params, check_finite)
    stream = cp.cuda.get_current_stream()
    key = (core, tuple(_layout(a) for a in arrays), tuple(sorted(params.items())),
           check_finite, cp.cuda.Device().id, stream.ptr)
    with _lock:
        graph = _graphs.get(key)
        if graph is not None:
            _graphs.move_to_end(key)
        elif key in _refused or key not in _seen:
            _remember(_seen, key, None)          # recorded if it comes again
        else:
            graph = _record(cp, core, arrays, params, check_finite, key)
            if graph is not None:
                _counts["recorded"] += 1
    if graph is None:
        return _plain(core, arrays, params, check_finite)
    _counts["replayed"] += 1
    return graph.replay(arrays, stream)


def _plain(core, arrays, params, check_finite):
    from .backend import require_finite
    _counts["plain"] += 1
    if check_finite:
        require_finite(*arrays)
    return core(*arrays, **params)


def _layout(a):
    """What a graph's input buffer copies of ``a``: shape, dtype and order."""
    if a is None:
        return None
    order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    return a.shape, a.dtype.str, order


def _remember(table, key, value):
    table[key] = value
    table.move_to_end(key)
    while len(table) > _REMEMBERED:
        table.popitem(last=False)


class _Graph:
    """A recorded update: the CUDA graph, its memory pool, its input and output buffers
    (``single``: the update returns one array, not a tuple), its tests (``failed``: a
    device array of flags, true where a test failed, or None; ``errors``: what each
    raises) and what it must hold."""

    def __init__(self, graph, pool, inputs, outputs, single, failed, errors, keep):
        self.graph, self.pool, self.inputs = graph, pool, inputs
        self.outputs, self.single, self.keep = outputs, single, keep
        self.failed, self.errors = failed, errors

    def replay(self, arrays, stream):
        for buffer, a in zip(self.inputs, arrays):
            if buffer is None:
                continue
            if a.flags.c_contiguous and buffer.flags.c_contiguous or (
                    a.flags.f_contiguous and buffer.flags.f_contiguous):
                buffer.data.copy_from_device_async(a.data, a.nbytes, stream)
            else:
                buffer[...] = a                  # any strides: one elementwise copy
        self.graph.launch(stream)
        outputs = tuple(None if out is None else out.copy() for out in self.outputs)
        if self.failed is not None:
            for failed, error in zip(self.failed.get(), self.errors):    # (one wait)
                if failed:
                    raise error()
        return outputs[0] if self.single else outputs


_capture_streams: dict = {}          # device id -> the stream graphs are recorded on


def _record(cp, core, arrays, params, check_finite, key):
    """Record ``core`` on input buffers shaped as ``arrays`` (after a finiteness test of
    them into a device flag, with ``check_finite``) into a new graph; None (and the key
    refused from then on) where it cannot be recorded."""
    device = cp.cuda.Device().id
    if device not in _capture_streams:     # (capture cannot use the legacy stream)
        _capture_streams[device] = cp.cuda.Stream(non_blocking=True)
    capture = _capture_streams[device]
    pool = cp.cuda.MemoryPool()
    keep = []
    try:
        with cp.cuda.using_allocator(pool.malloc):
            inputs = tuple(None if a is None else cp.empty(a.shape, a.dtype, order=_layout(a)[2])
                           for a in arrays)
            with capture, _no_uploads(cp):
                _recording.keep = keep
                capture.begin_capture()
                try:
                    _recording.tests = tests = []
                    finite = [cp.isfinite(a).all() for a in inputs
                              if check_finite and a is not None and a.size]
                    if finite:                  # (first: raised before the update's own)
                        defer(~cp.stack(finite).all(), _not_finite)
                    result = core(*inputs, **params)
                    failed = cp.stack([f for f, _ in tests]) if tests else None
                except BaseException:
                    _end_quietly(capture)
                    raise
                finally:
                    _recording.keep = _recording.tests = None
                graph = capture.end_capture()
    except Exception as exc:                  # (a read of the device, an upload...)
        pool.free_all_blocks()
        _counts["refused"] += 1
        _remember(_refused, key, f"{getattr(core, '__name__', core)}: "
                                 f"{type(exc).__name__}: {exc}"[:300])
        return None
    single = not isinstance(result, tuple)
    outputs = (result,) if single else result
    _graphs[key] = _Graph(graph, pool, inputs, outputs, single, failed,
                          [error for _, error in tests], keep)
    while len(_graphs) > 1 and sum(g.pool.total_bytes() for g in _graphs.values()) \
            > BUDGET_BYTES:
        _drop_oldest()
    return _graphs[key]


def _not_finite():
    return ValueError("array must not contain infs or NaNs")


def _end_quietly(capture):
    """End a capture that failed (CUDA reports it invalidated: nothing to keep)."""
    try:
        capture.end_capture()
    except Exception:
        pass


@contextlib.contextmanager
def _no_uploads(cp):
    """Refuse CuPy's uploads from the host (they stage through pinned memory, which a
    graph would read again at each replay) while recording.  The pinned allocator is
    CuPy's default pool's again afterwards."""
    def refuse(size):
        raise _Refused(f"an upload of {size} bytes from the host")
    cp.cuda.set_pinned_memory_allocator(refuse)
    try:
        yield
    finally:
        cp.cuda.set_pinned_memory_allocator(cp.get_default_pinned_memory_pool().malloc)


def _drop_oldest():
    """Forget the least recently used graph and free its pool, once the device has
    finished whatever replay of it is still queued."""
    import cupy as cp
    _, graph = _graphs.popitem(last=False)
    cp.cuda.Device().synchronize()
    pool = graph.pool
    del graph
    pool.free_all_blocks()
