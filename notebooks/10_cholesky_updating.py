# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Rank-$k$ Cholesky updating and downdating
#
# A symmetric positive definite $n \times n$ matrix $A$ has a Cholesky factorization
# $A = R^T R$ with $R$ upper triangular and $\operatorname{diag}(R) > 0$.  When $A$ changes
# by a low-rank term, with $V$ an $n \times k$ matrix,
#
# $$\tilde A = A + V V^T \ \text{(update)}, \qquad \tilde A = A - V V^T \ \text{(downdate)},$$
#
# the factor $\tilde R$ of $\tilde A$ can be computed from $R$ and $V$ in $O(k n^2)$
# operations, instead of forming $\tilde A$ and factorizing it again in $O(n^3)$.  This
# notebook follows Walder's note on doing this on a GPU (seed 004, "Rank $k$ Cholesky
# up/down-dating on the GPU"): the hyperbolic rotations of its Algorithm 1 and their two
# orderings, the panel ordering of its Fig. 1, then qrlab's blocked version
# (`qrlab.cholesky_update`, `qrlab.cholesky_downdate`), its speed against
# refactorization, its errors measured as in 004 Figs. 2-3, what happens when a downdate
# is impossible, and what dropping $Q$ costs a least-squares problem.
#
# 004 calls the factor $L$ although it is *upper* triangular ($A = L^T L$); here it is
# $R$, as in the rest of qrlab.  Indices are 0-based.  The small examples run on NumPy;
# the timings, the error measurements and the last section run on the default array
# module (`qrlab.default_module()`: CuPy on a GPU, NumPy otherwise).
#
# **Why a QR notebook series cares.**  If $X = QR$ is an $m \times n$ least-squares matrix,
# then $X^T X = R^T Q^T Q R = R^T R$: $R$ is the Cholesky factor of $X^T X$.  Adding rows
# $U$ ($p \times n$) to $X$ adds $U^T U$ to $X^T X$, and removing them subtracts it, so
#
# * adding rows without $Q$ is the Cholesky **update** of $R$ by $V = U^T$;
# * removing rows without $Q$ is the Cholesky **downdate** of $R$ by $V = U^T$.
#
# `LeastSquaresQR(..., q='none')` removes rows exactly this way (the last section).

# %%
import json
import math
import os
from contextlib import contextmanager
from pathlib import Path

# Time both sides on one thread on the CPU (see notebook 04).  Set before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

import qrlab
import qrlab.backend
import qrlab.cholesky
import qrlab.config
import qrlab.executor
from qrlab import LeastSquaresQR, cholesky_downdate, cholesky_update
from qrlab.backend import to_numpy
from qrlab.bench import Timer

np.set_printoptions(precision=3, suppress=True)
xp = qrlab.default_module()          # NumPy here, CuPy on a GPU: timings, errors, last part
EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}


def n_axis(ax, ns):
    """Label a logarithmic n axis with the values of n themselves."""
    ax.set_xticks(list(ns), [str(n) for n in ns])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.tick_params(labelsize=7)
    ax.set_xlabel("n", fontsize=8)


def spd_problem(n, k, rng, downdate=False):
    """R (upper, A = R^T R) and V for a small well-conditioned example, on NumPy."""
    X = rng.standard_normal((n + 3, n))
    V = rng.standard_normal((n, k)) / np.sqrt(k)
    A = X.T @ X / (n + 3) + np.eye(n) + (V @ V.T if downdate else 0)
    return np.linalg.cholesky(A).T, V, A


# %%
# NBVAL_IGNORE_OUTPUT
# (the answer depends on the machine, so the test suite does not compare it)
print("backend:", qrlab.backend.describe())
print("problem sizes:", qrlab.config.size())

# %% [markdown]
# ## Update and downdate in one call
#
# A $6 \times 6$ example: $R$ from `numpy.linalg.cholesky` (which returns the lower
# factor $R^T$), a rank-2 $V$, and the modified factors checked against $A \pm VV^T$.

# %%
rng = np.random.default_rng(0)
R, V, A = spd_problem(6, 2, rng)
R_up = cholesky_update(R, V)
assert np.allclose(R_up.T @ R_up, A + V @ V.T)
assert np.array_equal(R_up, np.triu(R_up)) and np.all(np.diag(R_up) > 0)
R_back = cholesky_downdate(R_up, V)              # and back again
assert np.allclose(R_back, R)
print("R~ (update):")
print(R_up)

# %% [markdown]
# The least-squares reading: $R$ of a QR factorization of $X$, updated by $V = U^T$, is
# the $R$ of $X$ with the rows $U$ appended (up to the signs of its rows: QR leaves them
# free, Cholesky makes the diagonal positive), and the downdate takes them out again.

# %%
X = rng.standard_normal((10, 4))
U = rng.standard_normal((3, 4))
R_X = np.linalg.qr(X, mode="r")
R_XU = np.linalg.qr(np.vstack([X, U]), mode="r")


def positive(R):
    """R with its rows signed so that the diagonal is positive."""
    return R * np.sign(np.diag(R))[:, None]


assert np.allclose(cholesky_update(R_X, U.T), positive(R_XU))      # rows added
assert np.allclose(cholesky_downdate(R_XU, U.T), positive(R_X))    # rows removed
print("R of [X; U] == cholesky_update(R of X, U^T): True")
print("R of X      == cholesky_downdate(R of [X; U], U^T): True")

# %% [markdown]
# ## The hyperbolic rotation (004 Algorithm 1)
#
# Put $R$ on top of $V^T$: $M = \begin{bmatrix} R \\ V^T \end{bmatrix}$ is
# $(n + k) \times n$ and $M^T J M = R^T R + \sigma V V^T$ with the signature
# $J = \operatorname{diag}(I_n, \sigma I_k)$, $\sigma = +1$ for an update and $-1$ for a
# downdate.  Any $H$ with $H^T J H = J$ ("$J$-orthogonal") keeps $M^T J M$; if $H M$ is
# $\begin{bmatrix} \tilde R \\ 0 \end{bmatrix}$, then $\tilde R^T \tilde R = R^T R +
# \sigma VV^T$.  For $k = 1$, 004 zeroes $V$ one entry at a time against the diagonal of
# $R$, each with a $2 \times 2$ transformation of row $i$ of $R$ and of $V$:
#
# * `Compute`: $w = \sqrt{R_{ii}^2 + \sigma V_i^2}$, $c_i = w / R_{ii}$,
#   $s_i = V_i / R_{ii}$, then $R_{ii} \leftarrow w$;
# * `Apply` to the rest of row $i$ ($j > i$): $R_{ij} \leftarrow (R_{ij} + \sigma s_i
#   V_j) / c_i$, then $V_j \leftarrow c_i V_j - s_i R_{ij}$, using the *new* $R_{ij}$.
#
# Written as a matrix (the second line uses $c_i^2 - \sigma s_i^2 = 1$),
#
# $$\begin{bmatrix} R_{ij} \\ V_j \end{bmatrix} \leftarrow H_i
# \begin{bmatrix} R_{ij} \\ V_j \end{bmatrix}, \qquad H_i = \frac{1}{c_i}
# \begin{bmatrix} 1 & \sigma s_i \\ -s_i & 1 \end{bmatrix}
# = \begin{bmatrix} R_{ii}/w & \sigma V_i/w \\ -V_i/w & R_{ii}/w \end{bmatrix}.$$
#
# For an update that is a Givens rotation (cosine $R_{ii}/w$, sine $V_i/w$).  For a
# downdate it is a **hyperbolic rotation**: $\cosh t = R_{ii}/w$, $\sinh t = -V_i/w$,
# $\cosh^2 - \sinh^2 = 1$, and it needs $R_{ii}^2 - V_i^2 > 0$.  It is $J$-orthogonal
# with $J = \operatorname{diag}(1, \sigma)$, and it maps $(R_{ii}, V_i)$ to $(w, 0)$:

# %%
def rotation(r, v, sigma):
    """004's Compute as a 2 x 2 matrix: H with H [r, v] = [w, 0] and H^T J H = J."""
    w = math.sqrt(r * r + sigma * v * v)
    c, s = w / r, v / r
    return w, np.array([[1.0, sigma * s], [-s, 1.0]]) / c


for sigma, (r, v) in ((+1, (3.0, 4.0)), (-1, (5.0, 4.0))):
    w, H = rotation(r, v, sigma)
    J = np.diag([1.0, sigma])
    assert np.allclose(H @ [r, v], [w, 0]) and np.allclose(H.T @ J @ H, J)
    print(f"sigma = {sigma:+d}: (R_ii, V_i) = ({r:g}, {v:g}) -> (w, 0) = ({w:g}, 0); H =")
    print(H)

# 004's Apply, entry by entry, is the same H applied to the pair (R_ij, V_j):
w, H = rotation(5.0, 4.0, -1)
c, s = w / 5.0, 4.0 / 5.0
rij, vj = 2.0, 1.0
rij_new = (rij + -1 * s * vj) / c
vj_new = c * vj - s * rij_new
assert np.allclose([rij_new, vj_new], H @ [rij, vj])

# %% [markdown]
# In exact arithmetic a hyperbolic rotation can be applied in several algebraically equal
# ways; the "mixed" form of `Apply` (the new $R_{ij}$ feeds the update of $V_j$) is the
# one that behaves well in floating point.  $H$ of a downdate has norm
# $(|R_{ii}| + |V_i|)/w$, which is large when $w$ is small: that is where a downdate is
# ill-conditioned, and when $R_{ii}^2 - V_i^2 \le 0$ there is no real $w$ at all.
#
# ## Two orderings of the same rotations: CholeskyModifyA and CholeskyModifyB
#
# For $k = 1$ there are $n$ rotations (one per row $i$), and rotation $i$ touches the
# entries $R_{ij}$, $j \ge i$.  Entry $R_{ij}$ depends on rotations $0, \dots, i$ in that
# order.  004 gives two loop orders that respect this:
#
# * **CholeskyModifyA** (column by column): for each column $i$, apply the stored rotations
#   of rows $0..i-1$ to $R_{0:i,\,i}$ and $V_i$, then compute rotation $i$.  The inner loop
#   reads $c_j, s_j$ and one column of $R$; $V_i$ stays in a register.  Walder's choice for
#   the GPU: one thread per column.
# * **CholeskyModifyB** (row by row, LINPACK `dchud` style): for each row $i$, compute
#   rotation $i$, then sweep it along row $i$ of $R$ and $V_{i+1:}$.  The inner loop reads
#   and writes $R_{ij}$ and $V_j$.
#
# (004's listing of CholeskyModifyA calls `Compute` before the inner loop; $V_i$ must first
# receive the earlier rotations, so qrlab computes rotation $i$ after that loop.)
#
# The order in which each entry of $R$ receives its final value, numbered from 1:

# %%
def ordering_grid(n, ordering):
    """Step (from 1) at which each R[i, j], j >= i, gets its final value; 0 below."""
    grid = np.zeros((n, n), dtype=int)
    step = 0
    for i in range(n):
        if ordering == "A":      # column i: rotations of rows 0..i-1, then Compute
            cells = [(j, i) for j in range(i)] + [(i, i)]
        else:                    # row i: Compute, then Apply along the row
            cells = [(i, j) for j in range(i, n)]
        for cell in cells:
            step += 1
            grid[cell] = step
    return grid


def grid_text(grid):
    """A grid of step numbers as text; '.' where nothing happens."""
    w = len(str(grid.max()))
    return "\n".join(" ".join(f"{v:>{w}}" if v else f"{'.':>{w}}" for v in row)
                     for row in grid)


n_demo = 6
for name, ordering in (("CholeskyModifyA, column by column", "A"),
                       ("CholeskyModifyB, row by row", "B")):
    print(f"{name} (n = {n_demo}, k = 1):")
    print(grid_text(ordering_grid(n_demo, ordering)))
    print()
assert ordering_grid(n_demo, "A").max() == ordering_grid(n_demo, "B").max() == 21

# %% [markdown]
# Each entry sees the same operations in the same order in both: rotation $j$ is applied
# to $R_{ji}$ and $V_i$ only after rotations $0..j-1$, and the $k$ columns of $V$ are
# applied one after another at each entry.  So the two orderings give **bit for bit** the
# same result (tests/test_cholesky.py checks this too), and qrlab's blocked method agrees
# with them to rounding.  Small examples on NumPy, update and downdate:

# %%
for downdate in (False, True):
    R, V, A = spd_problem(12, 3, np.random.default_rng(3), downdate=downdate)
    R_a = cholesky_update(R, V, downdate=downdate, method="rotations-A")
    R_b = cholesky_update(R, V, downdate=downdate, method="rotations-B")
    R_blk = cholesky_update(R, V, downdate=downdate, method="blocked")
    target = A - V @ V.T if downdate else A + V @ V.T
    assert np.array_equal(R_a, R_b)                               # bit for bit
    assert np.allclose(R_a.T @ R_a, target, rtol=0, atol=1e-13)
    assert np.max(np.abs(R_blk - R_a)) < 1e-13
    print(f"{'downdate' if downdate else 'update  '} n = 12, k = 3: rotations-A == "
          f"rotations-B bit for bit: True; blocked agrees to < 1e-13: True")

# %% [markdown]
# ## Panels: the ordering of 004 Fig. 1
#
# A GPU kernel per column (the inner loop of CholeskyModifyA) would mean $n$ launches.
# 004 Section 4 instead splits $R$ into diagonal chunks of `BlocksPerKernel` $\times$
# `ThreadsPerBlock` columns (three chunks in Fig. 1, with `BlocksPerKernel` = 3) and
# computes, in this order: the top-left diagonal block on the CPU (grey), a panel on the
# GPU (blue), the middle diagonal block on the CPU (grey), a panel on the GPU (green), the
# bottom-right diagonal block on the CPU (grey).
#
# 004's text names the panels by colour only; which entries each GPU panel holds follows
# from its description of the kernel (the grid below is that reading): one thread per
# column of $R$, keeping that column's entries of $V$ in registers, `BlocksPerKernel`
# thread blocks of `ThreadsPerBlock` columns each (the tall, skinny red rectangles), each
# walking down its columns in `ThreadsPerBlock`-square steps with the $c, s$ of those rows
# in shared memory.  That is CholeskyModifyA for a chunk of columns: the kernel applies the
# rotations of **all rows above** the next diagonal chunk to that chunk's columns; the CPU
# then computes the chunk's own rotations.  It is a *left-looking* order; $c, s$ of each
# new chunk are sent to the GPU once, and the GPU holds one panel of $R$ at a time.
#
# Below, `BlocksPerKernel` = 3 and `ThreadsPerBlock` = 2, so chunks of 6 and $n = 18$;
# each entry of $R$ shows the step (1-5) that gives it its final value:

# %%
def walder_steps(chunks, width):
    """004 Fig. 1: odd steps the diagonal blocks (CPU), even steps the panels above the
    next diagonal block (GPU), numbered from 1."""
    n = chunks * width
    grid = np.zeros((n, n), dtype=int)
    for c in range(chunks):
        j0, j1 = c * width, (c + 1) * width
        if c:
            grid[:j0, j0:j1] = 2 * c                    # GPU: all rows above, these columns
        grid[j0:j1, j0:j1] = np.triu(np.full((width, width), 2 * c + 1))   # CPU
    return grid


BPK, TPB = 3, 2                     # BlocksPerKernel (as in Fig. 1), ThreadsPerBlock
CHUNKS, CHUNK = 3, BPK * TPB        # three diagonal chunks, as Fig. 1 draws them
fig1 = walder_steps(CHUNKS, CHUNK)
print(f"004 Fig. 1 order, n = {CHUNKS * CHUNK}, chunks of {CHUNK} columns")
print(grid_text(fig1))
print("1, 3, 5: diagonal blocks on the CPU (grey); 2: GPU panel (blue); "
      "4: GPU panel (green)")
assert fig1.max() == 2 * CHUNKS - 1

# %%
# NBVAL_IGNORE_OUTPUT
# (a figure: the test suite compares the text grid above instead)
COLOURS = {"cpu": (0.72, 0.72, 0.72), 2: (0.55, 0.72, 1.0), 4: (0.55, 0.85, 0.55)}


def draw_steps(ax, grid, colour_of, title, blocks=()):
    n = grid.shape[0]
    img = np.ones((n, n, 3))
    for i, j in zip(*np.nonzero(grid)):
        img[i, j] = colour_of(grid[i, j])
        ax.text(j, i, str(grid[i, j]), ha="center", va="center", fontsize=6)
    ax.imshow(img, interpolation="nearest", extent=(-0.5, n - 0.5, n - 0.5, -0.5))
    for (i0, i1, j0, j1) in blocks:      # GPU thread blocks: red, with dotted squares
        ax.add_patch(Rectangle((j0 - 0.5, i0 - 0.5), j1 - j0, i1 - i0, fill=False,
                               edgecolor="red", lw=1.2))
        for i in range(i0 + (j1 - j0), i1, j1 - j0):
            ax.plot([j0 - 0.5, j1 - 0.5], [i - 0.5, i - 0.5], ":", color="red", lw=0.8)
    ax.xaxis.tick_top()
    ax.tick_params(labelsize=6, length=2)
    ax.set_title(title, fontsize=8, pad=12)


blocks = [(0, c * CHUNK, j, j + TPB) for c in range(1, CHUNKS)
          for j in range(c * CHUNK, (c + 1) * CHUNK, TPB)]
fig, ax = plt.subplots(figsize=(3.6, 3.8), dpi=70)
draw_steps(ax, fig1, lambda s: COLOURS.get(s, COLOURS["cpu"]),
           "004 Fig. 1: CPU grey, GPU blue then green;\nred: GPU thread blocks", blocks)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## qrlab's blocked method
#
# `method='blocked'` (the default) does the same work with reflectors instead of
# rotations and with matrix products instead of a hand-written kernel:
#
# * the $k$ rotations of a row become one reflector of length $k + 1$ (plain for an
#   update, hyperbolic for a downdate), which zeroes a whole column of $V^T$ at once;
# * the columns are taken in **panels of $b$** (`block_size`, 64 on NumPy; on CuPy 32
#   columns in one kernel launch for the whole update, or 256 in array operations when
#   `block_size` is given);
#   the $b$ reflectors of a panel are gathered into a compact WY block and applied to
#   the trailing part of the panel's rows of $R$ and to $W = V^T$ by three matrix
#   products;
# * **all $k$ columns of $V$ go through in one pass** (004 takes `ElementsPerThread` = 16
#   of them per kernel call, so $\lceil k / 16 \rceil$ passes);
# * the panel itself is factored by one small Cholesky factorization whose result is
#   checked (`panel='cholesky'`), or column by column (`panel='householder'`).
#
# It is *right-looking*: once panel $p$ is factored, its reflectors update everything to
# its right, so each row of $R$ is read and written once.  Its order for the same $n = 18$
# with $b = 6$:

# %%
def blocked_steps(n, b):
    """qrlab's blocked order: panel p factored at step 2p+1, its rows to the right of it
    updated by the panel's reflectors at step 2p+2 (numbered from 1)."""
    grid = np.zeros((n, n), dtype=int)
    for p, j0 in enumerate(range(0, n, b)):
        j1 = min(j0 + b, n)
        grid[j0:j1, j0:j1] = np.triu(np.full((j1 - j0, j1 - j0), 2 * p + 1))
        grid[j0:j1, j1:] = 2 * p + 2
    return grid


ours = blocked_steps(18, 6)
print("qrlab blocked order, n = 18, b = 6")
print(grid_text(ours))
print("1, 3, 5: panels factored (one small Cholesky + check each); "
      "2, 4: trailing rows updated (3 GEMMs each)")
assert ours.max() == fig1.max() == 5
assert np.array_equal(ours % 2 == 1, fig1 % 2 == 1)    # the same diagonal blocks ...
assert not np.array_equal(ours, fig1)                  # ... different off-diagonal panels

# %% [markdown]
# Both orders take $2 \cdot \lceil n/b \rceil - 1$ steps.  The number of array operations,
# and so of kernel launches on a GPU, is a fixed number per panel (about 30 for a
# Cholesky panel and its update), whatever $k$.  Counting the calls of qrlab's panel
# routines for $n = 256$, $b = 64$:

# %%
@contextmanager
def counting(*names):
    """Count calls of qrlab.cholesky's private panel routines while the block runs."""
    counts = dict.fromkeys(names, 0)
    saved = {name: getattr(qrlab.cholesky, name) for name in names}

    def counted(name, inner):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return inner(*args, **kwargs)
        return wrapper

    for name, inner in saved.items():
        setattr(qrlab.cholesky, name, counted(name, inner))
    try:
        yield counts
    finally:
        for name, inner in saved.items():
            setattr(qrlab.cholesky, name, inner)


n_c, b_c = 256, 64
panels = math.ceil(n_c / b_c)
print(f"n = {n_c}, b = {b_c}: {panels} panels")
print(f"{'k':>4} {'Cholesky panels':>16} {'column-by-column':>17} {'trailing updates':>17}"
      f" {'004 GPU launches':>17} {'rotations':>10}")
for k in (1, 16, 64):
    R, V, A = spd_problem(n_c, k, np.random.default_rng(k))
    with counting("_cholesky_panel", "_householder_panel", "_apply_panel") as calls:
        cholesky_update(R, V, block_size=b_c)
    assert calls["_cholesky_panel"] == panels and calls["_householder_panel"] == 0
    assert calls["_apply_panel"] == panels - 1
    walder = (n_c // b_c - 1) * math.ceil(k / 16)     # chunks of b columns, 16 of V per call
    print(f"{k:>4} {calls['_cholesky_panel']:>16} {calls['_householder_panel']:>17} "
          f"{calls['_apply_panel']:>17} {walder:>17} {k * n_c * (n_c + 1) // 2:>10}")

# %% [markdown]
# The panel count does not move with $k$: 4 panels and 3 trailing updates for $k = 1$ as
# for $k = 64$, while the $k n (n+1)/2$ scalar rotations of Algorithm 1 grow with $k$.
# (The "004 GPU launches" column counts 004's off-diagonal kernels for chunks of the same
# width: $\lceil k/16 \rceil$ per panel.)  A panel whose checked Cholesky factorization
# fails (an ill-conditioned diagonal block) is redone column by column, about 15 array
# operations per column; the tests count that fallback.
#
# ## Update, downdate or refactorize: timings on this machine
#
# Against recomputation: form $\tilde A = A \pm VV^T$ and call `numpy.linalg.cholesky`
# (or `cupy.linalg.cholesky`, cuSOLVER, on a GPU), with the forming of $\tilde A$
# included, and excluded (when $\tilde A$ is at hand anyway).  $A = X^TX/n + I$, $V$ fresh
# for each run with $\|V\|_F = 0.9$ so that $A - VV^T$ stays positive definite, float64,
# median of 5 runs after a warm-up (`qrlab.bench.Timer`: CUDA events on a GPU).  Counted
# in flops, the update costs about $(2k + b)\, n^2$ against $k n^2 + n^3/3$ for
# refactorizing: on paper the update wins by a factor of about $n / (6k + 3b)$.

# %%
# NBVAL_IGNORE_OUTPUT
TIME_N = qrlab.config.pick(small=(100, 200, 400, 800), paper=(1000, 2000, 5000, 10000))
TIME_K = (1, 16, 64)
timer = Timer(xp)


def time_case(n, k, dtype="float64", reps=5):
    rng = np.random.default_rng(n + k)
    X = xp.asarray(rng.standard_normal((n, n)), dtype=dtype)
    A = X.T @ X / n + xp.eye(n, dtype=dtype)
    R = xp.ascontiguousarray(xp.linalg.cholesky(A).T)

    def fresh_v():
        V = xp.asarray(rng.standard_normal((n, k)), dtype=dtype)
        return (V * (0.9 / float(xp.linalg.norm(V))),)

    def fresh_a():
        V = fresh_v()[0]
        return (A + V @ V.T,)

    return {"n": n, "k": k,
            "update": timer(lambda V: cholesky_update(R, V), fresh_v, reps)[0],
            "downdate": timer(lambda V: cholesky_downdate(R, V), fresh_v, reps)[0],
            "refactor incl": timer(lambda V: xp.linalg.cholesky(A + V @ V.T), fresh_v,
                                   reps)[0],
            "refactor excl": timer(lambda At: xp.linalg.cholesky(At), fresh_a, reps)[0]}


KEYS = ("update", "downdate", "refactor incl", "refactor excl")
times = [time_case(n, k) for n in TIME_N for k in TIME_K]
print(f"{xp.__name__}, float64, milliseconds (median of 5)")
print(f"{'n':>6} {'k':>3}" + "".join(f"{key:>15}" for key in KEYS)
      + f"{'refactor/update':>17}")
for t in times:
    print(f"{t['n']:>6} {t['k']:>3}" + "".join(f"{1e3 * t[key]:>15.2f}" for key in KEYS)
          + f"{t['refactor incl'] / t['update']:>17.2f}")

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(1, len(TIME_K), figsize=(9, 2.8), dpi=70, sharey=True)
for ax, k in zip(axes, TIME_K):
    rows = [t for t in times if t["k"] == k]
    for key, style in zip(KEYS, ("-o", "-s", "--^", ":v")):
        ax.loglog([t["n"] for t in rows], [1e3 * t[key] for t in rows], style, ms=3,
                  label=key)
    ax.set_title(f"k = {k}", fontsize=9)
    n_axis(ax, TIME_N)
axes[0].set_ylabel(f"ms ({xp.__name__}, float64)", fontsize=8)
axes[0].legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# On a CPU (one thread), NumPy's `cholesky` runs LAPACK's blocked factorization at full
# BLAS speed, while the update pays Python and small-matrix overhead per panel: at the
# smallest $n$ refactorizing wins easily, and the update gains ground as $n$ grows (the
# $n^3$ against the $n^2$) and loses some as $k$ grows.  Where they cross depends on the
# machine; the table above is this one's answer, measured on the default array module
# (with `QRLAB_SIZE=paper` on a GPU: CuPy and cuSOLVER, $n$ up to 10000).
#
# ## On an H100: the committed benchmark
#
# `benchmarks/cholesky_bench.py` ran the same comparison on an NVIDIA H100 (CuPy,
# cuSOLVER, CUDA events, median of 5 runs, $n$ up to 20000, $k$ up to 256, both
# precisions); its JSON is in `benchmarks/results/`.  The floor is
# $\max(\text{bytes} / \text{copy bandwidth}, \text{flops} / \text{GEMM rate})$, both
# measured in the same run.

# %%
RESULTS = Path(qrlab.__file__).resolve().parent.parent / "benchmarks" / "results"
h100_file = RESULTS / "cholesky-NVIDIA-H100-80GB-HBM3.json"
h100 = json.loads(h100_file.read_text())
GPU = h100["device"]
rows = h100["results"]
print(f"{h100_file.name}: {GPU}, {h100['timer']}, median of {h100['reps']}, "
      f"{len(rows)} cases")
print("k = 16, milliseconds")
print(f"{'dtype':>8} {'n':>6} {'update':>8} {'downdate':>9} {'refactor incl':>14}"
      f" {'refactor excl':>14} {'floor':>7} {'update/refactor':>16}")
for r in rows:
    if r["k"] == 16:
        print(f"{r['dtype']:>8} {r['n']:>6} {r['t_update_ms']:>8.1f}"
              f" {r['t_downdate_ms']:>9.1f}"
              f" {r['t_recompute_incl_ms']:>14.2f} {r['t_recompute_excl_ms']:>14.2f}"
              f" {r['floor_ms']:>7.3f} {r['t_update_ms'] / r['t_recompute_incl_ms']:>16.1f}")
print()
print("float64 update ms over k (n down, k across)")
print(f"{'n':>6}" + "".join(f"{'k=' + str(k):>8}" for k in (1, 16, 64, 256)))
for n in sorted({r["n"] for r in rows}):
    line = [r["t_update_ms"] for r in rows if r["n"] == n and r["dtype"] == "float64"]
    print(f"{n:>6}" + "".join(f"{t:>8.1f}" for t in line))

# %% [markdown]
# On the GPU the update does not run as array operations. It runs the
# **structured method** (`qrlab/kernels/structured.cu`):
# $\tilde R = M R$, where $M$ is the Cholesky factor of $I \pm P P^T$ and
# $P = R^{-T} V$. $M$ never exists as a matrix: its diagonal blocks and two thin factors
# per block of 64 rows are enough (Gill, Golub, Murray and Saunders' method C1, in
# blocks; see the Notes of `cholesky_update`). One set of thread blocks solves for $P$,
# one block of 64 rows per step, and factors $M$'s diagonal blocks; the others form
# $M R$ as matrix products, in the same launch, each starting on its rows as soon as the
# solve has passed them (an update in place waits for the whole solve, a second
# launch). So the only chain left is the triangular solve, 64 rows a step,
# where the reflectors made a chain of $n$ dependent steps. The kernels take up to 64
# columns of $V$; $k = 256$ runs in **four passes** of 64, each updating the result of
# the one before, queued back to back (no wait for a pass's report before launching the
# next: 0.8 to 0.95 of the time at $n \le 5000$) and overlapped: each pass after the first
# starts while the one before finishes, its blocks waiting for that pass's tiles of 64
# columns (another 0.86 to 0.94 of the time in float32, 0.94 in float64 at $n = 5000$; the
# same results bit for bit), at every $n$ here. Only the last pass writes the zeros below
# the diagonal, since no pass reads that triangle of its input: another 0.96 to 0.98 of the
# time at $k = 256$, $n = 2000$ to 10000. Where more passes would
# be slower (from about 7 at $n \le 3000$ in float32, 8 in float64) the whole update is
# **one launch** of the chain of reflectors (`qrlab/kernels/triangle.cu`). Its
# thread blocks own tiles of 32 columns of a chunk of $V^T$'s rows (43 to 256 of them:
# a model of the launch picks the count). The block that owns the next panel's columns
# brings them up to date and factors them at once against its chunk. It publishes the
# compact WY form through device memory, and every block applies it while the next
# panel is already being factored; the next chunk follows one panel behind. The log
# also times that chain wherever the structured method runs (column
# "chain of reflectors"), one launch of `qrlab/kernels/reflect.cu` per panel (column
# "per-panel launches"), and the array-operation panels ($b = 256$) up to $n = 5000$.
#
# These timings include the structured method's **growth test** (below, under "What
# dropping $Q$ costs"): each block of the solve checks how much its own small Cholesky
# factorizations cancelled, and an update whose growth exceeds 100 goes to the chain of
# reflectors instead. It reads nothing more, and costs nothing measurable (0.98 to 1.01
# of the time without it). It replaced a test that read each row of $R$ once more for a
# diagonal entry below $10^{-2}$ of its row: 1.0 to 1.2 times the update's time, and it
# missed updates that cancel with every pivot of $R$ large
# (`benchmarks/results/growth-test-*.md`).
#
# Plainly: **the update beats cuSOLVER's refactorization for every $k \le 64$ at every $n$ from
# 1000 up, in both precisions**. At $n \ge 5000$ it is 11.1 to 60 times faster with $\tilde A$'s
# forming included and 10.7 to 58 times without; the thinnest margin is float32, $n = 5000$,
# $k = 64$. For $k = 256$ it wins everywhere but float32 at $n = 1000$, where the two are even
# (the update 0.85 ms, refactorizing 0.86 with $\tilde A$'s forming and 0.83 without): 1.7
# to 6.2 times faster in float32 from $n = 2000$, 1.25 to 4.7 in float64 from $n = 1000$. The
# four passes at $k = 256$ are 1.6 to 2.8 times faster than the one launch of the chain at
# every $n$, and bring the update within 4 times of the floor from $n = 5000$ in float64
# (3.67, 2.82 and 2.61; the chain sat at 10.4, 6.5 and 5.3) and at $n = 20000$ in float32
# (3.50; the chain 6.0); float32 misses at $n = 10000$ by a hair (4.07) and at $n = 5000$
# (7.20: four chains of 79 steps). For $k \le 64$ the structured method is 3.7 to 12.6 times
# faster than the chain of reflectors at $n \ge 5000$. At $k \le 64$ and $n \ge 5000$ it sits
# 2.1 to 6.3 times above the floor (the chain sat 7.7 to 69 times above): within 4 times at
# $n = 20000$ and 10000 in both precisions (float32 2.8 to 3.3, float64 2.1 to 3.3) and at
# $n = 5000$ in float64 (3.69, 3.67 and 2.96 for $k = 1$, 16 and 64), but not at $n = 5000$
# in float32 (5.7 to 6.3). Runs of the benchmark differ by a few percent on one machine and
# by up to 15 percent between machines, so the cases near 4 may land on either side. For
# $k = 1$ the
# solve's blocks sum the terms of the blocks before them with no barrier per block, and take the
# last two blocks' results as tagged words (the value and the news that it is there in one
# store, so one round trip to L2 instead of two): in one process, before against after, that
# took 6 to 10 percent off the update in float32 up to $n = 10000$ and 10 to 15 in float64. Then
# the step itself went into registers and shuffles (no block barrier between the previous
# block's result coming and this block's going), and the loop takes the six results before those
# two as tagged words as well (their flags came several microseconds after the words): another
# 25 to 36 percent off in float32 up to $n = 10000$ (12 at 20000) and 13 to 29 in float64 up to
# $n = 5000$ (none beyond, where the later blocks wait for SMs). For $1 < k \le 16$ the same two
# changes (the loop's sums in registers, each warp's part of its products on the tensor cores;
# the step on the tensor cores, with each result handed on as words that are their own flag)
# took 8 to 17 percent off in float32 and 12 to 33 in float64 at $n = 5000$ and 10000. For
# $k = 1$ each block's factor of $M$ has a closed form (method C1 within the block: a prefix sum
# of $x_i^2$ per row, no chain of 64 steps), which took 2 to 13 percent off the update. The
# products run on the tensor cores: in float64 as DMMA, which took the update at $n = 20000$
# from 4.8, 9.0 and 16 ms to 4.0, 5.5 and 8.5 ms for $k = 1$, 16 and 64, and then in tiles of
# 16 x 8 rather than 8 x 8 (twice the rate on an H100) another 10 to 19 percent off at $k = 64$
# and 256 and 12 to 13 at $k = 16$ ($n = 5000$ and 10000: a step of the $k = 64$ chain from 7.5
# to 5.5 us), and writing $P_C$ straight from the product's registers 2 to 3 percent more at
# $k = 64$ and 256; in float32 for
# $k \ge 8$ in 3xTF32 (each value split into two TF32 parts, three products kept), which took 15
# to 18 percent off the update at $n = 5000$ and 10000 for $k = 16$ and 64, with the same
# errors, except the solve's $64 \times 64 \times 64$ products at $k = 64$, which run as DMMA in
# float64 too (the float32 values converted as they are loaded): one block's product is done sooner
# that way. For the step of the chain alone that took a step from 7.4 to 6.9 us, 2 to 3 percent of
# the update; for the solve's other such products too (its loop, $G_C$, and the block's factor of
# $M$) another 7 to 9 percent at $k = 64$ and 256. For $k > 32$ each block's two
# triangular solves with the $k \times k$ factor of $S$ run as products with its inverse (row by row
# they took 73 of the 170 us a block works after its step at $k = 64$); with the hand-off's flag
# published by a release alone (no fence before it) that took 2 to 12 percent off the update at $k =
# 64$. Into a new array the zeros below the diagonal (half of what is written) are written by the
# solve's blocks while they wait for the chain, not by the product's: that took 2.5 to 6.5 percent
# off the update at $n = 10000$ and 20000 for $k \le 16$. The product's jobs look at the flags of up
# to 32 blocks of rows at once, and the solve's last block writes the outcome (a breakdown, a zero
# on the diagonal, a value not finite) to pinned host memory, which the host reads as soon as it is
# there: together 19 to 27 us less a call at $n = 1000$ and 2000 and 2 to 13 percent less at 5000
# and 10000. For $k \le 16$ each block sums the $k \times k$ terms $P_J^T P_J$ of the blocks before
# it with all its threads, many reads in flight, not one block's term after another: 1.3 to 5
# percent off the update, and at $n = 5000$ a block's work after its step from 17 to 12 us (float32,
# $k = 1$) and from 63 to 52 us (float64, $k = 16$). In float64, where the solve's blocks leave the
# product few SMs (one thread block per SM), the product's jobs are shorter up to $n = 5120$ (5
# blocks of 64 rows, not 8), so that fewer of them hold an SM while they wait: 0.5 to 5 percent off
# the update at $n = 2000$ to 5000. In float32 two thread blocks fit on an SM, so a block of
# the solve shared its SM with another block, which slowed its steps; where the solve's
# blocks are few (at most 0.6 of the SMs for $k \le 16$, 0.75 for $k \le 64$: $n$ up to about
# 5000 and 6300 on an H100) the launch now asks for more than half an SM's shared memory,
# so that every block has an SM to itself: 0.80 of the time for $k = 64$ at $n = 3000$ to
# 5000, 0.86 to 0.90 for $k = 16$, 0.82 to 0.85 for $k = 256$ (slower from about $n = 7000$,
# where the product needs the SMs). What bounds it at $n = 5000$ is the solve's chain: a step costs
# 2.3 to 8 us per 64 columns (seeing the flag, loading the previous block from L2, one small product
# and its own flag) when the block is ready for it (for $k = 1$ now about 1.8 us, median), and the
# slowest tenth take 5 to 40 us because the block is still busy with the earlier blocks' terms; 79
# steps at $n = 5000$, while the product $M R$ alone would take 0.11 to 0.28 ms.
# `benchmarks/profile_structured.py` times each block's phases (its table is in
# `benchmarks/results/`): at $n = 5000$, $k = 1$ in float32 the last block publishes its part of $P$
# 146 us after the first block starts, its factor of $M$ at 157, and the product ends at 199 (its
# last job starting at 165: with a block per SM the product has fewer SMs); in float64 at 199, 210
# and 245, the product behind the chain too (its last job starts at 219). For $k = 64$ in float32
# a step takes 4.6 us (6.0 with two blocks per SM), the last $P$ comes at 412 us, the last block's
# factor of $M$ 93 us later and the product ends 62 us after that. So at $n = 5000$ in
# float32 the chain alone takes about all of 4 times the floor or more (its last $P$ at 146,
# 222 and 412 us from the first block's start, the stamps adding a few percent, against 137,
# 199 and 398 us for the whole call at $k = 1$, 16 and 64): a faster factor of $M$ or product
# cannot bring these cases within 4 times; a shorter chain (fewer or cheaper steps) must.
# The checks, on the committed numbers:

# %%
assert all(r["path"] == ("structured" if r["k"] <= 64 else "structured, 4 passes")
           for r in rows)
wins = {(r["dtype"], r["n"], r["k"]) for r in rows
        if max(r["t_update_ms"], r["t_downdate_ms"]) < r["t_recompute_incl_ms"]}
assert all((r["dtype"], r["n"], r["k"]) in wins for r in rows if r["k"] <= 64)
assert all(r["t_update_ms"] < r["t_recompute_excl_ms"] for r in rows
           if r["n"] >= 5000 and r["k"] <= 64)
assert {(dt, n) for dt, n, k in wins if k == 256} >= {
    (dt, n) for dt in ("float32", "float64") for n in (1000, 2000, 5000, 10000, 20000)
    if (dt, n) != ("float32", 1000)}
assert all(r["t_update_ms"] < 1.5 * r["t_recompute_incl_ms"] for r in rows
           if r["k"] == 256 and r["n"] == 1000)       # not far behind where it loses
for dt in ("float32", "float64"):
    for k in (1, 16, 64, 256):
        case = {r["n"]: r for r in rows if r["dtype"] == dt and r["k"] == k}
        ratio = {n: c["t_update_ms"] / c["t_recompute_incl_ms"] for n, c in case.items()}
        assert ratio[20000] < ratio[1000] / 2          # the update gains as n grows
once_vs_panels = [r["t_update_per_panel_ms"] / r["t_update_ms"] for r in rows
                  if "t_update_per_panel_ms" in r]
fused_vs_arrays = [r["t_update_arrayops_ms"] / r["t_update_ms"] for r in rows
                   if "t_update_arrayops_ms" in r]
chain_vs_structured = [r["t_update_chain_ms"] / r["t_update_ms"] for r in rows
                       if r["k"] <= 64]
chain_vs_passes = [r["t_update_chain_ms"] / r["t_update_ms"] for r in rows
                   if r["k"] == 256 and "t_update_chain_ms" in r]
assert min(once_vs_panels) > 1.4 and min(fused_vs_arrays) > 1.4
assert min(chain_vs_structured) > 1.3 and min(chain_vs_passes) > 1.1
assert all(r["t_update_chain_ms"] > r["t_update_ms"] for r in rows
           if r["k"] == 256 and r["n"] >= 2000)
assert min(r["update_over_floor"] for r in rows) > 1            # a floor is a floor
assert all(r["update_over_floor"] < 4 for r in rows if r["k"] <= 64 and (r["n"] >= 10000 or (
    r["n"] >= 5000 and r["dtype"] == "float64")))
print(f"on the {GPU.split(',')[0]}: the update beats refactorization in {len(wins)} of "
      f"{len(rows)} cases: {sorted(wins)}")
print(f"structured / chain of reflectors (k <= 64): {min(chain_vs_structured):.1f} to "
      f"{max(chain_vs_structured):.1f} times faster")
print(f"four structured passes / chain of reflectors (k = 256): "
      f"{min(chain_vs_passes):.1f} to {max(chain_vs_passes):.1f} times faster")
print(f"fused / one launch per panel: {min(once_vs_panels):.1f} to "
      f"{max(once_vs_panels):.1f} times faster")
print(f"fused / array-operation panels: {min(fused_vs_arrays):.1f} to "
      f"{max(fused_vs_arrays):.1f} times faster")
print(f"update / floor: at least {min(r['update_over_floor'] for r in rows):.1f}")

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(1, 2, figsize=(8, 2.9), dpi=70, sharey=True)
for ax, dt in zip(axes, ("float32", "float64")):
    sel = [r for r in rows if r["dtype"] == dt and r["k"] == 16]
    ns = [r["n"] for r in sel]
    for key, label, style in (("t_update_ms", "update", "-o"),
                              ("t_downdate_ms", "downdate", "-s"),
                              ("t_recompute_incl_ms", "cuSOLVER refactor (incl. A~)", "--^"),
                              ("t_recompute_excl_ms", "cuSOLVER refactor (excl.)", ":v"),
                              ("floor_ms", "floor", "-.")):
        ax.loglog(ns, [r[key] for r in sel], style, ms=3, label=label)
    ax.set_title(f"{GPU.split(',')[0]}, {dt}, k = 16", fontsize=8)
    n_axis(ax, ns)
axes[0].set_ylabel("ms", fontsize=8)
axes[0].legend(fontsize=6)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The same benchmark on an H200: what faster memory does not buy
#
# An H200 is an H100's chip with faster memory. The benchmark's copy ran at 4.2 TB/s there,
# against 3.0 on the H100, and its matrix products at the same rate
# (`benchmarks/results/cholesky-NVIDIA-H200.json`, GPU columns only). An update bound by
# memory traffic would take 0.71 of its H100 time there. It does not: every case with
# k > 4 (16, 64 and 256) takes 0.83 to 1.00 of its H100 time, and cuSOLVER's
# refactorization 0.90 to 1.01. Neither waits on memory at these sizes. (The H200 run is
# of newer code: its apply stores whole sectors and, for k <= 4, updates Z by four warps.
# That rewrite alone took 0.91 to 0.94 of the time in float64 on the H200, and in
# float32 the apply of k = 1 now takes $M_{II}$ in its closed form, a sum down the rows
# instead of a triangular product (0.84 to 0.95 of the time on the H200 itself), and for
# k = 1 the solve takes $R$'s tiles by bulk tensor copies (below; 0.84 to 0.97 of the time
# in float32, 0.97 to 0.99 in float64, on the H200 itself), which is why k = 1 takes 0.69
# to 1.03 there: the 1.03 is float64 at n = 2000, 119 us against 116, a call that is
# mostly fixed costs. In float32
# the apply's two products also run on the tensor cores for k > 1, which took 0.88 to
# 0.91 of the time at n = 20000 on the H200 itself and brings those cases to 0.83 to
# 0.87: a change of arithmetic, not of memory.) The update waits on the solve's chain of dependent steps, 64 columns a step.
# The refactorization is bound by its arithmetic and its own chain of panels. The floor
# falls with the bandwidth, so on the H200 every case but two sits further above it
# (float32 with k = 256 at n = 1000, 72.3 against 72.9, by those products and the
# blocked small factorizations, and at n = 20000 level with it, 3.498 against 3.497;
# float32 with k = 1 at n = 20000, 2.99 against 3.06, by the closed form and the copies).
# That is the
# roofline's lesson read backwards: the floor says what
# memory and arithmetic allow, and an update that a faster memory does not speed up is
# bound by something else.

# %%
h200 = json.loads((RESULTS / "cholesky-NVIDIA-H200.json").read_text())
on_h200 = {(r["dtype"], r["n"], r["k"]): r for r in h200["results"]}
bandwidth = h200["rates"]["copy_bytes_per_s"] / h100["rates"]["copy_bytes_per_s"]
pairs = [(r, on_h200[r["dtype"], r["n"], r["k"]]) for r in rows]
print(f"{h200['device']}: copy bandwidth {bandwidth:.2f} times the H100's")
print(f"{'dtype':>8} {'n':>6} {'k':>4} {'update H100':>12} {'H200':>7} {'ratio':>6}"
      f" {'refactor ratio':>15} {'floor ratio':>12} {'over floor H100':>16} {'H200':>5}")
for a, b in pairs:
    if a["k"] in (1, 64):
        print(f"{a['dtype']:>8} {a['n']:>6} {a['k']:>4} {a['t_update_ms']:>12.3f}"
              f" {b['t_update_ms']:>7.3f} {b['t_update_ms'] / a['t_update_ms']:>6.2f}"
              f" {b['t_recompute_incl_ms'] / a['t_recompute_incl_ms']:>15.2f}"
              f" {b['floor_ms'] / a['floor_ms']:>12.2f} {a['update_over_floor']:>16.1f}"
              f" {b['update_over_floor']:>5.1f}")
update_ratio = [b["t_update_ms"] / a["t_update_ms"] for a, b in pairs]
refactor_ratio = [b["t_recompute_incl_ms"] / a["t_recompute_incl_ms"] for a, b in pairs]
print(f"update on the H200 / on the H100: {min(update_ratio):.2f} to {max(update_ratio):.2f}; "
      f"refactorization: {min(refactor_ratio):.2f} to {max(refactor_ratio):.2f}")
assert 1.3 < bandwidth < 1.5                          # the memory is faster ...
update_ratio_k_above_4 = [b["t_update_ms"] / a["t_update_ms"] for a, b in pairs if a["k"] > 4]
assert all(0.8 < q < 1.1 for q in update_ratio_k_above_4 + refactor_ratio)  # ... the work is not
assert all(0.6 < q < 1.1 for q in update_ratio)       # (k <= 4: newer code too)
assert all(b["floor_ms"] < a["floor_ms"] for a, b in pairs)
nearer = [(a["dtype"], a["n"], a["k"]) for a, b in pairs
          if b["update_over_floor"] <= a["update_over_floor"]]
assert nearer == [("float32", 1000, 256), ("float32", 20000, 1)], nearer  # (newer code)
assert all(b["t_update_ms"] < b["t_recompute_excl_ms"] for a, b in pairs
           if a["n"] >= 5000 and a["k"] <= 64)        # and the update still wins

# %% [markdown]
# ## What these timings leave out, and where a step of the chain goes
#
# The benchmark flushes the L2 cache before each timed call, and the flush keeps the GPU
# busy while the call's Python runs: its times are the GPU's work. A call made on an idle
# GPU also waits for the host: on the H200's machine 80 to 170 us of Python (checks, the
# result's allocation, a workspace, the launch's 21 arguments) before its kernel starts,
# so updates made back to back at $n \le 2000$ take 150 to 180 us each against 71 to 116
# us of GPU work (`benchmarks/results/cholesky-host-cost-NVIDIA-H200.md`). Time both ways
# when you benchmark a GPU library: events after a flush say what the kernels cost, a
# wall clock around a loop what a caller gets.
#
# Inside the kernel, the chain's step for $k = 1$ takes 1.4 to 2 us, and not because
# handing $P_C$ to the next block is slow: a value goes from one SM to another in 0.2 us
# (`benchmarks/results/handoff-latency-NVIDIA-H200.md`). Time stamps of every block's
# step show each block starting to wait for $P_{C-1}$ about 0.9 us *after* it was sent:
# its own sum over the earlier $P_J$ runs two steps behind the chain
# (`benchmarks/results/structured-phases-NVIDIA-H200.md`, its last sections). A chain of
# dependent steps is as fast as the slowest work between two hand-offs, not as the
# hand-offs themselves. And that sum is slow for a reason worth knowing: each of its
# iterations asks for the next tile of $R$ and then for $P_J$, and a warp's loads come
# back in the order it issued them, so $P_J$, already in L2, waits for the tile from
# memory (1.2 to 1.9 us, against 0.6 where no tile was asked for). So the tiles now come
# another way: one thread asks the SM's copy engine (TMA, new with this GPU generation)
# for a whole 64 x 64 tile two iterations ahead, into shared memory, and the warps' own
# loads are left to $P_J$ alone. $P_J$ then comes 0.5 to 1.1 us into an iteration, the
# sum runs closer behind the chain, and the update takes 0.84 to 0.91 of its time in
# float32 (n = 2000 to 10000) and 0.97 to 0.99 in float64. Two other ways to the same
# end did not pay: a copy per row of the tile cost as much to issue as it saved, and
# each thread's own asynchronous copies brought $P_J$ as early but left the update at
# 0.94 to 1.07 of its time, for reasons not yet measured.

# %% [markdown]
# ## Errors as in 004 Figs. 2-3
#
# 004's experiment: $B$ and $V$ with entries uniform on $[0, 1]$; for an update
# $A = B^TB + I$, for a downdate $A = B^TB + I + VV^T$; $R$ from LAPACK's Cholesky of $A$
# (in the working precision), modified by $V$; the error is $\max_{ij}|\tilde A_{ij} -
# C_{ij}|$ with $C = \tilde R^T \tilde R$.  004 plots it for $k = 16$ (Fig. 2) and
# $k = 1$ (Fig. 3), single and double precision.  Here $\tilde A = R^TR \pm VV^T$ and $C$
# are formed in float64 from the rounded $R$ and $V$ (so $\tilde A$ is exactly what the
# routine was asked to factor), and the error is divided by $\max_{ij}|\tilde A_{ij}|$ and
# by the working precision's $\varepsilon$.  Beside it, the same measure for refactorizing
# $\tilde A$ (rounded to the working precision) with `xp.linalg.cholesky`.

# %%
ERR_N = qrlab.config.pick(small=(50, 100, 200, 400), paper=(1000, 2000, 5000))
ERR_K = (1, 16)


def errors(n, k, dtype, downdate, seed=0):
    rng = np.random.default_rng(seed)
    B = xp.asarray(rng.uniform(0, 1, (n, n)))
    V = xp.asarray(rng.uniform(0, 1, (n, k)))
    A = B.T @ B + xp.eye(n)
    if downdate:
        A += V @ V.T
    R = xp.linalg.cholesky(A.astype(dtype)).T
    Vd = V.astype(dtype)
    R1 = cholesky_update(R, Vd, downdate=downdate).astype(xp.float64)
    R64, V64 = R.astype(xp.float64), Vd.astype(xp.float64)
    At = R64.T @ R64 + (-1 if downdate else 1) * (V64 @ V64.T)
    scale = float(xp.abs(At).max()) * EPS[dtype]
    Rr = xp.linalg.cholesky(At.astype(dtype)).T.astype(xp.float64)
    return (float(xp.abs(At - R1.T @ R1).max()) / scale,
            float(xp.abs(At - Rr.T @ Rr).max()) / scale)


err = {(dt, op, k): [errors(n, k, dt, op == "downdate", seed=n + k) for n in ERR_N]
       for dt in ("float32", "float64") for op in ("update", "downdate") for k in ERR_K}

# %%
# NBVAL_IGNORE_OUTPUT
print("max|A~ - R~^T R~| / max|A~| / eps   (update method; refactorization in brackets)")
print(f"{'':26}" + "".join(f"{'n=' + str(n):>14}" for n in ERR_N))
for (dt, op, k), vals in err.items():
    print(f"{dt} {op:8} k = {k:<3}    " + "".join(f"{u:>7.1f} [{r:>4.1f}]" for u, r in vals))

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(1, 2, figsize=(8, 2.8), dpi=70, sharey=True)
for ax, k in zip(axes, (16, 1)):
    for dt, colour in (("float32", "C0"), ("float64", "C3")):
        for op, style in (("update", "-o"), ("downdate", "--s")):
            ax.semilogx(ERR_N, [u for u, _ in err[dt, op, k]], style, color=colour, ms=3,
                        label=f"{dt} {op}")
        ax.semilogx(ERR_N, [r for _, r in err[dt, "update", k]], ":", color=colour, lw=0.8,
                    label=f"{dt} refactor")
    ax.set_title(f"k = {k} (004 Fig. {2 if k == 16 else 3})", fontsize=9)
    n_axis(ax, ERR_N)
    ax.set_ylim(0, None)
axes[0].set_ylabel("max|A~ - R~^T R~| / max|A~| / eps", fontsize=8)
axes[0].legend(fontsize=6)
fig.tight_layout()
plt.show()

# %% [markdown]
# In units of each precision's $\varepsilon$ the two precisions tell the same story, as
# 004 found for its CPU and GPU codes ("the errors are always very similar"): a few
# $\varepsilon$ in float32, a few to a few tens in float64 (there the float64 product
# $C = \tilde R^T \tilde R$ itself adds rounding of the same order), for the update and
# the downdate alike, and within a small factor (2 to 6 here) of refactorizing.
# Backward stability predicts errors below a modest multiple of $(n + k)\,\varepsilon$;
# the checks use a fixed $100\,\varepsilon$, which is also below $(n + k)\,\varepsilon$
# at every size here, and $20$ times the refactorization's error:

# %%
for (dt, op, k), vals in err.items():
    assert all(u < 100 for u, _ in vals), f"{dt} {op} k={k}: error above 100 eps"
    assert all(u < n + k for (u, _), n in zip(vals, ERR_N))
    assert all(u < 20 * max(r, 1) for u, r in vals), "much worse than refactorizing"
    print(f"{dt} {op:8} k = {k:<2}: max|A~ - R~^T R~| / max|A~| below 100 eps and below "
          f"20x refactorizing's, n = {', '.join(map(str, ERR_N))}: True")

# %% [markdown]
# ## When the structured method cancels: its growth test
#
# On a GPU the update runs the structured method of the benchmark section above,
# $\tilde R = MR$; `method='structured'` runs the same algorithm as array operations, here
# on NumPy.  Each block of 64 rows factors two small matrices: $S = LL^T$ ($k \times k$, the
# sum of the Gram matrices of $P$'s rows before the block) and
# $C = I \pm XX^T = U^TU$ ($64 \times 64$).  Where these factorizations cancel, so does
# $MR$.  That happens where a diagonal entry of $R$ is small beside the rest of its row
# ($P$ grows as its inverse), for an update and for a downdate back to such an $R$, but
# also where $R$ is nearly singular with every pivot large, or $V$ is much larger than
# $R$.  The **growth test** measures the cancellation itself, the largest $S_{qq} / L_{qq}^2$,
# $C_{rr}$ and $1 / U_{rr}^2$ over the blocks, and sends an update whose growth exceeds
# `qrlab.executor.Executor.growth_max` (100) to the blocked reflectors, which are backward
# stable whatever $R$.  On the GPU the kernels read these values from their own shared
# memory, so the test costs nothing measurable
# (`benchmarks/results/growth-test-*.md`).  Below, one diagonal entry of $R$ is $10^{-4}$
# of its row; the backward error $\|\tilde R^T\tilde R - \tilde A\| / \|\tilde A\|$
# of the structured method with the test turned off, with it, and of the blocked method
# (with no small pivot the test passes, and the result is the structured method's own):

# %%
# NBVAL_IGNORE_OUTPUT
def growth_demo(downdate, s=300, k=16, ratio=1e-4):
    """Backward errors of the structured method without and with its growth test, and of
    the blocked method, for R with one diagonal entry `ratio` times its row."""
    rng = np.random.default_rng(5)
    R = np.linalg.qr(rng.standard_normal((2 * s, s)), mode="r")
    R[s // 2, s // 2] = ratio * np.abs(R[s // 2]).max()
    V = rng.standard_normal((s, k))
    if downdate:                           # back to that R from one with V's rows added
        V *= 0.3
        R = np.linalg.qr(np.vstack([R, V.T]), mode="r")
    target = R.T @ R + (-1 if downdate else 1) * V @ V.T

    def error(R1):
        return np.linalg.norm(R1.T @ R1 - target) / np.linalg.norm(target)
    Executor = qrlab.executor.Executor
    saved, results = Executor.growth_max, {}
    try:
        for name, limit in (("no test", 0.0), ("growth test", saved)):
            Executor.growth_max = limit
            results[name] = cholesky_update(R, V, downdate=downdate, method="structured")
    finally:
        Executor.growth_max = saved
    results["blocked"] = cholesky_update(R, V, downdate=downdate)
    return {name: error(R1) for name, R1 in results.items()}


demo = {downdate: (growth_demo(downdate), growth_demo(downdate, ratio=1.0))
        for downdate in (False, True)}   # (ratio 1: no small pivot, and the test passes)
for downdate, (e, _) in demo.items():
    print(f"{'downdate' if downdate else 'update':>8}: structured, no test {e['no test']:.1e},"
          f" with the growth test {e['growth test']:.1e}, blocked {e['blocked']:.1e}")

# %%
for downdate, (e, plain) in demo.items():
    assert e["no test"] > 30 * e["blocked"] and e["growth test"] == e["blocked"]
    assert plain["growth test"] == plain["no test"] < 10 * np.finfo(float).eps
    print(f"{'downdate' if downdate else 'update':>8}: with one pivot at 1e-4 the structured "
          "result is over 30 times less accurate without the test, the blocked one with it; "
          "with none, the test passes")

# %% [markdown]
# ## A downdate that cannot be done
#
# $A - VV^T$ need not be positive definite, and then no real $\tilde R$ exists.  The
# pivots of the downdate, $R_{jj}^2 - \|y\|^2$ (the $w^2$ of `Compute`), are the ratios
# of the determinants of consecutive leading blocks of $A - VV^T$; the first one that is
# not positive names the first leading block that is not positive definite.  qrlab raises
# `numpy.linalg.LinAlgError` naming that column, for NumPy and CuPy input alike, and
# leaves $R$ as it was.  Here $v = 1.5\, R_{5,:}$: since $R$ is upper triangular, $v$ is
# zero before column 5, so $A - vv^T$ keeps $A$'s leading $5 \times 5$ block and its
# leading $6 \times 6$ block is indefinite.

# %%
R, _, A = spd_problem(8, 1, np.random.default_rng(5))
v = 1.5 * R[5, :]
R_saved = R.copy()
messages = {}
for method in ("blocked", "structured", "rotations-A", "rotations-B"):
    try:
        cholesky_downdate(R, v, method=method)
    except np.linalg.LinAlgError as exc:
        messages[method] = str(exc)
    else:
        raise AssertionError("the downdate should have failed")
    assert np.array_equal(R, R_saved)
print("LinAlgError:", messages["blocked"])
assert all("column 5 (0-based)" in m for m in messages.values())
assert len(set(messages.values())) == 1          # every method names the same column
lead = A - np.outer(v, v)
definite = [bool(np.all(np.linalg.eigvalsh(lead[:j, :j]) > 0)) for j in (5, 6)]
assert definite == [True, False]
print(f"A - v v^T: leading 5 x 5 block positive definite: {definite[0]}; "
      f"leading 6 x 6 block: {definite[1]}")

# %% [markdown]
# ## What dropping $Q$ costs a least-squares problem
#
# `LeastSquaresQR(A, b, q='full')` keeps $Q$ and removes rows with orthogonal rotations
# (notebook 07).  `q='none'` keeps only $R$ of $[A,\ b]$ ($O(n^2)$ memory): it adds rows
# with a Q-less orthogonal update, but removes them with the Cholesky **downdate** above.
# The orthogonal updates are backward stable: the solution's error is about
# $\kappa(A)\,\varepsilon$ (for a small residual), as for a fresh QR solve.
# (Adding rows to that square triangle is itself a rank-$p$ Cholesky update: on a GPU,
# for triangles of a few thousand rows and more, it goes to the structured method above,
# 0.5 to 0.8 of the chain's time in float64 in the papers' cases.  But where a diagonal
# entry of $R$ is small beside the rest of its row, a ratio $r$, the structured method's
# $P$ grows as $1/r$ and $MR$ cancels, its backward error about $\varepsilon / r^2$; so a
# triangle where that cancellation shows (the growth test above) stays with the chain of
# reflectors, `benchmarks/results/square-route-*.md`.)  A downdate
# works on $R^TR = A^TA$, like the normal equations, and can lose
# $\kappa(A)^2\,\varepsilon$.
#
# A sliding window: start from $m$ rows, then repeatedly add $p$ new rows at the end and
# remove the $p$ oldest, until every original row has left.  After the last step, the
# solution from each factorization is compared with a fresh `numpy.linalg.lstsq` of the
# current window: forward error $\|x - x_{\text{fresh}}\|_2 / \|x_{\text{fresh}}\|_2$.
# $b = Ax_{\text{true}} + $ noise of relative size $10^{-6}$, float64, three random
# problems per condition number (medians).  Two kinds of data:
#
# * **drifting**: the rows that start in the window are well spread (condition about 1),
#   the new ones become collinear, with singular values graded from 1 to $1/c$; at the end
#   the window has condition $\kappa(A) \approx c$, and what made it well-conditioned has
#   been downdated away;
# * **stationary**: every row comes from the graded distribution, so the window always
#   has $\kappa(A) \approx c$.

# %%
LS_M, LS_N, LS_P, LS_STEPS = qrlab.config.pick(small=(60, 10, 4, 15), paper=(300, 40, 10, 30))
CONDS = (1e2, 1e3, 1e4, 1e5, 1e6)


def sliding_window(cond, drifting, seed):
    rng = np.random.default_rng(seed)
    m, n, p, steps = LS_M, LS_N, LS_P, LS_STEPS
    total = m + steps * p
    W = np.linalg.qr(rng.standard_normal((n, n)))[0]
    graded = np.logspace(0, -math.log10(cond), n)
    A = rng.standard_normal((total, n))
    first = m if drifting else 0
    A[first:] = (A[first:] * graded) @ W.T
    b = A @ rng.standard_normal(n)
    b += 1e-6 * np.linalg.norm(b[first:]) / math.sqrt(total - first) \
        * rng.standard_normal(total)
    Ad, bd = xp.asarray(A), xp.asarray(b)
    ls = {q: LeastSquaresQR(Ad[:m], bd[:m], q=q) for q in ("full", "none")}
    for t in range(steps):
        old, new = slice(t * p, t * p + p), slice(m + t * p, m + t * p + p)
        for l in ls.values():
            l.add_rows(Ad[new], bd[new])
            l.remove_rows(0, p, U=Ad[old], e=bd[old])       # U, e: only q='none' needs them
    window = slice(steps * p, steps * p + m)
    x_fresh = np.linalg.lstsq(A[window], b[window], rcond=None)[0]
    err = {q: float(np.linalg.norm(to_numpy(l.solve()) - x_fresh) / np.linalg.norm(x_fresh))
           for q, l in ls.items()}
    return float(np.linalg.cond(A[window])), err


ls_runs = {(drift, c): [sliding_window(c, drift, seed) for seed in range(3)]
           for drift in (True, False) for c in CONDS}
median = {(drift, c, q): float(np.median([e[q] for _, e in runs]))
          for (drift, c), runs in ls_runs.items() for q in ("full", "none")}
kappa = {(drift, c): float(np.median([k for k, _ in runs]))
         for (drift, c), runs in ls_runs.items()}
print(f"window m = {LS_M}, n = {LS_N}, p = {LS_P} rows in and out per step, {LS_STEPS} steps")

# %%
# NBVAL_IGNORE_OUTPUT
eps64 = EPS["float64"]
for drift in (True, False):
    print("drifting" if drift else "stationary")
    print(f"{'cond(A)':>9} {'q=full':>9} {'/(cond eps)':>12} {'q=none':>9} "
          f"{'/(cond eps)':>12} {'/(cond^2 eps)':>14}")
    for c in CONDS:
        kf, kn = median[drift, c, "full"], median[drift, c, "none"]
        kap = kappa[drift, c]
        print(f"{kap:9.1e} {kf:9.1e} {kf / (kap * eps64):12.2f} {kn:9.1e} "
              f"{kn / (kap * eps64):12.3g} {kn / (kap ** 2 * eps64):14.3g}")

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(1, 2, figsize=(8, 2.9), dpi=70, sharey=True)
for ax, drift in zip(axes, (True, False)):
    kap = np.array([kappa[drift, c] for c in CONDS])
    for q, style in (("full", "-o"), ("none", "-s")):
        ax.loglog(kap, [median[drift, c, q] for c in CONDS], style, ms=3, label=f"q='{q}'")
    ax.loglog(kap, kap * eps64, "k:", lw=0.8, label="cond(A) eps")
    ax.loglog(kap, kap ** 2 * eps64, "k--", lw=0.8, label="cond(A)^2 eps")
    ax.set_title("drifting window" if drift else "stationary window", fontsize=9)
    ax.set_xlabel("cond(A) of the final window", fontsize=8)
axes[0].set_ylabel("forward error of x", fontsize=8)
axes[0].legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# With drifting data the Q-less solution's error follows $\kappa(A)^2\varepsilon$: from
# about $10^{-12}$ at $\kappa = 10^2$ to about $10^{-4}$ at $\kappa = 10^6$, while keeping
# $Q$ follows $\kappa(A)\,\varepsilon$, $10^{-15}$ to $10^{-11}$.  With stationary data the
# two stay close: the rows that leave are like the ones that stay, and the downdate
# removes nothing the remaining rows lack.  So a Q-less sliding window is safe while the
# data keep their character, and loses $\kappa^2$ when the rows leaving carried
# information the window no longer has; keeping $Q$ (or refactorizing now and then) is
# the remedy.  The checks, with wide margins on the measured medians:

# %%
lo, hi = CONDS[0], CONDS[-1]
growth_none = median[True, hi, "none"] / median[True, lo, "none"]
growth_full = median[True, hi, "full"] / median[True, lo, "full"]
gap_lo = median[True, lo, "none"] / median[True, lo, "full"]
gap_hi = median[True, hi, "none"] / median[True, hi, "full"]
assert growth_none > 1e6, "q='none' error should grow like cond^2 (1e8 here)"
assert growth_full < 1e6, "q='full' error should grow like cond (1e4 here)"
assert gap_hi > 100 * gap_lo, "the gap between the two should widen like cond"
for c in CONDS:
    kap = kappa[True, c]
    assert median[True, c, "full"] < 10 * kap * eps64
    assert 0.01 * kap ** 2 * eps64 < median[True, c, "none"] < 100 * kap ** 2 * eps64
    assert median[False, c, "none"] < 100 * kappa[False, c] * eps64   # stationary: benign
print(f"drifting window, cond(A) from {lo:.0e} to {hi:.0e} (x 1e4):")
print("  q='full' error below 10 cond(A) eps at every cond: True; grows by < 1e6: True")
print("  q='none' error within [0.01, 100] cond(A)^2 eps at every cond: True; "
      "grows by > 1e6: True")
print("  ratio q='none' / q='full' grows by > 100x: True")
print("stationary window: q='none' error below 100 cond(A) eps at every cond: True")

# %% [markdown]
# ## Summary
#
# * $R^TR = A^TA$: adding rows to a least-squares problem without $Q$ is a Cholesky update
#   of $R$, removing them a downdate; both cost $O(kn^2)$.
# * 004's Algorithm 1 zeroes $V$ with Givens (update) or hyperbolic (downdate) rotations;
#   its two loop orders, CholeskyModifyA (by column) and CholeskyModifyB (by row), give
#   identical results.  004 Fig. 1 blocks CholeskyModifyA: diagonal chunks on the CPU,
#   the panels above them on the GPU.
# * qrlab's blocked method uses compact-WY (hyperbolic) reflectors: a fixed number of
#   array operations per panel of $b$ columns, all $k$ columns of $V$ in one pass.
# * On the GPU, for $k \le 64$, the update is $\tilde R = M R$ with $M$ the structured
#   Cholesky factor of $I \pm P P^T$, $P = R^{-T} V$: a triangular solve 64 rows a
#   step, and matrix products that follow it in the same launch. On the H100 that beats
#   cuSOLVER's refactorization for every $k \le 64$ from $n = 1000$ (up to 60 times at
#   $n = 20000$). At $n \ge 5000$ it runs 3.7 to 13 times faster than the chain of $n$
#   dependent reflectors (which larger $k$ still use at small $n$), and 2.1 to 8.1
#   times above the bandwidth floor: within 4 times at $n \ge 10000$ in both precisions
#   and at $n = 5000$ in float64; at $n = 5000$ in float32 the chain of 79 steps bounds it.
#   On an H200 (1.42 times the memory bandwidth) the update takes 0.83 to 1.00 of its H100
#   time for k > 4: memory does not bound it, so on the faster memory it sits further
#   above the floor. A call on an idle GPU also pays 80 to 170 us of the host's Python
#   before its launch, which the benchmark's flush hides.
# * Errors are a few $\varepsilon$ in $\max|\tilde A - \tilde R^T\tilde R|/\max|\tilde A|$,
#   like refactorizing, in both precisions; an impossible downdate raises `LinAlgError`
#   naming the first failing column.
# * Dropping $Q$ is not free: removing rows through the downdate can lose
#   $\kappa(A)^2\varepsilon$ where keeping $Q$ loses $\kappa(A)\,\varepsilon$.
