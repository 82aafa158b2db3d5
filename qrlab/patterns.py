"""The pattern executor: runs an update's stages on zero/nonzero masks and records frames.

The numeric executor (:mod:`qrlab.executor`) applies a :class:`~qrlab.stages.Plan` to
arrays; :class:`PatternExecutor` applies the *same* plan to boolean masks (True: possibly
nonzero), so the drawings show what the kernels really do.  The updates' own setup code
in :mod:`qrlab.updates` builds the working pair from masks as it does from numbers
(NumPy booleans concatenate, transpose and multiply: ``@`` is a boolean matrix product),
so :func:`trace` needs no copy of the algorithms.

The symbolic rules, one per operation:

* **Reflect** -- reflector ``j`` of the panel acts on the gathered rows ``j:`` where its
  column is nonzero (``v`` is nonzero there, ``v_j = 1``).  Those rows become the union of
  their patterns in every later column of R (fill), and the columns of Q with the same
  indices become the union of theirs; the pivot becomes nonzero and the rows below it
  exact zeros.  A column that is already zero below its pivot gives ``H = I`` (LAPACK's
  ``larfg`` sets ``tau = 0``), so nothing changes.
* **Sweeps** -- a rotation of rows ``(i-1, i)`` makes both rows the union of the two on
  the columns it touches (the driver lines and ``apply_cols``) and columns ``i-1, i`` of Q
  the union of the two; the driver entry becomes an exact zero.
* **AddProduct** -- ``R[rows, cols] += R[rows, src] V^H``: a target entry is nonzero when
  it was, or when its row of ``R[:, src]`` has a nonzero (``V`` is dense).

One rule comes from orthogonality rather than from the operations: when a row of a square
unitary Q is left with a single nonzero, that entry has modulus one, so the rest of its
column is zero (removing rows, 001 Fig. 5: ``Q`` becomes ``[D 0; 0 Q~]``).  Those zeros hold
only up to rounding in floating point; frames flag them in ``Q_roundoff``.

Each recorded :class:`Frame` gives, per entry of R (and Q), one of the papers' symbols:
``'0'`` zero, ``'*'`` nonzero, ``'-'`` a nonzero this stage makes zero, ``'+'`` a zero this
stage makes nonzero (fill-in).  A frame shows the state *before* its stage, marked with
what the stage does, as the papers' figures do.

Indices are 0-based, as in SciPy; the papers count ``k`` from 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import updates
from .executor import METHODS, Executor
from .stages import AddProduct, Plan, Reflect, Sweeps, default_block, plural

__all__ = ["ZERO", "NONZERO", "ZEROED", "FILL", "SYMBOLS", "KINDS", "Frame",
           "PatternExecutor", "trace", "limits", "describe"]

ZERO, NONZERO, ZEROED, FILL = 0, 1, 2, 3
SYMBOLS = "0*-+"        # indexed by the codes above: the papers' symbols

KINDS = ("insert_cols", "delete_cols", "insert_rows", "delete_rows", "rank_update")


@dataclass
class Frame:
    """One picture of an update: R (and Q) as symbol codes, with the regions to shade.

    Attributes
    ----------
    title : str
        What the picture shows (the stage title of :mod:`qrlab.stages`).
    kind : str
        One of :data:`KINDS`.
    step : str
        'setup' (the whole update at a glance), 'stage', 'wave' (one Givens wave or one
        Householder panel inside a stage) or 'result'.
    R, Q : ndarray of int8
        Codes :data:`ZERO`, :data:`NONZERO`, :data:`ZEROED`, :data:`FILL` per entry.
        ``Q`` is None for an R-only trace.
    blue_R, blue_Q : ndarray of bool
        The inserted block (or, for removing rows, the rows of Q that go away).
    red_R, red_Q : ndarray of bool
        The active region: entries that the frame's operations read or write.
    cut : int or None
        Removing columns: the removed columns sat just before column ``cut`` (the papers'
        blue line).
    Q_roundoff : ndarray of bool or None
        Entries of Q that are zero in exact arithmetic but hold rounding errors in floating
        point (see the module notes).
    """

    title: str
    kind: str
    step: str
    R: np.ndarray
    Q: np.ndarray | None
    blue_R: np.ndarray
    blue_Q: np.ndarray | None
    red_R: np.ndarray
    red_Q: np.ndarray | None
    cut: int | None = None
    Q_roundoff: np.ndarray | None = None

    def before(self, which: str = "R") -> np.ndarray:
        """Nonzero pattern at the start of the frame."""
        codes = self.R if which == "R" else self.Q
        return (codes == NONZERO) | (codes == ZEROED)

    def after(self, which: str = "R") -> np.ndarray:
        """Nonzero pattern at the end of the frame."""
        codes = self.R if which == "R" else self.Q
        return (codes == NONZERO) | (codes == FILL)


def _codes(before, after):
    codes = np.full(before.shape, ZERO, dtype=np.int8)
    codes[before & after] = NONZERO
    codes[before & ~after] = ZEROED
    codes[~before & after] = FILL
    return codes


@dataclass
class _Record:
    title: str
    step: str
    Q0: np.ndarray | None
    R0: np.ndarray
    Q1: np.ndarray | None
    R1: np.ndarray
    red_R: np.ndarray
    red_Q: np.ndarray | None
    roundoff: np.ndarray | None


class PatternExecutor:
    """Run plans on boolean masks, recording the pattern before and after each stage.

    Same interface as :class:`qrlab.executor.Executor`: ``run(plan, Q, R, operands)``
    updates ``Q`` (may be None) and ``R`` in place.

    Parameters
    ----------
    detail : bool
        Record one step per Givens wave, and two per Householder panel (the panel, then
        its reflectors on the columns to its right and on Q, as 001 Fig. 4 splits them),
        instead of one per stage (for finer animations).
    method : {'blocked', 'paper'}
        The numeric executor's method whose plans to draw: 'paper' draws the papers'
        algorithms where qrlab's differ (removing rows: Givens sweeps only, no first
        stage of reflectors).

    Attributes
    ----------
    records : list
        Filled by :meth:`run`: per step the title, the masks before and after, and the
        active region.
    start, end : tuple
        ``(Q, R)`` masks at the start and at the end of the plan.

    Examples
    --------
    >>> import numpy as np
    >>> from qrlab import stages
    >>> from qrlab.patterns import PatternExecutor
    >>> R = np.triu(np.ones((5, 4), dtype=bool))
    >>> R_w = np.concatenate([R[:, :1], R[:, 2:]], axis=1)   # column 1 removed
    >>> ex = PatternExecutor()
    >>> _ = ex.run(stages.plan_delete_cols(5, 4, 1, 1), None, R_w)
    >>> R_w.astype(int)
    array([[1, 1, 1],
           [0, 1, 1],
           [0, 0, 1],
           [0, 0, 0],
           [0, 0, 0]])
    """

    def panel_width(self, p: int, dtype) -> int:
        """The numeric executor's default, so patterns show the panels it runs."""
        return default_block(p)

    def __init__(self, detail: bool = False, method: str = "blocked"):
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {method!r}")
        self.detail, self.method = detail, method
        self.records: list[_Record] = []
        self.start = self.end = None
        self._supports = []             # reflector supports of the last panel reduced

    # -- driver -------------------------------------------------------------------
    working_copies = Executor.working_copies      # (masks are copied as values are)
    working_copy_of_q = Executor.working_copy_of_q

    def run(self, plan: Plan, Q, R, operands=None):
        """Apply every operation of ``plan`` to the masks ``Q`` (or None) and ``R``."""
        self.records = []
        self._ncols, self._has_q = R.shape[1], Q is not None
        self.roundoff = None if Q is None else np.zeros(Q.shape, dtype=bool)
        self.start = (_copy(Q), R.copy())
        for stage in plan.stages:
            for title, step, chunk in self._chunks(stage):
                Q0, R0 = _copy(Q), R.copy()
                red_R = np.zeros(R.shape, dtype=bool)
                red_Q = None if Q is None else np.zeros(Q.shape, dtype=bool)
                for op, wave in chunk:
                    self._apply(op, wave, Q, R, operands, red_R, red_Q)
                self.records.append(_Record(title, step, Q0, R0, _copy(Q), R.copy(),
                                            red_R, red_Q, _copy(self.roundoff)))
        self.end = (_copy(Q), R.copy())
        return Q, R

    def _chunks(self, stage):
        """``(title, step, [(op, wave or None), ...])`` per recorded step of a stage."""
        if not self.detail:
            chunk = []
            for op in stage.ops:
                if isinstance(op, Sweeps):
                    chunk += [(op, wave) for wave in op.waves()]
                else:
                    chunk.append((op, None))
            yield stage.title, "stage", chunk
            return
        for op in stage.ops:
            if isinstance(op, Sweeps):
                waves = op.waves()
                for w, wave in enumerate(waves):
                    yield f"{stage.title}, wave {w + 1}/{len(waves)}", "wave", [(op, wave)]
            elif isinstance(op, Reflect) and op.driver == "Q":
                yield f"{stage.title}: the panel (rows of Q)", "wave", [(op, "panel")]
                yield (f"{stage.title}: the same reflectors on the other rows of Q",
                       "wave", [(op, "trailing")])
            elif isinstance(op, Reflect) and op.cols[1] < self._ncols:
                yield f"{stage.title}: the panel", "wave", [(op, "panel")]
                yield (f"{stage.title}: the same reflectors on the columns to the right"
                       + (" and on Q" if self._has_q else ""), "wave", [(op, "trailing")])
            else:
                yield stage.title, "wave", [(op, None)]

    def _apply(self, op, wave, Q, R, operands, red_R, red_Q):
        if isinstance(op, Reflect):
            self.reflect(op, Q, R, red_R, red_Q, wave)
        elif isinstance(op, Sweeps):
            self.wave(op, wave, Q, R, red_R, red_Q)
        elif isinstance(op, AddProduct):
            V = operands["V"] if operands and "V" in operands else None
            self.add_product(op, R, V, red_R)
        else:                                       # pragma: no cover - plan bug
            raise TypeError(f"unknown operation {op!r}")

    # -- Householder panels ---------------------------------------------------------
    def reflect(self, op: Reflect, Q, R, red_R=None, red_Q=None, part=None):
        """Householder QR of the panel, one reflector at a time (see the module notes).

        ``part``: 'panel' (reduce the panel only), 'trailing' (apply the reflectors found
        by the 'panel' call to the trailing columns and to Q: the papers' Stage 1 and
        Stage 2 of 001 Fig. 4), or None for both.
        """
        rows = op.row_list()
        c0, c1 = op.cols
        if op.driver == "Q":
            self._reflect_by_q(op, rows, Q, R, red_R, red_Q, part)
            return
        if part in (None, "panel"):
            self._supports = _reduce_panel(R, rows, c0, c1)
            if red_R is not None:
                red_R[np.ix_(rows, range(c0, c1))] = True
        if part in (None, "trailing"):
            for supp in self._supports:
                R[np.ix_(supp, range(c1, R.shape[1]))] = R[supp, c1:].any(axis=0)
                if Q is not None:
                    Q[:, supp] = Q[:, supp].any(axis=1, keepdims=True)
            if red_R is not None:
                red_R[np.ix_(rows, range(c1, R.shape[1]))] = True
            if red_Q is not None:
                red_Q[:, rows] = True

    def _reflect_by_q(self, op: Reflect, rows, Q, R, red_R, red_Q, part):
        """A panel of rows of Q (``driver='Q'``): the same rules on ``M = [R, Q^H]``,
        whose rows ``rows`` are ``R[rows]`` and the columns ``rows`` of Q."""
        c0, c1 = op.cols
        if part in (None, "panel"):
            P = np.ascontiguousarray(Q[:, rows].T)       # M's rows `rows`, Q's part
            self._supports = [[rows[i] for i in supp]
                              for supp in _reduce_panel(P, list(range(len(rows))), c0, c1)]
            Q[:, rows] = P.T
            if red_Q is not None:
                red_Q[np.ix_(range(c0, c1), rows)] = True
        if part in (None, "trailing"):
            z = op.zero_to or 0
            others = [r for r in range(Q.shape[0]) if not c0 <= r < c1]
            for supp in self._supports:
                R[np.ix_(supp, range(z, R.shape[1]))] = R[supp, z:].any(axis=0)
                Q[np.ix_(others, supp)] = Q[np.ix_(others, supp)].any(axis=1, keepdims=True)
            if red_R is not None:
                red_R[np.ix_(rows, range(z, R.shape[1]))] = True
            if red_Q is not None:
                red_Q[np.ix_(others, rows)] = True

    # -- Givens sweeps ----------------------------------------------------------------
    def wave(self, op: Sweeps, wave, Q, R, red_R=None, red_Q=None):
        """One wave of rotations of ``op`` (a list of ``(sweep, i)`` pairs)."""
        l0, l1 = op.lines
        a0, a1 = op.apply_cols
        a1 = R.shape[1] if a1 is None else a1
        cols = list(range(a0, a1))
        if op.driver == "R":
            cols = list(range(l0, l1)) + cols
        for s, i in wave:
            pair = [i - 1, i]
            if cols:
                R[np.ix_(pair, cols)] = R[np.ix_(pair, cols)].any(axis=0)
            if Q is not None:
                Q[:, pair] = Q[:, pair].any(axis=1, keepdims=True)
            if op.driver == "R":
                R[i, l0 + s] = False
            elif Q is not None:
                Q[l0 + s, i] = False
            if red_R is not None and cols:
                red_R[np.ix_(pair, cols)] = True
            if red_Q is not None and Q is not None:
                red_Q[:, pair] = True
        if op.driver == "Q" and Q is not None and Q.shape[0] == Q.shape[1]:
            self._unit_rows(Q, range(l0, l1))

    def _unit_rows(self, Q, rows):
        """A row of a unitary Q with one nonzero makes the rest of that column zero."""
        for r in rows:
            nz = np.flatnonzero(Q[r])
            if len(nz) == 1:
                col = Q[:, nz[0]]
                others = col.copy()
                others[r] = False
                self.roundoff |= _column_mask(Q.shape, nz[0], others)
                col[others] = False

    # -- rank-p term --------------------------------------------------------------------
    @staticmethod
    def add_product(op: AddProduct, R, V=None, red_R=None):
        r0, r1 = op.rows
        c0, c1 = op.cols
        s0, s1 = op.src
        if V is None:
            V = np.ones((c1 - c0, s1 - s0), dtype=bool)
        R[r0:r1, c0:c1] |= R[r0:r1, s0:s1] @ V.conj().T
        if red_R is not None:
            red_R[r0:r1, c0:c1] = True
            red_R[r0:r1, s0:s1] = True


def _reduce_panel(R, rows, c0, c1):
    """Reduce ``R[rows, c0:c1]`` in place; return each reflector's rows (its support)."""
    supports = []
    for j in range(min(len(rows), c1 - c0)):
        col = c0 + j
        below = [r for r in rows[j + 1:] if R[r, col]]
        if not below:
            continue                                # H = I: larfg gives tau = 0
        supp = [rows[j]] + below
        R[np.ix_(supp, range(col + 1, c1))] = R[supp, col + 1:c1].any(axis=0)
        R[rows[j], col] = True
        R[below, col] = False
        supports.append(supp)
    return supports


def _copy(a):
    return None if a is None else a.copy()


def _column_mask(shape, col, rows):
    mask = np.zeros(shape, dtype=bool)
    mask[:, col] = rows
    return mask


# ------------------------------------------------------------------------------------
# tracing a whole update
# ------------------------------------------------------------------------------------
def limits(kind: str, m: int, n: int, p: int = 1):
    """Valid ranges ``{'p': (lo, hi), 'k': (lo, hi)}`` (inclusive, 0-based ``k``).

    Examples
    --------
    >>> from qrlab.patterns import limits
    >>> limits('delete_cols', 8, 5, 2)
    {'p': (1, 5), 'k': (0, 3)}
    >>> limits('insert_rows', 8, 5, 3)['k']
    (0, 8)
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    p_max = {"delete_cols": n, "delete_rows": m}.get(kind, max(m, n, p))
    k_max = {"insert_cols": n, "delete_cols": n - p, "insert_rows": m,
             "delete_rows": m - p, "rank_update": 0}[kind]
    return {"p": (1, p_max), "k": (0, k_max)}


def describe(kind: str, m: int, n: int, p: int, k: int) -> str:
    """One line naming the update, ``k`` 0-based with the papers' 1-based value beside it.

    Examples
    --------
    >>> from qrlab.patterns import describe
    >>> describe('delete_cols', 8, 5, 2, 1)
    '8x5 R: remove p=2 columns at k=1 (paper k=2)'
    """
    cols = f"p={p} {plural(p, 'column')}"
    rows = f"p={p} {plural(p, 'row')}"
    return {
        "insert_cols": f"{m}x{n} R: insert {cols} before column k={k} (paper k={k + 1})",
        "delete_cols": f"{m}x{n} R: remove {cols} at k={k} (paper k={k + 1})",
        "insert_rows": f"{m}x{n} R: insert {rows} before row k={k} (paper k={k + 1})",
        "delete_rows": f"{m}x{n} R: remove {rows} at k={k} (paper k={k + 1})",
        "rank_update": f"{m}x{n} R: rank-{p} update A + U V^T",
    }[kind]


def trace(kind: str, m: int, n: int, p: int, k: int = 0, Q: str | None = "full",
          nb: int | None = None, detail: bool = False, method: str = "blocked") -> list[Frame]:
    """The frames of an update of an ``m x n`` factorization, stage by stage.

    Runs the update's own setup (:mod:`qrlab.updates`) and plan on masks of a full
    factorization: ``Q`` dense ``m x m``, ``R`` upper triangular ``m x n``, the new rows or
    columns dense.

    Parameters
    ----------
    kind : {'insert_cols', 'delete_cols', 'insert_rows', 'delete_rows', 'rank_update'}
    m, n : int
        Rows and columns of ``A`` (and of ``R``).
    p : int
        Rows or columns added or removed (the rank for 'rank_update').
    k : int
        0-based index of the first row or column added or removed (the papers' ``k - 1``);
        ignored by 'rank_update'.
    Q : {'full', None}
        Track the full Q as well, or R alone (only for 'delete_cols' and 'insert_rows',
        the updates that can run without Q).
    nb : int, optional
        Householder panel width (default: :func:`qrlab.stages.default_block`).
    detail : bool
        One frame per Givens wave and two per Householder panel (see
        :class:`PatternExecutor`), instead of one per stage.
    method : {'blocked', 'paper'}
        Draw qrlab's plan, or the papers' where they differ (removing rows: 'paper'
        has no first stage of reflectors; see :func:`qrlab.stages.plan_delete_rows`).

    Returns
    -------
    list of Frame
        A 'setup' frame (the working pair marked with what the whole update zeroes and
        fills: 000 Figs. 1-3), one frame per stage (or wave), and a 'result' frame with
        the new factors.

    Examples
    --------
    >>> from qrlab.patterns import trace
    >>> from qrlab.viz import text
    >>> frames = trace('delete_cols', 6, 4, 1, 1)
    >>> [f.step for f in frames]
    ['setup', 'stage', 'result']
    >>> print(text(frames[1], markers=False))
    * * *
    0 * *
    0 - *
    0 0 -
    0 0 0
    0 0 0
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if Q not in ("full", None):
        raise ValueError("Q must be 'full' or None (thin Q has no mask-only setup)")
    if Q is None and kind not in ("delete_cols", "insert_rows"):
        raise ValueError(f"{kind} needs Q")
    lim = limits(kind, m, n, p)
    if m < 1 or n < 1:
        raise ValueError("m and n must be at least 1")
    if not lim["p"][0] <= p <= lim["p"][1]:
        raise ValueError(f"p={p} is out of range {lim['p']} for {kind}")
    if kind == "rank_update":
        k = 0
    elif not lim["k"][0] <= k <= lim["k"][1]:
        raise ValueError(f"k={k} is out of range {lim['k']} for {kind} (0-based)")

    Qm = np.ones((m, m), dtype=bool) if Q == "full" else None
    Rm = np.triu(np.ones((m, n), dtype=bool))
    mode = "full" if Q == "full" else "none"
    ex = PatternExecutor(detail=detail, method=method)
    if kind == "insert_cols":
        Qf, Rf = updates._insert_cols(Qm, Rm, np.ones((m, p), bool), k, mode, ex)
    elif kind == "delete_cols":
        Qf, Rf = updates._delete_cols(Qm, Rm, k, p, mode, ex, nb=nb)
    elif kind == "insert_rows":
        Qf, Rf = updates._insert_rows(Qm, Rm, np.ones((p, n), bool), k, mode, ex, nb=nb)
    elif kind == "delete_rows":
        Qf, Rf = updates._delete_rows(Qm, Rm, k, p, mode, ex)
    else:
        Qf, Rf = updates._rank_update(Qm, Rm, np.ones((m, p), bool), np.ones((n, p), bool),
                                      mode, ex, nb=nb)
    if mode == "none" and kind == "insert_rows" and m == n:
        Rf = Rf[:n]                     # qr_insert's R-only square case returns n rows
    return _frames(kind, m, n, p, k, ex, Qf, Rf)


def _blue(kind, m, n, p, k, Rshape, Qshape):
    """Inserted block in the working pair (removing rows: the rows of Q that go away,
    permuted to the top by the setup)."""
    bR = np.zeros(Rshape, dtype=bool)
    bQ = None if Qshape is None else np.zeros(Qshape, dtype=bool)
    if kind == "insert_cols":
        bR[:, k:k + p] = True
    elif kind == "rank_update":
        bR[:, n:n + p] = True
    elif kind == "insert_rows":
        bR[m:m + p] = True
        if bQ is not None:
            bQ[m:m + p] = True
    elif kind == "delete_rows" and bQ is not None:
        bQ[:p] = True
    return bR, bQ


def _frames(kind, m, n, p, k, ex, Qf, Rf):
    (Q0, R0), (Q1, R1) = ex.start, ex.end
    what = describe(kind, m, n, p, k)
    bR, bQ = _blue(kind, m, n, p, k, R0.shape, None if Q0 is None else Q0.shape)
    cut = k if kind == "delete_cols" else None
    noneR = np.zeros(R0.shape, dtype=bool)
    noneQ = None if Q0 is None else np.zeros(Q0.shape, dtype=bool)
    qcodes = (lambda a, b: None if a is None else _codes(a, b))
    where = {"insert_rows": "; the new rows go to the bottom",
             "delete_rows": "; their rows of Q move to the top"}.get(kind, "")
    frames = [Frame(f"setup: {what}{where}", kind, "setup", _codes(R0, R1), qcodes(Q0, Q1),
                    bR, bQ, noneR, noneQ, cut)]
    for rec in ex.records:
        frames.append(Frame(rec.title, kind, rec.step, _codes(rec.R0, rec.R1),
                            qcodes(rec.Q0, rec.Q1), bR, bQ, rec.red_R, rec.red_Q, cut,
                            rec.roundoff))
    # the result: the new factors as the update returns them
    Rf = np.asarray(Rf)
    fbR = np.zeros(Rf.shape, dtype=bool)
    fbQ = None if Qf is None else np.zeros(Qf.shape, dtype=bool)
    if kind == "insert_cols":
        fbR[:, k:k + p] = True
    if kind == "insert_rows" and fbQ is not None:
        fbQ[k:k + p] = True             # the new rows of A, back in place
    frames.append(Frame(f"result: R~ is {Rf.shape[0]}x{Rf.shape[1]}", kind, "result",
                        _codes(Rf, Rf), qcodes(Qf, Qf), fbR, fbQ,
                        np.zeros(Rf.shape, dtype=bool),
                        None if Qf is None else np.zeros(Qf.shape, dtype=bool),
                        cut if kind == "delete_cols" else None))
    return frames
