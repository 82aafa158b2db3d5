"""The update algorithms written down once, as stages of Householder blocks and Givens sweeps.

Every update of ``A = QR`` in qrlab works on a *working pair* ``(Q, R)`` with
``A = Q R`` held throughout.  All the transformations are orthogonal (unitary) and act on
the **rows** of ``R`` and, equivalently, on the **columns** of ``Q``: a left factor ``G``
turns ``R`` into ``G R`` and ``Q`` into ``Q G^H``.  Thinking of the stack ``M = [R, Q^H]``
makes the two one: every operation below transforms some rows of ``M``.

An update is a :class:`Plan`: a tuple of :class:`Stage` (the papers' "Stage 1, Stage 2"),
each a tuple of operations of two kinds:

:class:`Reflect`
    Householder QR of a panel ``R[rows, cols]`` (left to right, one reflector per column),
    the same reflectors applied to the trailing columns of ``R`` on those rows and to the
    columns ``rows`` of ``Q``.  Rows may be two spans, so the papers' ``V = [I; 0; v]``
    structure of adding rows is a panel over the diagonal rows and the appended rows.

:class:`Sweeps`
    Givens sweeps: sweep ``s`` zeroes one *driver line* bottom-up with rotations of
    adjacent rows ``(i-1, i)``.  The driver line is a column of ``R`` (adding columns, the
    rank-p update) or a row of ``Q`` (removing rows: that row of ``Q^H`` is a column of
    ``M``).  Sweeps are pipelined: sweep ``s`` runs two rows behind sweep ``s-1``, so each
    time step is a *wave* of rotations on disjoint row pairs (003 eq. 7, 001 Fig. 1).

and one bookkeeping operation, :class:`AddProduct` (the rank-p term of ``qr_update``).

The plan holds no numbers: executors run it.  The NumPy/CuPy executor
(:mod:`qrlab.executor`) applies it to arrays; the pattern executor (:mod:`qrlab.patterns`)
applies it to zero/nonzero masks to draw the papers' figures.  Plans are built by the
``plan_*`` functions below from shapes alone.

Examples
--------
Removing p = 3 columns at k = 2 from a 10 x 8 R (001 Fig. 3) in panels of two columns:

>>> from qrlab import stages
>>> plan = stages.plan_delete_cols(10, 8, 2, 3, nb=2)
>>> for stage in plan.stages:
...     print(stage.title)
Remove columns: block 1: Householder on columns 2-3, rows 2-6
Remove columns: block 2: Householder on columns 4-4, rows 4-7
>>> sweeps = stages.plan_delete_rows(6, 3, 2, householder=False).stages[0].ops[0]
>>> [len(wave) for wave in sweeps.waves()]      # the pipelined schedule: 2 sweeps, 2 rows apart
[1, 1, 2, 2, 2, 1]

qrlab's own plan reduces the columns of Q past R's triangle by reflectors first, which
leaves shorter sweeps:

>>> plan = stages.plan_delete_rows(6, 3, 2)
>>> [type(op).__name__ for op in plan.ops()]
['Reflect', 'Sweeps']
>>> [len(wave) for wave in plan.stages[1].ops[0].waves()]
[1, 2, 2, 1]
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

__all__ = [
    "Reflect", "Sweeps", "AddProduct", "Stage", "Plan",
    "plan_delete_cols", "plan_insert_cols", "plan_insert_rows", "plan_delete_rows",
    "plan_rank_update", "default_block",
]


@dataclass(frozen=True)
class Reflect:
    """Householder QR of ``R[rows, cols.start:cols.stop]``.

    ``rows`` is a tuple of ``(start, stop)`` spans, gathered in order; the reflector of the
    ``j``-th panel column acts on the gathered rows from position ``j`` on.  The reflectors
    are applied to ``R[rows, cols.stop:]`` and to ``Q[:, rows]`` (as ``Q H``), except
    to ``R[rows, cols.stop:zero_to]`` where the plan knows those columns to be zero on
    these rows (they stay zero: an executor may skip them).

    With ``driver='Q'`` the panel is a block of ``Q^H`` instead: the columns of ``M =
    [R, Q^H]`` that the rows ``cols`` of Q make, as :class:`Sweeps` drives by rows of Q.
    Householder QR of ``Q[cols.start:cols.stop, rows]^H``, the reflectors applied to the
    other rows of ``Q[:, rows]`` and to ``R[rows, zero_to:]`` (all of ``R[rows]`` if
    ``zero_to`` is None).
    """

    rows: tuple[tuple[int, int], ...]
    cols: tuple[int, int]
    zero_to: int | None = None
    driver: str = "R"

    def row_list(self) -> list[int]:
        return [i for a, b in self.rows for i in range(a, b)]

    @property
    def height(self) -> int:
        return sum(b - a for a, b in self.rows)

    @property
    def width(self) -> int:
        return self.cols[1] - self.cols[0]


@dataclass(frozen=True)
class Sweeps:
    """Pipelined Givens sweeps over a block of driver lines.

    driver : 'R' or 'Q'
        'R': the lines are columns ``lines[0]:lines[1]`` of R.  'Q': the lines are rows
        ``lines[0]:lines[1]`` of Q (columns of Q^H).
    lines : (first, stop)
        The driver lines; sweep ``s`` zeroes line ``first + s``.
    tops, bottoms : tuple of int
        Sweep ``s`` zeroes positions ``bottoms[s]-1`` down to ``tops[s]+1`` of its line,
        rotation ``i`` acting on rows ``(i-1, i)`` of R (columns of Q).  Below
        ``bottoms[s]-1`` line ``s`` is zero already, so each line is zero on the rows that
        later sweeps rotate (the GPU kernels skip those entries).  Throughout, row ``r``
        of R is zero left of column ``r - p`` (``p`` the number of sweeps: each sweep
        brings a row at most one column further left), which the GPU executor uses to
        skip those columns.
    apply_cols : (start, stop)
        Columns of R, other than the driver, that the rotations must update.
    dense_from : int or None
        Columns of R from this one on are carried right-hand sides (``Q^H b``), dense in
        every row: the zero pattern above holds only left of them.  None: no such
        columns, or none in the rows the sweeps reach.
    """

    driver: str
    lines: tuple[int, int]
    tops: tuple[int, ...]
    bottoms: tuple[int, ...]
    apply_cols: tuple[int, int]
    dense_from: int | None = None

    @property
    def count(self) -> int:
        """Number of rotations."""
        return sum(max(0, b - 1 - t) for t, b in zip(self.tops, self.bottoms))

    def waves(self) -> list[list[tuple[int, int]]]:
        """The parallel schedule: a list of waves, each a list of ``(sweep, i)`` pairs.

        Rotation ``i`` of sweep ``s`` runs at time ``(B - i) + 2 s`` with ``B`` the lowest
        row of all sweeps.  Within a wave the row pairs ``(i-1, i)`` are disjoint, and each
        pair of rotations sharing a row keeps the order of the sequential algorithm (sweep
        ``s`` entirely before sweep ``s+1``), so the result is exactly the sequential one.
        """
        if self.count == 0:
            return []
        B = max(self.bottoms) - 1
        by_time: dict[int, list[tuple[int, int]]] = {}
        for s, (top, bottom) in enumerate(zip(self.tops, self.bottoms)):
            for i in range(bottom - 1, top, -1):
                by_time.setdefault(B - i + 2 * s, []).append((s, i))
        return [by_time[t] for t in sorted(by_time)]


@dataclass(frozen=True)
class AddProduct:
    """``R[rows, cols] += R[rows, src] @ V^H``: the rank-p term of ``qr_update``.

    The executor receives ``V`` (n-by-p) as the plan's operand ``'V'``.
    """

    rows: tuple[int, int]
    cols: tuple[int, int]
    src: tuple[int, int]


@dataclass(frozen=True)
class Stage:
    """One stage of an update: a title (as in the papers' figures) and its operations."""

    title: str
    ops: tuple


@dataclass(frozen=True)
class Plan:
    """An update as stages, with the shape of the working ``R`` it runs on."""

    kind: str
    shape: tuple[int, int]          # working R: rows, columns (carried columns included)
    stages: tuple[Stage, ...] = field(default_factory=tuple)

    def ops(self):
        for stage in self.stages:
            yield from stage.ops

    def derived(self, fn):
        """``fn(self)``, computed once per plan: a plan is immutable and built once per
        shape, so what an executor reads off its structure need not be read again."""
        memo = self.__dict__.setdefault("_derived", {})   # beside the frozen fields
        if fn not in memo:
            memo[fn] = fn(self)
        return memo[fn]


# A plan depends only on its integer arguments and is immutable, so one is built once per
# shape: building the hundred panels of a large one took 0.1-0.2 ms of host time, during
# which a GPU waits for the update's first launch.
_cached = functools.lru_cache(maxsize=256)


def plural(count: int, word: str) -> str:
    """``word``, with an s unless ``count`` is one (any integer, NumPy's too)."""
    return word if count == 1 else word + "s"


def default_block(p: int) -> int:
    """Panel width for a block of ``p`` rows or columns.

    The papers pick about ten panels per factorization (001 Section 4.1).  But a panel of
    ``nb`` reflectors that each touch only ``p + 1`` rows costs about ``4 (nb + p)`` flops
    per column and trailing entry, against ``4 (p + 1)`` unblocked: panels much wider than
    ``p`` waste work, panels much narrower waste matrix-product efficiency and launches.
    So ``nb = p``, kept between 16 and 128.
    """
    return int(min(128, max(16, p)))


def _band_panels(first: int, last: int, band: int, nrows: int, nb: int, what: str):
    """Householder panels that reduce columns ``first:last`` of a matrix with ``band``
    nonzero subdiagonals (removing columns, the rank-p update): panel ``c0:c1`` spans
    rows ``c0 : c1 + band``, the ``p + nb`` rows that hold nonzeros (001 writes
    ``(p + nb + 1) x nb`` blocks, 000 ``(p + nb) x nb``; Fig. 3)."""
    last = min(last, nrows - 1)     # the last row has nothing below it to remove
    stages = []
    for b, c0 in enumerate(range(first, last, nb)):
        c1 = min(c0 + nb, last)
        r1 = min(c1 + band, nrows)
        stages.append(Stage(f"{what} block {b + 1}: Householder on columns {c0}-{c1 - 1}, "
                            f"rows {c0}-{r1 - 1}",
                            (Reflect(((c0, r1),), (c0, c1)),)))
    return stages


def _below_r(nrows: int, n_r: int, cols: tuple[int, int], zero_to: int | None = None):
    """Stage 1 of adding columns and of the rank-p update: a Householder QR of the rows
    of ``W = Q^H U`` (columns ``cols``) below R's triangle of ``n_r`` rows.  R is zero
    there, so nothing fills; afterwards column ``s`` of ``W`` is nonzero down to row
    ``n_r + s``, where the Givens sweeps after it start.  Returns the stage and those
    sweeps' ``bottoms``."""
    stage = Stage(f"Stage 1: Householder QR of the {nrows - n_r} rows of Q^H U below R",
                  (Reflect(((n_r, nrows),), cols, zero_to=zero_to),))
    return stage, tuple(min(n_r + s + 1, nrows) for s in range(cols[1] - cols[0]))


@_cached
def plan_delete_cols(nrows: int, n: int, k: int, p: int, nb: int | None = None) -> Plan:
    """Removing columns ``k:k+p`` (001 Section 3.2, Fig. 3).

    The working R is R with those columns deleted (``nrows`` by ``n - p`` plus carried
    columns): columns ``k:`` then hold ``p`` subdiagonals, reduced by Householder panels.
    """
    n_new = n - p
    nb = nb or default_block(p)
    stages = _band_panels(k, n_new, p, nrows, nb, "Remove columns:")
    return Plan("delete_cols", (nrows, n_new), tuple(stages))


@_cached
def plan_insert_cols(nrows: int, n: int, k: int, p: int) -> Plan:
    """Adding ``p`` columns before column ``k`` (001 Section 3.1, Fig. 2).

    The working R is ``[R[:, :k], W, R[:, k:]]`` with ``W = Q^H U`` (``nrows`` by
    ``n + p``, where ``R`` has ``n`` columns).  The rows of ``W`` below the triangle of
    ``R`` are dense.

    Stage 1: Householder QR of those rows of ``W``.  Stage 2: Givens sweeps bottom-up on
    each column of ``W``; Householder cannot be used there because it would fill the
    shifted columns of ``R`` (001 Section 3.1).

    Unless those shifted columns are few: when ``p >= 4 (n - k)`` (and ``A~`` stays tall),
    Stage 1 reduces all of ``W`` below row ``k`` by Householder, filling the ``n - k``
    shifted columns below row ``k + p``, and Stage 2 is their Householder QR.  That costs
    about ``4 m (m - k - p) (n - k)`` more flops on Q, but replaces ``2 p + n - k``
    dependent waves of rotations.
    """
    n_r = min(nrows, n)             # rows that hold the triangle of R
    if k < n and 4 * (n - k) <= p and nrows >= n + p:
        return Plan("insert_cols", (nrows, n + p), (
            Stage(f"Stage 1: Householder QR of the {nrows - k} rows of [R; Q^H U] from row "
                  f"{k} in the new columns", (Reflect(((k, nrows),), (k, k + p)),)),
            Stage(f"Stage 2: Householder QR of the {n - k} filled columns after them, from "
                  f"row {k + p}", (Reflect(((k + p, nrows),), (k + p, n + p)),))))
    stages, bottoms = [], (nrows,) * p
    if nrows - n_r > 1:
        # (those rows are zero right of the new columns, but for carried columns past
        # n + p, a right-hand side)
        stage, bottoms = _below_r(nrows, n_r, (k, k + p), zero_to=n + p)
        stages.append(stage)
    sweeps = Sweeps("R", (k, k + p), tuple(k + s for s in range(p)), bottoms, (k + p, None))
    if sweeps.count:
        title = f"Givens sweeps up the {p} new {plural(p, 'column')}"
        stages.append(Stage(f"Stage {len(stages) + 1}: {title}", (sweeps,)))
    return Plan("insert_cols", (nrows, n + p), tuple(stages))


@_cached
def plan_insert_rows(nrows: int, n: int, p: int, nb: int | None = None) -> Plan:
    """Adding ``p`` rows (001 Section 3.3, Fig. 4).

    The working R is ``[R; U]`` (``nrows + p`` rows): the new rows are permuted to the
    bottom, where the position ``k`` no longer matters.  Each panel of columns ``c0:c1`` is
    reduced by reflectors that touch only the diagonal rows ``c0:c1`` and the ``p`` new
    rows: the compact ``V = [I; 0; v]``, ``T`` representation of the papers.
    """
    nb = nb or default_block(p)
    last = min(n, nrows + p - 1)
    stages = []
    for b, c0 in enumerate(range(0, last, nb)):
        c1 = min(c0 + nb, last)
        if c1 <= nrows:
            rows = ((c0, c1), (nrows, nrows + p))
        else:                                   # wide A: the diagonal runs into the new rows
            rows = ((c0, min(c1, nrows)), (nrows, nrows + p)) if c0 < nrows \
                else ((c0, nrows + p),)
        rows = tuple((a, b_) for a, b_ in rows if b_ > a)
        if len(rows) == 2 and rows[0][1] == rows[1][0]:
            rows = ((rows[0][0], rows[1][1]),)
        stages.append(Stage(f"Add rows block {b + 1}: Householder on columns {c0}-{c1 - 1} "
                            f"and the {p} new {plural(p, 'row')}", (Reflect(rows, (c0, c1)),)))
    return Plan("insert_rows", (nrows + p, n), tuple(stages))


@_cached
def plan_delete_rows(nrows_q: int, n: int, p: int, nc: int = 0,
                     householder: bool = True) -> Plan:
    """Removing ``p`` rows (001 Section 3.4, Fig. 5).

    The working R has ``n`` columns and ``nc`` carried ones after them, all ``nrows_q``
    rows tall: the carried columns (``Q^H b``) are dense down to the last row.

    The rows of Q that belong to the removed rows of A are permuted to the top (the strip
    ``Z``); sweep ``s`` zeroes row ``s`` of ``Z`` right to left, one Givens rotation per
    pair of adjacent columns of Q, applied to the same rows of R.  Afterwards
    ``Z = [D, 0]`` with ``D`` diagonal of unit modulus and R has ``p`` subdiagonals, so
    ``Q[p:, p:]`` and ``R[p:]`` are the new factors.  A reflector that zeroes a row of
    ``Z`` would mix the rows of R and fill it (001 Section 3.4).

    But not the rows of R below ``n``: they are zero (but for carried columns, which
    have no shape to keep).  So with ``householder`` (and more than ``p`` rows of R below
    ``n``) a first stage reduces ``Z``'s columns past ``n`` by Householder, an LQ
    factorization ``Z[:, n:] = [L, 0] H^H`` with ``L`` lower triangular, applied to
    those columns of Q as matrix products.  Sweep ``s`` then starts at column ``n + s``
    instead of the last: ``n + p - 1`` waves of rotations rather than ``m + p - 2``, as the
    papers' first stage of adding columns does for the rows of ``Q^H U`` below R.
    Without ``householder``: the papers' algorithm, sweeps only.
    """
    n_r = min(nrows_q, n)                   # rows that hold the triangle of R
    stages = []
    if householder and nrows_q - n_r > p:
        stages.append(Stage(f"Stage 1: Householder LQ of the {p} {plural(p, 'row')} of Q to "
                            f"remove, in its {nrows_q - n_r} columns past R's triangle",
                            (Reflect(((n_r, nrows_q),), (0, p), zero_to=n, driver="Q"),)))
        bottoms = tuple(n_r + s + 1 for s in range(p))
    else:
        bottoms = (nrows_q,) * p
    sweeps = Sweeps("Q", (0, p), tuple(range(p)), bottoms, (0, None),
                    dense_from=n if nc else None)
    title = f"Givens sweeps along the {p} {plural(p, 'row')} of Q to remove"
    stages.append(Stage(f"Stage 2: {title}" if stages else f"Remove rows: {title}",
                        (sweeps,)))
    return Plan("delete_rows", (nrows_q, n + nc), tuple(stages))


@_cached
def plan_rank_update(nrows: int, n: int, p: int, nb: int | None = None) -> Plan:
    """Rank-p update ``A + U V^H`` (Golub & Van Loan 12.5.1, blocked).

    The working R is ``[R, W]`` with ``W = Q^H U`` in columns ``n:n+p``.  With more than
    ``p`` rows below R's triangle (a full Q), Stage 1 is a Householder QR of W's rows
    there (R is zero on them, so nothing fills): the sweeps then start from row
    ``n + s`` for column ``s``, not from the bottom, and touch ``n + p`` columns of Q, not
    ``m`` (on an H100, a rank-1 update of 8000 x 1000 with full Q in float64: 7.9 ms with
    sweeps from the bottom, 4.0 ms so).  Then Givens sweeps reduce ``W`` to ``p`` rows,
    leaving ``p`` subdiagonals in R; the rank-p term ``W[:p] V^H`` is added to the top
    rows; and Householder panels remove the band, as in removing columns.
    """
    nb = nb or default_block(p)
    q = min(p, nrows)
    n_r = min(nrows, n)             # rows that hold the triangle of R
    stages, bottoms = [], (nrows,) * p
    if nrows - n_r > p:
        stage, bottoms = _below_r(nrows, n_r, (n, n + p))
        stages.append(stage)
    sweeps = Sweeps("R", (n, n + p), tuple(range(p)), bottoms, (0, n))
    at = len(stages) + 1
    stages += [Stage(f"Stage {at}: Givens sweeps reduce Q^H U to {q} rows", (sweeps,)),
               Stage(f"Stage {at + 1}: add the rank-p term to the top rows",
                     (AddProduct((0, q), (0, n), (n, n + p)),))]
    stages += _band_panels(0, n, p, nrows, nb, f"Stage {at + 2}:")
    return Plan("rank_update", (nrows, n + p), tuple(stages))
