"""What the course notebooks share: checks, counts, timing sweeps and committed results.

Notebooks 04-07 take each update through the same steps: check it against recomputation,
count its flops against a Householder QR, time it against a QR least-squares solve over
one parameter, and set the times beside the papers' and beside GPU results committed to
``benchmarks/results/``.  The steps are the same code for all four updates, so they live
here, written once; the notebooks keep what differs (sizes, which parameter is swept, the
papers' tables) and state their claims in ``assert`` statements of their own.

* :func:`check_update`, :func:`check_on_gpu` -- one update on random data, its errors
  against recomputation;
* :func:`order`, :func:`signed_like` -- reading errors, comparing ``R`` up to row signs;
* :func:`qr_flops`, :func:`new_shape`, :func:`flop_sweep` -- update against
  recomputation, counted;
* :func:`timing_sweep`, :func:`speedup_plot` -- update against recomputation, measured;
* :func:`load_results`, :func:`results_table` -- what ``python -m qrlab.bench`` stored.

Examples
--------
>>> from qrlab import course
>>> errors = course.check_update("insert_rows", 8, 6, 4, 8, seed=6)
>>> all(value < 1e-14 for value in errors.values())
True
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from . import backend, bench, updates

__all__ = ["RESULTS", "UPDATES", "load_results", "results_table", "order", "signed_like",
           "qr_flops", "new_shape", "flop_sweep", "check_update", "check_on_numpy",
           "check_on_gpu",
           "timing_sweep", "speedup_plot"]

#: Where ``python -m qrlab.bench`` results are committed: ``benchmarks/results/`` of the
#: source checkout (absent from an installed wheel, where :func:`load_results` finds none).
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"

#: The four block updates: op -> (qrlab/SciPy function, ``which``, whether ``Q=None``
#: works, i.e. the update can run on ``R`` alone).
UPDATES = {"insert_cols": ("qr_insert", "col", False),
           "delete_cols": ("qr_delete", "col", True),
           "insert_rows": ("qr_insert", "row", True),
           "delete_rows": ("qr_delete", "row", False)}


def _check_op(op):
    if op not in UPDATES:
        raise ValueError(f"op must be one of {tuple(UPDATES)}, not {op!r}")


# ------------------------------------------------------------------------------------
# committed results
# ------------------------------------------------------------------------------------
def load_results(op: str | None = None, tables=None, folder=None) -> list[dict]:
    """The update timings stored in ``benchmarks/results/*.json``.

    Rows that :func:`qrlab.bench.run_case` wrote (``python -m qrlab.bench``): those with
    one of the four updates as ``op`` and a ``t_update``.  Other files there (accuracy
    tables, Cholesky timings) are passed over.

    Parameters
    ----------
    op : str, optional
        Keep only this update ('insert_cols', 'delete_cols', 'insert_rows',
        'delete_rows'); all by default.
    tables : collection of str, optional
        Keep only rows of these tables of the papers (``{"T2"}``, ``{"T6", "T7"}``); all
        by default.
    folder : path-like, optional
        Where to look (default :data:`RESULTS`).

    Returns
    -------
    list of dict
        Each row as :func:`qrlab.bench.run_case` wrote it, with ``device`` and ``dtype``
        taken from its file (where the file lacks them: its name, and the row's own
        ``dtype`` or ``'?'``) and ``file``, the file's name.  Files in name order, rows
        in file order.  An empty list when the folder is missing or holds no timings;
        unreadable files are passed over.

    Examples
    --------
    >>> load_results(folder="no/such/folder")
    []
    >>> rows = load_results("insert_cols", {"T2"})
    >>> all(r["op"] == "insert_cols" and r["table"] == "T2" and "device" in r for r in rows)
    True
    """
    folder = RESULTS if folder is None else Path(folder)
    tables = None if tables is None else set(tables)
    rows = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            continue
        for r in data["results"]:
            if not isinstance(r, dict) or r.get("op") not in UPDATES or "t_update" not in r:
                continue
            if op is not None and r["op"] != op:
                continue
            if tables is not None and r.get("table") not in tables:
                continue
            rows.append(dict(r, device=data.get("device", path.stem),
                             dtype=data.get("dtype", r.get("dtype", "?")), file=path.name))
    return rows


def results_table(rows, keys=("m", "n", "p", "k")) -> str:
    """Result rows as a text table: GPU and precision, ``keys``, times and speed-ups.

    Parameters
    ----------
    rows : list of dict
        Rows from :func:`load_results` (or :func:`qrlab.bench.run_case`, with ``device``
        and ``dtype`` added).
    keys : sequence of str
        The case's fields to show, e.g. ``("table", "m", "k")``.

    Returns
    -------
    str
        A header line and one line per row: update and QR-solve milliseconds, the
        speed-up (QR solve / update) and the papers' speed-up for the same cell ('-'
        where there is none).

    Examples
    --------
    >>> row = dict(device="GPU", dtype="float32", m=4000, k=0, t_update=0.05, t_gels=0.02,
    ...            speedup_gels=0.4, paper_speedup=None)
    >>> print(results_table([row], keys=("m", "k")))
    GPU, precision                          m      k  update ms  QR solve ms  speed-up  paper
    GPU float32                          4000      0      50.00        20.00      0.40      -
    """
    lines = [f"{'GPU, precision':34s}" + "".join(f" {key:>6}" for key in keys)
             + f" {'update ms':>10} {'QR solve ms':>12} {'speed-up':>9} {'paper':>6}"]
    for r in rows:
        paper = r.get("paper_speedup")
        lines.append(f"{r['device'] + ' ' + r['dtype']:34s}"
                     + "".join(f" {r[key]!s:>6}" for key in keys)
                     + f" {r['t_update'] * 1e3:10.2f} {r['t_gels'] * 1e3:12.2f}"
                     f" {r['speedup_gels']:9.2f} {'-' if paper is None else f'{paper:.2f}':>6}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------
# reading errors, counting flops
# ------------------------------------------------------------------------------------
def order(x: float) -> str:
    """An error as its order of magnitude: the power of ten just above it.

    Errors computed through a BLAS differ in their last digits from one machine to
    another; their orders do not, so a notebook can print these and compare them.

    Examples
    --------
    >>> order(3.4e-15), order(0.0), order(120.0)
    ('1e-14', '0', '1e+03')
    """
    return "0" if x == 0 else f"1e{int(math.ceil(math.log10(x))):+03d}"


def signed_like(R, ref):
    """``R`` with its rows' signs flipped so its diagonal has the signs of ``ref``'s.

    A QR factorization is unique only up to the signs of the rows of ``R`` (and the
    columns of ``Q``), so two ``R`` of one matrix compare after this.

    Parameters
    ----------
    R, ref : array_like
        Real matrices of the same shape (NumPy; see :func:`qrlab.backend.to_numpy`).

    Returns
    -------
    numpy.ndarray
        A float copy of ``R``; its first ``min(R.shape)`` rows are negated where the
        diagonal signs differ.

    Examples
    --------
    >>> R = np.array([[-2.0, 1.0], [0.0, 3.0]])
    >>> signed_like(R, np.array([[2.0, -1.0], [0.0, 3.0]]))
    array([[ 2., -1.],
           [ 0.,  3.]])
    """
    R, ref = np.asarray(R), np.asarray(ref)
    d = min(R.shape)
    sign = np.where(np.sign(np.diag(R)) == np.sign(np.diag(ref)), 1.0, -1.0)
    out = np.array(R, dtype=float)
    out[:d] *= sign[:, None]
    return out


def qr_flops(m: int, n: int, full_q: bool = False) -> float:
    """Flops of a Householder QR of an ``m x n`` matrix (``m >= n``).

    ``2 n^2 (m - n/3)`` for ``R`` and the reflectors (and ``Q^T b`` alongside, a lower
    order term); with ``full_q``, ``4 (m^2 n - m n^2 + n^3/3)`` more to form the
    ``m x m`` ``Q`` from them.

    Examples
    --------
    >>> qr_flops(3, 3)
    36.0
    >>> qr_flops(4000, 3000) / 1e9, qr_flops(4000, 3000, full_q=True) / 1e9
    (54.0, 138.0)
    """
    flops = 2 * n * n * (m - n / 3)
    if full_q:
        flops += 4 * (m * m * n - m * n * n + n ** 3 / 3)
    return flops


def new_shape(op: str, m: int, n: int, p: int) -> tuple[int, int]:
    """The shape of ``A~``: an ``m x n`` matrix after the update ``op`` of ``p`` rows or
    columns.

    Examples
    --------
    >>> [new_shape(op, 10, 6, 2) for op in UPDATES]
    [(10, 8), (10, 4), (12, 6), (8, 6)]
    """
    _check_op(op)
    sign = 1 if op.startswith("insert") else -1
    return (m, n + sign * p) if op.endswith("cols") else (m + sign * p, n)


def _fixed_sizes(over, m, n, p, k):
    """The three of m, n, p, k that stay fixed while ``over`` varies (all must be given)."""
    sizes = dict(m=m, n=n, p=p, k=k)
    if over not in sizes:
        raise ValueError(f"over must be one of {tuple(sizes)}, not {over!r}")
    fixed = {key: v for key, v in sizes.items() if key != over}
    if any(v is None for v in fixed.values()):
        raise ValueError(f"a sweep over {over} needs {', '.join(fixed)} as keywords")
    return fixed


def flop_sweep(op: str, over: str, values, *, m=None, n=None, p=None, k=None,
               verbose: bool = True) -> list[float]:
    """Flops of an update against a QR of the changed matrix, while one size varies.

    The update's count is :func:`qrlab.bench.cost` (Q, R and ``d`` where the update needs
    Q, R and ``d`` otherwise); recomputing is :func:`qr_flops` of :func:`new_shape`, the
    R of a QR least-squares solve, the papers' baseline.

    Parameters
    ----------
    op : {'insert_cols', 'delete_cols', 'insert_rows', 'delete_rows'}
    over : {'m', 'n', 'p', 'k'}
        The size that takes the ``values``; the other three are given as keywords.
    values : iterable of int
    m, n, p, k : int
        The fixed sizes (leave out the one named by ``over``).
    verbose : bool
        Print a table: the swept value, both counts in GFLOP, and their ratio.

    Returns
    -------
    list of float
        ``update / recompute`` for each value: below 1, updating takes fewer flops.

    Raises
    ------
    ValueError
        If ``op`` or ``over`` is unknown, or the other three sizes are not all given.

    Examples
    --------
    >>> ratios = flop_sweep("delete_cols", "p", [100, 500], m=6000, n=3000, k=0)
        p  update GFLOP  QR solve GFLOP  ratio
      100           1.7            84.7  0.020
      500           6.3            64.6  0.097
    """
    _check_op(op)
    fixed = _fixed_sizes(over, m, n, p, k)
    values = list(values)
    w = max(5, *(len(str(v)) for v in values)) if values else 5
    if verbose:
        print(f"{over:>{w}} {'update GFLOP':>13} {'QR solve GFLOP':>15} {'ratio':>6}")
    ratios = []
    for value in values:
        size = {**fixed, over: value}
        update = bench.cost(op, size["m"], size["n"], size["p"], size["k"], 4)[0]
        full = qr_flops(*new_shape(op, size["m"], size["n"], size["p"]))
        ratios.append(update / full)
        if verbose:
            print(f"{value:{w}d} {update / 1e9:13.1f} {full / 1e9:15.1f} {update / full:6.3f}")
    return ratios


# ------------------------------------------------------------------------------------
# an update against recomputation
# ------------------------------------------------------------------------------------
def check_update(op: str, m: int, n: int, p: int, k: int, xp=None, seed: int = 0) -> dict:
    """Run one update on a random ``m x n`` matrix and measure it against recomputation.

    ``A`` (and the block ``U`` that adding rows or columns brings) are standard normal,
    float64, drawn on the host from ``numpy.random.default_rng(seed)`` and moved to
    ``xp``; ``Q, R`` is ``xp.linalg.qr(A, mode='complete')``.  qrlab's update gives
    ``Q~, R~``; the reference ``R`` comes from ``scipy.linalg.qr`` of the changed matrix
    ``A~`` and from SciPy's own ``qr_insert`` or ``qr_delete`` on the same ``Q, R``.

    Parameters
    ----------
    op : {'insert_cols', 'delete_cols', 'insert_rows', 'delete_rows'}
    m, n, p, k : int
        Shape of ``A``; rows or columns added or removed, from index ``k`` (0-based).
    xp : module, optional
        ``numpy`` (default) or ``cupy``: where the update runs.
    seed : int

    Returns
    -------
    dict of str to float
        ``'||Q~R~ - A~|| / ||A~||'``, ``'||Q~^T Q~ - I||'``,
        ``'||R~ - R(scipy qr)|| / ||A~||'``, ``'||R~ - R(scipy qr_insert)|| / ||A~||'``
        (or ``qr_delete``), and for the updates that run without ``Q`` (removing
        columns, adding rows) ``'||R~(Q=None) - R~|| / ||A~||'``, the R-only update
        against the full one.  Frobenius norms; ``R~`` is compared up to the signs of
        its rows (:func:`signed_like`).

    Raises
    ------
    ValueError
        If ``op`` is not one of the four updates.
    AssertionError
        If ``R~`` is not *exactly* upper triangular: every update writes exact zeros
        below the diagonal, so any other value there is a bug, not roundoff.

    Examples
    --------
    >>> errors = check_update("delete_cols", 10, 8, 3, 2, seed=5)
    >>> for name, value in errors.items():
    ...     print(f"{name:38s} {value < 1e-14}")
    ||Q~R~ - A~|| / ||A~||                 True
    ||Q~^T Q~ - I||                        True
    ||R~ - R(scipy qr)|| / ||A~||          True
    ||R~ - R(scipy qr_delete)|| / ||A~||   True
    ||R~(Q=None) - R~|| / ||A~||           True
    """
    import scipy.linalg
    _check_op(op)
    xp = np if xp is None else xp
    name, which, r_only = UPDATES[op]
    axis = 1 if which == "col" else 0
    rng = np.random.default_rng(seed)
    A_h = rng.standard_normal((m, n))
    A = xp.asarray(A_h)
    Q, R = xp.linalg.qr(A, mode="complete")
    if name == "qr_insert":
        U_h = rng.standard_normal((m, p) if which == "col" else (p, n))
        U = xp.asarray(U_h)
        args, host_args = (U, k), (U_h, k)
        A1 = xp.concatenate([A[:, :k], U, A[:, k:]] if axis else [A[:k], U, A[k:]], axis=axis)
    else:
        args = host_args = (k, p)
        A1 = xp.concatenate([A[:, :k], A[:, k + p:]] if axis else [A[:k], A[k + p:]],
                            axis=axis)
    update = getattr(updates, name)
    Q1, R1 = update(Q, R, *args, which=which)
    R1_only = update(None, R, *args, which=which) if r_only else None
    Q, R, Q1, R1, A1 = (backend.to_numpy(a) for a in (Q, R, Q1, R1, A1))
    if np.any(np.tril(R1, -1) != 0):
        raise AssertionError(f"{op}: R~ is not exactly upper triangular")
    R_ref = scipy.linalg.qr(A1)[1]
    R_sp = getattr(scipy.linalg, name)(Q, R, *host_args, which=which)[1]
    scale = np.linalg.norm(A1)
    errors = {"||Q~R~ - A~|| / ||A~||": np.linalg.norm(Q1 @ R1 - A1) / scale,
              "||Q~^T Q~ - I||": np.linalg.norm(Q1.T @ Q1 - np.eye(Q1.shape[1])),
              "||R~ - R(scipy qr)|| / ||A~||":
                  np.linalg.norm(signed_like(R1, R_ref) - R_ref) / scale,
              f"||R~ - R(scipy {name})|| / ||A~||":
                  np.linalg.norm(signed_like(R1, R_sp) - R_sp) / scale}
    if r_only:
        errors["||R~(Q=None) - R~|| / ||A~||"] = (
            np.linalg.norm(signed_like(backend.to_numpy(R1_only), R1) - R1) / scale)
    return {key: float(value) for key, value in errors.items()}


def check_on_numpy(op: str, shapes, seed: int = 0) -> dict:
    """:func:`check_update` on NumPy for each shape, each error asserted below a bound.

    The bound is ``1e-14``, or ``1e-13`` for the orthogonality of ``Q~`` when ``m > 20``
    (it grows with ``m``).  Prints each shape and the bound of each error, not the error
    itself: its last digits change from one BLAS to another, the bound does not.

    Parameters
    ----------
    op, shapes, seed
        As in :func:`check_on_gpu`.

    Returns
    -------
    dict
        ``(m, n, p, k)`` to :func:`check_update`'s errors.

    Raises
    ------
    AssertionError
        An error at or above its bound.

    Examples
    --------
    >>> errors = check_on_numpy("delete_rows", [(12, 5, 4, 4)], seed=7)
    m, n, p, k = (12, 5, 4, 4)
      ||Q~R~ - A~|| / ||A~||                 < 1e-14
      ||Q~^T Q~ - I||                        < 1e-14
      ||R~ - R(scipy qr)|| / ||A~||          < 1e-14
      ||R~ - R(scipy qr_delete)|| / ||A~||   < 1e-14
    """
    checked = {}
    for shape in shapes:
        errors = checked[tuple(shape)] = check_update(op, *shape, xp=np, seed=seed)
        print("m, n, p, k =", tuple(shape))
        for name, value in errors.items():
            limit = 1e-13 if "Q~^T" in name and shape[0] > 20 else 1e-14
            assert value < limit, (name, value)
            print(f"  {name:38s} < {limit:.0e}")
    return checked


def check_on_gpu(op: str, shapes, seed: int = 0) -> dict:
    """:func:`check_update` on CuPy arrays, for each shape, where there is a GPU.

    Prints the backend in use (:func:`qrlab.backend.describe`), then each shape with the
    orders (:func:`order`) of its errors; without a GPU, only that the NumPy check is the
    whole check.

    Parameters
    ----------
    op : {'insert_cols', 'delete_cols', 'insert_rows', 'delete_rows'}
    shapes : iterable of (m, n, p, k)
    seed : int

    Returns
    -------
    dict
        ``(m, n, p, k)`` to :func:`check_update`'s errors; empty when
        :func:`qrlab.default_module` is NumPy.  Judging the errors is the caller's.

    Examples
    --------
    >>> checked = check_on_gpu("delete_rows", [(12, 5, 4, 4)], seed=7)  # doctest: +ELLIPSIS
    backend: ...
    >>> all(max(errors.values()) < 1e-11 for errors in checked.values())
    True
    """
    xp = backend.default_module()
    print("backend:", backend.describe())
    if xp is np:
        print("no GPU here: the NumPy check above is the whole check")
        return {}
    checked = {}
    for shape in map(tuple, shapes):
        checked[shape] = check_update(op, *shape, xp=xp, seed=seed)
        print("m, n, p, k =", shape, {name: order(v) for name, v in checked[shape].items()})
    return checked


# ------------------------------------------------------------------------------------
# timing: update against recomputation
# ------------------------------------------------------------------------------------
def timing_sweep(op: str, over: str, values, *, m=None, n=None, p=None, k=None, xp=None,
                 dtype: str = "float32", reps: int = 3, verbose: bool = True) -> list[dict]:
    """Time an update against a QR least-squares solve while one of m, n, p, k varies.

    Each point is :func:`qrlab.bench.run_case`: the update of the factors the papers
    update (Q, R and ``d = Q^T b`` when the update needs Q, R and ``d`` otherwise) plus
    the triangular solve for ``x``, against a QR solve of the changed matrix, both on
    ``xp``, median of ``reps`` runs on fresh random blocks.

    Parameters
    ----------
    op, over, values, m, n, p, k
        The update and its sizes, one of them swept, as for :func:`flop_sweep`.
    xp : module, optional
        Array module to time on (default: :func:`qrlab.default_module`, CuPy on a GPU).
    dtype : str
        Precision of the data (the papers': ``'float32'``).
    reps : int
    verbose : bool
        Print a table as the points come in: backend and sizes, then per point the
        swept value, both times in ms, the speed-up and the relative error of ``x``.

    Returns
    -------
    list of dict
        :func:`qrlab.bench.run_case`'s rows (``t_update``, ``t_gels``, ``speedup_gels``,
        ``rel_err_x``, ...), one per value, with ``table='live'``.

    Raises
    ------
    ValueError
        As :func:`flop_sweep` does: for an unknown update or size, or a size left out.

    Examples
    --------
    >>> rows = timing_sweep("insert_rows", "m", [20, 40], n=10, p=2, k=0, xp=np, reps=1,
    ...                     verbose=False)
    >>> [(r["m"], r["n"], r["p"]) for r in rows], all(r["rel_err_x"] < 1e-3 for r in rows)
    ([(20, 10, 2), (40, 10, 2)], True)
    """
    _check_op(op)
    fixed = _fixed_sizes(over, m, n, p, k)
    where = backend.describe() if xp is None else xp.__name__
    xp = backend.default_module() if xp is None else xp
    values = list(values)
    w = max(5, *(len(str(v)) for v in values)) if values else 5
    if verbose:
        print(f"{where}; " + ", ".join(f"{key}={v}" for key, v in fixed.items())
              + f", {dtype}, median of {reps}")
        print(f"{over:>{w}} {'update ms':>10} {'QR solve ms':>12} {'speed-up':>9} "
              f"{'rel. err x':>11}")
    rows = []
    for value in values:
        case = dict(table="live", op=op, **{**fixed, over: value},
                    paper_cula=None, paper_update=None, paper_speedup=None)
        r = bench.run_case(xp, case, dtype, reps)
        rows.append(r)
        if verbose:
            print(f"{value:{w}d} {r['t_update'] * 1e3:10.2f} {r['t_gels'] * 1e3:12.2f} "
                  f"{r['speedup_gels']:9.2f} {r['rel_err_x']:11.1e}", flush=True)
    return rows


def speedup_plot(live, x, paper=(), measured=(), *, paper_x=None, by=None, xlabel=None,
                 paper_xlabel=None, title="this machine", paper_title="the papers' sizes"):
    """Speed-ups over a QR solve: this machine (left), the papers and GPUs (right).

    Parameters
    ----------
    live : list of dict
        Rows of :func:`timing_sweep`, drawn against their field ``x``.
    x : str
        The swept field of ``live`` ('m', 'p', 'k').
    paper : list of dict
        Cases of :func:`qrlab.bench.paper_cases` (their ``paper_speedup``, dashed).
    measured : list of dict
        Rows of :func:`load_results` (their ``speedup_gels``), one line per GPU and
        precision.
    paper_x : str, optional
        The field the right panel is drawn against (default ``x``).
    by : str, optional
        A field that splits the right panel's cases into one line per value (the papers'
        tables have one column per ``m`` or ``n``).
    xlabel, paper_xlabel : str, optional
        Axis labels (default: the field names; ``paper_xlabel`` defaults to ``xlabel``
        when both panels share their field).
    title, paper_title : str

    Returns
    -------
    matplotlib.figure.Figure
        Two log-scale panels with a line at 1 (above it, updating wins).

    Examples
    --------
    >>> live = [dict(k=0, speedup_gels=0.5), dict(k=10, speedup_gels=2.0)]
    >>> paper = [dict(k=k, m=m, paper_speedup=s) for k, m, s in
    ...          [(0, 40, 0.2), (10, 40, 1.5), (0, 80, 0.3), (10, 80, 2.5)]]
    >>> fig = speedup_plot(live, "k", paper, by="m")
    >>> [len(ax.get_lines()) for ax in fig.axes]            # with the line at 1
    [2, 3]
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    if paper_x is None:
        paper_x = x
    if xlabel is None:
        xlabel = x
    if paper_xlabel is None:
        paper_xlabel = xlabel if paper_x == x else paper_x
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3), dpi=70)
    left.plot([r[x] for r in live], [r["speedup_gels"] for r in live], "o-", label="qrlab")
    groups = sorted({r[by] for r in [*paper, *measured]}) if by else [None]

    def line(ax, rows, key, style, label):
        for g in groups:
            cells = sorted((r for r in rows if by is None or r[by] == g),
                           key=lambda r: r[paper_x])
            if cells:
                ax.plot([r[paper_x] for r in cells], [r[key] for r in cells], style,
                        label=label + ("" if by is None else f", {by}={g}"))

    line(right, paper, "paper_speedup", "s--", "paper M2050")
    for device, dtype in sorted({(r["device"], r.get("dtype", "")) for r in measured}):
        line(right, [r for r in measured if (r["device"], r.get("dtype", "")) == (device, dtype)],
             "speedup_gels", "o-", f"qrlab {device} {dtype}".rstrip())
    for ax, label, heading in ((left, xlabel, title), (right, paper_xlabel, paper_title)):
        ax.set_title(heading, fontsize=9)
        ax.axhline(1, color="grey", lw=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylabel("speed-up over QR solve", fontsize=8)
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
