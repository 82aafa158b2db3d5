# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Full QR factorization: Householder, blocked compact WY, and Givens
#
# Before updating a QR factorization it helps to know how one is computed from scratch,
# and what it costs: the updates of the later notebooks are "the same steps, on a small
# part of the matrix".  This notebook builds $A = QR$ four ways from the pieces of
# notebook 01:
#
# 1. **Householder QR**: one reflector per column (seed 002's `houseQR`);
# 2. **blocked compact-WY QR**: reflectors grouped into panels, the rest of the matrix
#    updated by matrix products (seed 002, "Accelerated Blocked Householder QR");
# 3. **Givens QR, column by column** bottom-up (003 eq. 6), one rotation at a time;
# 4. **Givens QR, wavefront** (003 eq. 7): the same rotations, grouped into steps whose
#    rotations act on disjoint pairs of rows and can run in parallel.
#
# Each one is checked ($QR = A$, $Q^TQ = I$, $R$ upper triangular and equal to LAPACK's up
# to the signs of its rows), then all are timed against `numpy.linalg.qr` (and
# `cupy.linalg.qr` on a GPU).

# %%
import numpy as np

import qrlab
import qrlab.config
import qrlab.householder as hh
from qrlab import viz
from qrlab.backend import array_module, to_numpy
from qrlab.bench import Timer
from qrlab.givens import givens, rotate_rows, schedule_column_order, schedule_wavefront

np.set_printoptions(precision=3, suppress=True)


def codes(before, after, tol=1e-10):
    """Fill pattern of one step: ``*`` nonzero left alone, ``x`` nonzero changed,
    ``0`` zero, ``-`` made zero, ``+`` fill-in (001 Fig. 2 symbols, plus ``x``)."""
    before, after = to_numpy(before), to_numpy(after)
    scale = tol * max(1.0, np.abs(before).max())
    nz0, nz1 = np.abs(before) > scale, np.abs(after) > scale
    changed = np.abs(after - before) > scale
    out = np.full(before.shape, "0")
    out[nz0 & nz1] = "*"
    out[nz0 & nz1 & changed] = "x"
    out[nz0 & ~nz1] = "-"
    out[~nz0 & nz1] = "+"
    return out


def side_by_side(grids, titles, gap=4):
    """Print grids next to each other under their titles (a grid: an array of symbols,
    or a string of lines)."""
    blocks = [g.split("\n") if isinstance(g, str) else [" ".join(row) for row in g]
              for g in grids]
    widths = [max(len(t), *map(len, b)) for b, t in zip(blocks, titles)]
    print((" " * gap).join(t.ljust(w) for t, w in zip(titles, widths)).rstrip())
    for r in range(max(len(b) for b in blocks)):
        print((" " * gap).join((b[r] if r < len(b) else "").ljust(w)
                               for b, w in zip(blocks, widths)).rstrip())


def check_qr(Q, R, A, tol):
    """The four properties of a full QR factorization, as relative errors below tol."""
    xp = array_module(Q, R, A)
    m, n = A.shape
    nA = float(xp.linalg.norm(A))
    assert Q.shape == (m, m) and R.shape == (m, n)
    assert float(xp.linalg.norm(Q @ R - A)) <= tol * nA, "QR != A"
    I = xp.eye(m, dtype=Q.dtype)
    assert float(xp.linalg.norm(Q.T @ Q - I)) <= tol * m, "Q not orthogonal"
    assert float(xp.linalg.norm(xp.tril(R, -1))) <= tol * nA, "R not upper triangular"
    # R is unique up to the signs of its rows (A of full rank): compare with LAPACK's
    R0 = xp.linalg.qr(A, mode="r")
    k = min(m, n)
    d = xp.sign(xp.diagonal(R)[:k]) * xp.sign(xp.diagonal(R0)[:k])
    assert float(xp.linalg.norm(d[:, None] * R[:k] - R0[:k])) <= tol * nA, "R is not LAPACK's"


# %% [markdown]
# ## 1. Householder QR
#
# Reflector $H_j$ zeroes column $j$ below the diagonal and is applied to the columns to its
# right; $Q = H_1 H_2 \cdots H_n$ is accumulated by applying each $H_j$ from the right
# (seed 002's `houseQR`).  Every step is a rank-one update of a shrinking block, so the
# work is $2mn^2 - \tfrac{2}{3}n^3$ flops for $R$ and $4(m^2 n - m n^2 + \tfrac{1}{3}n^3)$
# more for the full $Q$, all of it in matrix-vector operations.

# %%
def householder_qr(A):
    """Full QR by Householder reflectors, one column at a time (NumPy or CuPy)."""
    xp = array_module(A)
    m, n = A.shape
    R = A.copy()
    Q = xp.eye(m, dtype=A.dtype)
    for j in range(min(m - 1, n)):
        v, tau, beta = hh.house(R[j:, j])
        R[j:, j:] -= tau * xp.outer(v, v @ R[j:, j:])     # H_j R
        R[j + 1:, j] = 0                                  # exactly zero, as H_j made it
        Q[:, j:] -= tau * xp.outer(Q[:, j:] @ v, v)       # Q H_j
    return Q, R


rng = np.random.default_rng(0)
A = rng.standard_normal((6, 4))
Q, R = householder_qr(A)
check_qr(Q, R, A, 1e-13)

# Replay the factorization step by step to draw it.
steps, titles, R_j = [], [], A.copy()
for j in range(4):
    v, tau, _ = hh.house(R_j[j:, j])
    R_next = R_j.copy()
    R_next[j:, j:] -= tau * np.outer(v, v @ R_j[j:, j:])
    R_next[j + 1:, j] = 0
    steps.append(codes(R_j, R_next))
    titles.append(f"H_{j + 1}")
    R_j = R_next
side_by_side(steps, titles)

# %% [markdown]
# `x` marks the entries a step changes: reflector $H_j$ rewrites the whole trailing block
# $R_{j:, j:}$ and zeroes (`-`) column $j$ below the diagonal in one go.
#
# ## 2. Blocked compact-WY Householder QR
#
# The unblocked algorithm moves the whole trailing matrix through memory once per column,
# doing only about 4 flops per entry each time: it is limited by memory bandwidth, not by
# arithmetic.  The blocked algorithm (seed 002's four stages, LAPACK's `geqrf`) splits
# the columns into panels of width $n_b$ and, for each panel,
#
# 1. factors the panel by Householder QR (`panel_qr`: $V$, $\tau$, $R_p$),
# 2. forms the compact WY factor $T$ (`wy_factor`, notebook 01),
# 3. updates the trailing columns by $(I - VTV^T)^T C = C - V(T^T(V^TC))$ (`apply_wy_left`),
#    three matrix products,
# 4. accumulates $Q \leftarrow Q (I - V T V^T)$ (`apply_wy_right`), again matrix products.
#
# The reflectors and the flops are the same as before; what changes is that nearly all of
# the flops now run in matrix-matrix products, which reuse each entry $O(n_b)$ times.

# %%
def blocked_qr(A, nb):
    """Full QR by compact-WY blocks of nb reflectors (NumPy or CuPy)."""
    xp = array_module(A)
    m, n = A.shape
    R = A.copy()
    Q = xp.eye(m, dtype=A.dtype)
    for j0 in range(0, min(m - 1, n), nb):
        j1 = min(j0 + nb, n)
        V, tau, Rp = hh.panel_qr(R[j0:, j0:j1])            # 1. panel
        T = hh.wy_factor(V, tau)                           # 2. T
        R[j0:, j0:j1] = 0
        R[j0:j0 + Rp.shape[0], j0:j1] = Rp
        R[j0:, j1:] = hh.apply_wy_left(V, T, R[j0:, j1:])  # 3. trailing update
        Q[:, j0:] = hh.apply_wy_right(Q[:, j0:], V, T)     # 4. Q (I - V T V^T)
    return Q, R


A = rng.standard_normal((8, 6))
Q, R = blocked_qr(A, nb=2)
check_qr(Q, R, A, 1e-13)

steps, titles, R_j = [], [], A.copy()
for j0 in range(0, 6, 2):
    V, tau, Rp = hh.panel_qr(R_j[j0:, j0:j0 + 2])
    T = hh.wy_factor(V, tau)
    R_next = R_j.copy()
    R_next[j0:, j0:j0 + 2] = 0
    R_next[j0:j0 + 2, j0:j0 + 2] = Rp
    R_next[j0:, j0 + 2:] = hh.apply_wy_left(V, T, R_j[j0:, j0 + 2:])
    steps.append(codes(R_j, R_next))
    titles.append(f"panel {j0 // 2 + 1}")
    R_j = R_next
side_by_side(steps, titles)

# %% [markdown]
# How much of the work lands in matrix products?  Counting flops for $R$ (panel:
# Householder QR of an $h \times n_b$ block, $2hn_b^2 - \tfrac23 n_b^3$; trailing update:
# $4 h n_b c$ for $c$ trailing columns, plus forming $T$), at the papers' size
# $m = 4000$, $n = 2000$:

# %%
def blocked_flops(m, n, nb):
    """(flops in panels and T, flops in the trailing matrix products) for R."""
    panel = gemm = 0
    for j0 in range(0, n, nb):
        w, h, c = min(nb, n - j0), m - j0, n - min(j0 + nb, n)
        panel += 2 * h * w * w - 2 * w ** 3 // 3 + h * w * w    # panel QR + V^T V for T
        gemm += 4 * h * w * c + 2 * w * w * c                   # V^T C, T^T(.), V(.)
    return panel, gemm


for nb in (1, 16, 64, 256):
    panel, gemm = blocked_flops(4000, 2000, nb)
    print(f"nb = {nb:3d}: {100 * gemm / (panel + gemm):5.1f}% of the flops of R "
          f"are matrix products")
panel, gemm = blocked_flops(4000, 2000, 64)
assert gemm / (panel + gemm) > 0.95

# %% [markdown]
# Nearly all the arithmetic is in the trailing update whatever $n_b$ is; what $n_b$
# changes is its shape.  With $n_b = 1$ (plain Householder QR) the "products" are
# matrix-vector products that read each entry of the trailing matrix for 4 flops; with
# $n_b = 64$ they are matrix-matrix products doing about $4 n_b$ flops per entry read,
# which a GPU runs near its peak, and still over 95% of the work.  Wider panels move more
# of the work into the panels, which run at matrix-vector speed; LAPACK and cuSOLVER pick
# $n_b$ around 32 to 128.
#
# ## 3. Givens QR and its two elimination orders
#
# A rotation of rows $(i-1, i)$ zeroes entry $(i, j)$ without disturbing earlier zeros
# only if both rows are already zero left of column $j$, and entry $(i+1, j)$ has already
# been zeroed (otherwise its rotation, which changes row $i$, would refill $(i, j)$).
# Seed 003 gives two orders that respect this.  `qrlab.viz.schedule_grid` prints them as
# the step at which each entry is zeroed, `x` for the entries that stay.  003 counts steps
# from 0, so its eqs. 6 and 7 read one less than these grids.

# %%
EQ6 = [[0, 0, 0, 0, 0], [3, 0, 0, 0, 0], [2, 6, 0, 0, 0], [1, 5, 8, 0, 0], [0, 4, 7, 9, 0]]
EQ7 = [[0, 0, 0, 0, 0], [3, 0, 0, 0, 0], [2, 4, 0, 0, 0], [1, 3, 5, 0, 0], [0, 2, 4, 6, 0]]
col5, wave5 = np.array(schedule_column_order(5, 5)), np.array(schedule_wavefront(5, 5))
below = np.tril(np.ones((5, 5), bool), -1)
assert np.array_equal(col5[below], np.array(EQ6)[below] + 1)      # 003 eq. 6, from 1
assert np.array_equal(wave5[below], np.array(EQ7)[below] + 1)     # 003 eq. 7, from 1

m, n = 8, 5
print(viz.schedule_grid("column", m, n))
print()
print(viz.schedule_grid("wavefront", m, n))

# %% [markdown]
# In the **column order**, every rotation is its own step: $\sum_{j} (m-1-j)$ sequential
# steps, summed over the columns $j < \min(n, m-1)$ that have entries below the diagonal.
# In the **wavefront**, entry $(i, j)$ is zeroed at step $(m-1-i) + 2j + 1$: column $j$
# starts two steps after column $j-1$, as soon as the rows it needs are ready.  All entries
# sharing a step number are zeroed at once.  The last step zeroes entry
# $(j+1, j)$ of the last column $j = \min(n, m-1) - 1$, so the wavefront needs
#
# $$m + \min(n, m-1) - 2 \text{ steps: } m + n - 2 \text{ for } m > n,\quad
# 2n - 3 \text{ for a square matrix}.$$
#
# (003's Algorithm 4 loops $(n-1) \cdot 2 + m - n = m + n - 2$ times, one step too many for
# a square matrix, whose last column has nothing below the diagonal: eq. 7 for $5 \times 5$
# shows 7 steps, numbered 0 to 6.)  Let us check the counts, the dependencies and that the
# rotations of one step touch disjoint rows, for many shapes:

# %%
def check_schedule(grid):
    """Rotations of one step act on disjoint row pairs; every dependency comes earlier."""
    g = np.array(grid)
    m, n = g.shape
    for t in range(1, g.max() + 1):
        rows = [r for i in np.nonzero(g == t)[0] for r in (i - 1, i)]
        assert len(rows) == len(set(rows)), "two rotations of one step share a row"
    for i, j in zip(*np.nonzero(g)):
        if i + 1 < m:
            assert g[i + 1, j] < g[i, j]                      # (i+1, j) first
        if j > 0:
            assert 0 < g[i, j - 1] < g[i, j] and 0 < g[i - 1, j - 1] < g[i, j]


for m in range(2, 13):
    for n in range(1, 13):
        col, wave = schedule_column_order(m, n), schedule_wavefront(m, n)
        check_schedule(col)
        check_schedule(wave)
        last = min(n, m - 1)
        assert max(map(max, col)) == sum(m - 1 - j for j in range(last))
        assert max(map(max, wave)) == m + last - 2
        assert viz.schedule_steps("wavefront", m, n) == m + last - 2
        if m > n:
            assert max(map(max, wave)) == m + n - 2
        most = max(np.bincount(np.array(wave)[np.array(wave) > 0]))
        assert most == min(m // 2, n, m - 1)          # 003: at most min(m/2, n) at once

print("    m x n      rotations = column-order steps   wavefront steps   rotations per step")
for m, n in [(5, 5), (8, 5), (400, 200), (4000, 2000)]:
    last = min(n, m - 1)
    rot, wave = sum(m - 1 - j for j in range(last)), m + last - 2
    print(f"{m:5d} x {n:<5d} {rot:16d} {wave:27d} {rot / wave:20.1f}")

# %% [markdown]
# At the papers' size the wavefront turns six million dependent rotations into 5998
# steps of about a thousand independent rotations each.  This is the schedule of the
# papers' GPU kernels too (001 Fig. 1, 000 Fig. 5): one thread per strip of two rows, a
# column starting two steps after the previous one.
#
# Both orders, implemented.  The rotations act on the rows of $[R \;|\; Q^T]$ (starting
# from $[A \;|\; I]$), so $Q$ is accumulated by the same row operations as $R$.  The column
# order applies one rotation at a time; the wavefront gathers all rotations of a step and
# applies them together with one vectorised `rotate_rows`.

# %%
def givens_qr_column(A):
    """Full QR by Givens rotations in 003 eq. 6's order, one rotation at a time."""
    xp = array_module(A)
    m, n = A.shape
    W = xp.concatenate([A, xp.eye(m, dtype=A.dtype)], axis=1)      # [R | Q^T]
    for j in range(min(n, m - 1)):
        for i in range(m - 1, j, -1):
            c, s = givens(W[i - 1:i, j], W[i:i + 1, j])
            ia, ib = xp.asarray([i - 1]), xp.asarray([i])
            rotate_rows(W, ia, ib, c, s)
    return W[:, n:].T, W[:, :n]


def wavefront_steps(xp, m, n):
    """For each step of 003 eq. 7: row indices (upper, lower) and columns, on device."""
    grid = np.array(schedule_wavefront(m, n))
    i, j = np.nonzero(grid)
    t = grid[i, j]
    order = np.argsort(t, kind="stable")                 # group the entries by step
    i, j, t = i[order], j[order], t[order]
    bounds = np.searchsorted(t, np.arange(1, t.max() + 2))
    return [(xp.asarray(i[a:b] - 1), xp.asarray(i[a:b]), xp.asarray(j[a:b]))
            for a, b in zip(bounds[:-1], bounds[1:])]


def givens_qr_wavefront(A, steps=None):
    """Full QR by Givens rotations in 003 eq. 7's order: one vectorised step at a time."""
    xp = array_module(A)
    m, n = A.shape
    steps = steps if steps is not None else wavefront_steps(xp, m, n)
    W = xp.concatenate([A, xp.eye(m, dtype=A.dtype)], axis=1)
    for ia, ib, j in steps:
        c, s = givens(W[ia, j], W[ib, j])
        rotate_rows(W, ia, ib, c, s)
    return W[:, n:].T, W[:, :n]


A = rng.standard_normal((8, 5))
for qr in (givens_qr_column, givens_qr_wavefront):
    Q, R = qr(A)
    check_qr(Q, R, A, 1e-13)

# The wavefront, drawn step by step on a 6 x 4 matrix: x marks the two rows of each rotation.
A = rng.standard_normal((6, 4))
W = np.concatenate([A, np.eye(6)], axis=1)
grids, titles = [], []
for t, (ia, ib, j) in enumerate(wavefront_steps(np, 6, 4), start=1):
    before = W[:, :4].copy()
    c, s = givens(W[ia, j], W[ib, j])
    rotate_rows(W, ia, ib, c, s)
    grids.append(codes(before, W[:, :4]))
    titles.append(f"step {t}")
side_by_side(grids, titles, gap=3)
assert len(grids) == 6 + 4 - 2

# %% [markdown]
# ## 4. Timing
#
# All four, and the library QR, on random matrices of the configured sizes
# (`QRLAB_SIZE=small`: a few hundred rows; `paper`: the papers' $4000 \times 2000$), on
# the default array module (CuPy when a GPU is present).  Every method forms the full $Q$,
# as `numpy.linalg.qr(mode='complete')` does.  The column-order Givens QR applies one
# rotation at a time, so it is timed on a small $120 \times 60$ matrix only.  Times are
# medians (CUDA events on a GPU); they depend on the machine, so the test suite does not
# compare them.

# %%
xp = qrlab.default_module()
small_size, big_size = (120, 60), qrlab.config.pick(small=(400, 200), paper=(4000, 2000))
reps = qrlab.config.pick(small=3, paper=2)
timer, host_timer = Timer(xp), Timer(np)


def time_all(m, n, serial):
    A_host = np.random.default_rng(1).standard_normal((m, n))
    A = xp.asarray(A_host)
    steps = wavefront_steps(xp, m, n)
    methods = {
        "numpy.linalg.qr (LAPACK)": (host_timer,
                                     lambda: np.linalg.qr(A_host, mode="complete")),
        "Householder, unblocked": (timer, lambda: householder_qr(A)),
        "blocked compact WY, nb=64": (timer, lambda: blocked_qr(A, 64)),
        "Givens, wavefront (eq. 7)": (timer, lambda: givens_qr_wavefront(A, steps)),
    }
    if serial:
        methods["Givens, column order (eq. 6)"] = (timer, lambda: givens_qr_column(A))
    if qrlab.gpu_available() and xp is not np:
        methods["cupy.linalg.qr (cuSOLVER)"] = (timer,
                                                lambda: xp.linalg.qr(A, mode="complete"))
    out = {}
    for name, (t, fn) in methods.items():
        # one rotation at a time costs a kernel launch per operation on a GPU: time it once
        out[name] = t(fn, lambda: (), 1 if "column order" in name else reps)[0]
    return out


results = {size: time_all(*size, serial=(size == small_size))
           for size in (small_size, big_size)}

# Correctness of every method at the larger size, on the device used for timing.
A = xp.asarray(np.random.default_rng(1).standard_normal(big_size))
for qr in (householder_qr, lambda A: blocked_qr(A, 64), givens_qr_wavefront):
    check_qr(*qr(A), A, 1e-12)

# %%
# NBVAL_IGNORE_OUTPUT
print("backend:", qrlab.backend.describe())
for (m, n), times in results.items():
    base = times["numpy.linalg.qr (LAPACK)"]
    print(f"\n{m} x {n}:")
    for name, t in times.items():
        print(f"  {name:30s} {t * 1e3:10.2f} ms   {t / base:8.1f} x numpy")

# %% [markdown]
# What to look for.  With `QRLAB_SIZE=paper` on an H100 GPU, for example, the
# $4000 \times 2000$ factorization took about 1.6 s unblocked, 0.08 s blocked, 4.4 s by
# the Givens wavefront and 0.017 s in cuSOLVER; on the $120 \times 60$ matrix the
# column-order Givens QR took 3.9 s against 0.12 s for the wavefront.
#
# * The **blocked** factorization beats the unblocked one by a wide margin on large
#   matrices, with the same flops: the difference is matrix products against
#   matrix-vector products.  On small matrices fixed costs per call dominate (Python,
#   kernel launches, threads waking up) and the order can go either way.
# * The **wavefront** Givens QR is far faster than the column order, again with the same
#   flops, because it launches $m + n - 2$ batches of rotations instead of about $mn$
#   single ones.  On a GPU each launched operation costs microseconds of launch time whatever its
#   size: the reason the papers' Givens-heavy updates were slow (001 Section 5).
# * The library QR (LAPACK, cuSOLVER) is the blocked algorithm with tuned kernels, and
#   the bar every update has to clear.
#
# Full Givens QR does about 50% more arithmetic than Householder QR ($3mn^2 - n^3$ flops
# for $R$ against $2mn^2 - \tfrac23 n^3$) and is never the way to factor a dense matrix from
# scratch.  Rotations come into their own when only a few entries per column need zeroing:
# that is the situation of every update in the notebooks that follow.
