"""The numeric executor: runs a :class:`~qrlab.stages.Plan` on NumPy or CuPy arrays.

One class, written once against the array module of its inputs.  The plan says *what*
is eliminated where; this module says *how* on dense arrays:

* :class:`~qrlab.stages.Reflect` -- LAPACK/cuSOLVER ``geqrf`` on the gathered panel, the
  compact WY ``T``, and three matrix products for the trailing columns and for ``Q``.
* :class:`~qrlab.stages.Sweeps` -- in two phases.  First every rotation is computed on the
  driver lines alone (``p`` columns; one vectorised wave of disjoint rotations at a time).
  Then, with ``method='blocked'``, the rotations of ``nbw`` consecutive waves are
  multiplied into one small orthogonal matrix ``G`` (about ``nbw + 2p`` square) and
  applied to R and Q by two matrix products: many dependent rotations per pass over
  memory, at matrix-multiply speed.  ``method='paper'`` applies each wave straight to R
  and Q, as the papers' makeGivens/applyGivens kernels do (001 Section 2).

The GPU executor (:mod:`qrlab.gpu`) subclasses this one and replaces the hot loops by
fused CUDA kernels; the pattern executor (:mod:`qrlab.patterns`) mirrors it on masks.

Examples
--------
Run the plan of removing column 1 on the R of a 6 x 4 matrix (Q-less):

>>> import numpy as np
>>> from qrlab import stages
>>> from qrlab.executor import Executor
>>> A = np.random.default_rng(0).standard_normal((6, 4))
>>> R = np.linalg.qr(A, mode="r")
>>> R_w = np.delete(R, 1, axis=1)                  # setup: R with the column removed
>>> _ = Executor().run(stages.plan_delete_cols(4, 4, 1, 1), None, R_w)
>>> bool(np.all(np.tril(R_w, -1) == 0))
True
>>> bool(np.allclose(abs(R_w[:3]), abs(np.linalg.qr(np.delete(A, 1, axis=1), mode="r"))))
True
"""
from __future__ import annotations

import numpy as np

from .backend import array_module, matmul, working_copy
from .givens import givens, rotate_rows
from .householder import apply_wy_left, panel_qr, wy_factor
from .stages import AddProduct, Plan, Reflect, Sweeps, default_block

__all__ = ["Executor", "METHODS"]

METHODS = ("blocked", "paper")


class Executor:
    """Run plans on dense arrays.

    Parameters
    ----------
    method : {'blocked', 'paper'}
        How Givens sweeps reach R and Q: in groups of waves, each accumulated into a block
        applied by matrix products (default), or one wave at a time as in the papers.
    wave_block : int, optional
        Waves per accumulated block (default ``max(32, 2 p)``: the block's row window is
        about ``wave_block + 2p`` and its cost per rotation ``(wave_block + 2p)^2 /
        wave_block``, smallest at ``2p``).  On a GPU, the waves per group of the kernel
        that applies the rotations directly (default :func:`qrlab.gpu.apply_waves`).
    """

    #: the structured Cholesky update's growth test (``cholesky_update``'s Notes; on a GPU
    #: :meth:`qrlab.gpu.GpuExecutor.structured_update`): the largest growth in its small
    #: factorizations that it takes (more goes to the chain of reflectors; 0: no test).
    #: At 100 the backward error of what the update returns stayed within 5.4 times the
    #: chain's in float32 and 3.1 in float64, in every family of inputs measured on an
    #: H100 (benchmarks/results/growth-test-*.md)
    growth_max = 100.0

    def __init__(self, method: str = "blocked", wave_block: int | None = None):
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {method!r}")
        self.method = method
        self.wave_block = wave_block

    def panel_width(self, p: int, dtype) -> int:
        """Columns per Householder panel for a block of ``p`` (see
        :func:`qrlab.stages.default_block`)."""
        del dtype
        return default_block(p)

    # -- driver -------------------------------------------------------------------
    def run(self, plan: Plan, Q, R, operands=None):
        """Apply every operation of ``plan`` to ``Q`` (may be ``None``) and ``R`` in place."""
        for op in plan.ops():
            self.run_op(op, Q, R, operands)
        return Q, R

    def run_op(self, op, Q, R, operands=None):
        """Apply one operation of a plan (``operands``: the plan's inputs besides Q, R)."""
        if isinstance(op, Reflect):
            self.reflect(op, Q, R)
        elif isinstance(op, Sweeps):
            self.sweeps(op, Q, R)
        elif isinstance(op, AddProduct):
            self.add_product(op, R, operands["V"])
        else:                                       # pragma: no cover - plan bug
            raise TypeError(f"unknown operation {op!r}")

    def working_copies(self, Q, R, first=(0, 0)):
        """New row-major copies of ``Q`` (its rows ``first = (k, p)`` on top) and ``R``
        for a plan to work on in place (:func:`qrlab.backend.working_copy`)."""
        return working_copy(Q, first=first), working_copy(R)

    def working_copy_of_q(self, Q):
        """A new row-major copy of ``Q`` (:func:`qrlab.backend.working_copy`) for a plan
        whose first panel does not read it (adding columns: ``Q^H U`` comes from the
        caller's Q)."""
        return working_copy(Q)

    # -- Householder panels ---------------------------------------------------------
    def reflect(self, op: Reflect, Q, R, later=False):
        """One Householder panel: columns ``cols`` of R, or with ``driver == "Q"`` rows
        ``cols`` of Q (columns of ``M = [R, Q^H]``).  Its reflectors are found and the
        panel set to its exact ``[Rp; 0]`` now; the rest (the compact WY ``T``, the
        reflectors on R's columns past the panel, or past ``zero_to``, and on Q's other
        rows or columns) is done now, or returned as a callable with ``later`` (the GPU
        executor runs it beside the sweeps that start from the panel)."""
        by_q = op.driver == "Q"
        rows = self.panel_rows(op, Q if by_q else R)
        c0, c1 = op.cols
        panel = Q[c0:c1, rows].conj().T if by_q else R[rows, c0:c1]
        V, make_t, Rp = self.factor_panel(panel, later=True)
        if by_q:
            Q[c0:c1, rows] = self._reduced(panel, Rp).conj().T
        else:
            R[rows, c0:c1] = self._reduced(panel, Rp)
        z = self.reflect_cols_from(op)

        def rest():
            T = make_t()
            if z < R.shape[1]:
                R[rows, z:] = apply_wy_left(V, T, R[rows, z:])
            if by_q:
                for other in (Q[:c0], Q[c1:]):
                    if other.shape[0]:
                        self.reflect_q(other, rows, V, T)
            elif Q is not None:
                self.reflect_q(Q, rows, V, T)
        if later:
            return rest
        rest()

    @staticmethod
    def reflect_cols_from(op: Reflect):
        """The first column of R that a panel's reflectors reach past the panel itself:
        ``zero_to`` for a panel of rows of Q, else the end of the panel or ``zero_to``."""
        if op.driver == "Q":
            return op.zero_to or 0
        return op.cols[1] if op.zero_to is None else max(op.cols[1], op.zero_to)

    @staticmethod
    def _reduced(panel, Rp):
        """The panel after its reflectors: ``[Rp; 0]``, the eliminated entries exactly
        zero."""
        new_panel = array_module(panel).zeros_like(panel)
        new_panel[: Rp.shape[0]] = Rp
        return new_panel

    #: values per block of rows in :meth:`reflect_q`'s products (4 MB in float64)
    reflect_block = 1 << 19

    def reflect_q(self, Q, rows, V, T):
        """``Q[:, rows] = Q[:, rows] (I - V T V^H)``: a panel's reflectors on Q
        (:func:`~qrlab.householder.apply_wy_right`), in place, a block of rows at a time:
        ``C -= (C V T) V^H`` makes no temporary as large as ``C`` (with NumPy on 2 cores,
        removing a row of a 4000 x 2000 factorization with full Q took 189 ms against 219
        with ``C - ((C V) T) V^H`` written back, adding a column 201 against 230)."""
        C = Q[:, rows]                          # (a view for a slice, else a copy)
        X = matmul(matmul(C, V), T)
        VH = V.conj().T
        step = max(1, self.reflect_block // max(1, VH.shape[1]))
        for i0 in range(0, C.shape[0], step):
            C[i0:i0 + step] -= matmul(X[i0:i0 + step], VH)
        if not isinstance(rows, slice):
            Q[:, rows] = C

    @staticmethod
    def panel_rows(op: Reflect, M):
        """Index of the panel's rows in R, or of its columns in Q (a slice for one span,
        an index array for two)."""
        xp = array_module(M)
        return xp.asarray(op.row_list()) if len(op.rows) > 1 else slice(*op.rows[0])

    def factor_panel(self, panel, later=False):
        """Householder QR of one panel: ``V`` (unit lower trapezoidal), the compact WY
        ``T`` with ``H_1 ... H_w = I - V T V^H``, and the triangle ``Rp``.  With
        ``later``, a callable that returns ``T`` in its place: a caller that needs only
        ``Rp`` first leaves T's dozen array operations until then."""
        V, tau, Rp = panel_qr(panel)
        return V, self.wy(V, tau, later), Rp

    @staticmethod
    def wy(V, tau, later=False):
        """:func:`~qrlab.householder.wy_factor` ``(V, tau)``, or with ``later`` a callable
        that returns it."""
        return (lambda: wy_factor(V, tau)) if later else wy_factor(V, tau)

    @staticmethod
    def weak_tolerance(dtype, m):
        """``100 eps m``: times ``||y_j||``, the ``|r_jj|`` at or below which a column
        ``y_j`` adds no direction in :meth:`extend_basis` (every executor's test)."""
        return 100 * np.finfo(dtype).eps * m

    def extend_basis(self, Y, width):
        """The end of :func:`qrlab.updates._extend_basis`: ``Y`` (m x (p + width)) holds
        the projected columns, then the projected fallback directions.  Returns ``Qy``
        (m x width), ``Ry = Qy^H Y[:, :p]`` and ``d``, the ``|r_jj|`` of the QR of
        ``Y[:, :width]``; a column with ``d_j <= 100 eps m ||y_j||`` gives way to its
        fallback before the second QR, which makes ``Qy``: there the part of ``y_j``
        outside the columns before it is at the level of their rounding, so its
        direction is not to be trusted to stay orthogonal to Q.  Above it, however small
        ``d_j``, the direction is kept (``y_j`` was projected twice), and so is all of
        ``y_j``."""
        xp = array_module(Y)
        m, p = Y.shape[0], Y.shape[1] - width
        Yw, fallback = Y[:, :width], Y[:, p:]
        d = abs(xp.diagonal(self.factor_panel(Yw)[2]))
        norms = xp.sqrt((abs(Yw) ** 2).sum(axis=0))
        weak = d <= self.weak_tolerance(Y.real.dtype, m) * norms
        V, T, _ = self.factor_panel(xp.where(weak[None, :], fallback, Yw))
        # Qy = H_1 ... H_w [I; 0] = [I; 0] - V T V[:w]^H
        Qy = xp.eye(m, width, dtype=Y.dtype) - matmul(V, matmul(T, V[:width].conj().T))
        return Qy, matmul(Qy.conj().T, Y[:, :p]), d

    def fuses_triangle(self, dtype, k):
        """Whether this executor reduces ``[R; W]`` (``W`` with ``k`` rows) in fused
        kernels (:meth:`qrlab.gpu.GpuExecutor.triangle_update`); the reference executor
        does not, and :mod:`qrlab.cholesky` then runs its array-operation panels."""
        del dtype, k
        return False

    def structured_passes(self, dtype, n, k):
        """In how many passes this executor runs the structured rank-``k`` Cholesky update
        of an ``n x n`` factor in fused kernels
        (:meth:`qrlab.gpu.GpuExecutor.structured_update`); 0: it does not."""
        del dtype, n, k
        return 0

    # -- Givens sweeps ----------------------------------------------------------------
    def sweeps(self, op: Sweeps, Q, R):
        xp = array_module(R)
        l0, l1 = op.lines
        # Phase 1: every rotation, computed on the driver lines alone.
        D = self.take_driver(op, Q, R)
        waves = self.rotations(xp, op, D)
        self.put_driver(op, Q, R, D)
        q_rows = self.driven_rows(op)
        # Phase 2: the same rotations on the rest of R and Q.
        a0, a1 = op.apply_cols
        a1 = R.shape[1] if a1 is None else a1
        Rc = R[:, a0:a1] if a1 > a0 else None
        Qc = Q[q_rows, :] if Q is not None else None
        if self.method == "paper":
            for ia, ib, c, s, _, _ in waves:
                if Rc is not None:
                    rotate_rows(Rc, ia, ib, c, s)
                if Qc is not None:
                    # Q G^H on columns (a, b) is G acting on rows of Q^T with conj(s)
                    QcT = Qc.T
                    rotate_rows(QcT, ia, ib, c, s.conj())
        else:
            self._apply_blocked(xp, waves, Rc, Qc, l1 - l0)
        if Rc is not None:
            R[:, a0:a1] = Rc
        if Qc is not None:
            Q[q_rows, :] = Qc

    def rotations(self, xp, op: Sweeps, D):
        """Every rotation of ``op``, wave by wave (:meth:`Sweeps.waves`), found on its
        driver lines ``D`` (rows of ``M = [R, Q^H]``, reduced in place): a list of
        ``(ia, ib, c, s, lo, hi)``, the rows each rotation pairs, its coefficients and
        the wave's span of rows."""
        return [self._compute_wave(xp, D, wave) for wave in op.waves()]

    @staticmethod
    def take_driver(op: Sweeps, Q, R):
        """A contiguous copy of the driver lines as rows of ``M = [R, Q^H]``: the
        columns ``lines`` of R, or the rows ``lines`` of Q transposed and conjugated."""
        l0, l1 = op.lines
        return R[:, l0:l1].copy() if op.driver == "R" else Q[l0:l1, :].conj().T.copy()

    @staticmethod
    def driven_rows(op: Sweeps):
        """The rows of Q the rotations must reach besides the driver: all of them, or
        those below a driver made of rows of Q."""
        return slice(None) if op.driver == "R" else slice(op.lines[1], None)

    @staticmethod
    def put_driver(op: Sweeps, Q, R, D):
        """Write the reduced driver lines back."""
        l0, l1 = op.lines
        if op.driver == "R":
            R[:, l0:l1] = D
        else:
            Q[l0:l1, :] = D.conj().T

    @staticmethod
    def _compute_wave(xp, D, wave):
        rows = [i for _, i in wave]
        s_ix = xp.asarray([s for s, _ in wave])
        ib = xp.asarray(rows)
        ia = ib - 1
        c, s = givens(D[ia, s_ix], D[ib, s_ix])
        rotate_rows(D, ia, ib, c, s)
        D[ib, s_ix] = 0                     # the zero the rotation was built to make
        # the row range on the host, so blocking never waits on the device
        return ia, ib, c, s, min(rows) - 1, max(rows) + 1

    def _apply_blocked(self, xp, waves, Rc, Qc, p):
        nbw = self.wave_block or max(32, 2 * p)
        for b0 in range(0, len(waves), nbw):
            block = waves[b0: b0 + nbw]
            lo = min(w[4] for w in block)
            hi = max(w[5] for w in block)
            G = xp.eye(hi - lo, dtype=block[0][3].dtype)
            for ia, ib, c, s, _, _ in block:
                rotate_rows(G, ia - lo, ib - lo, c, s)
            if Rc is not None:
                Rc[lo:hi] = G @ Rc[lo:hi]
            if Qc is not None:
                Qc[:, lo:hi] = Qc[:, lo:hi] @ G.conj().T

    # -- rank-p term --------------------------------------------------------------------
    @staticmethod
    def add_product(op: AddProduct, R, V):
        r0, r1 = op.rows
        c0, c1 = op.cols
        s0, s1 = op.src
        R[r0:r1, c0:c1] += matmul(R[r0:r1, s0:s1], V.conj().T)
