# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Update or recompute?
#
# An update is worth it when it is faster than factorizing the changed matrix again.
# That depends on the update (which of the four), on the shape $m \times n$, on the size
# $p$ of the block and on its position $k$, and, in the end, on the machine: flops are not
# all equally fast.  This notebook maps where updating pays,
#
# 1. **by counting**: the flops of each update (`qrlab.bench.cost`) against those of a
#    Householder QR of the updated matrix, over $(k, p)$ and over $(m, n)$;
# 2. **by measuring** on this machine, at a few points;
# 3. from the **GPU benchmarks** committed in `benchmarks/results/`, where there are any.
#
# Throughout, the ratio is $\text{recompute} / \text{update}$: above 1, updating wins.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

import qrlab
import qrlab.backend
import qrlab.config
from qrlab import course
from qrlab.bench import cost, run_case

OPS = {"insert_rows": "adding rows", "delete_cols": "removing columns",
       "delete_rows": "removing rows", "insert_cols": "adding columns"}
RETURNS_Q = ("insert_cols", "delete_rows")     # the updates that form the new Q (001)

# %% [markdown]
# ## 1. Counting flops
#
# Recomputing means a Householder QR of the updated $\tilde m \times \tilde n$ matrix,
# $2\tilde m \tilde n^2 - \tfrac23 \tilde n^3$ flops for $R$ (and $Q^T b$ alongside), plus
# $4(\tilde m^2 \tilde n - \tilde m \tilde n^2 + \tfrac13 \tilde n^3)$ to form the full
# $\tilde Q$ when the update returns one (adding columns and removing rows, as in the
# papers).  The updates cost (`qrlab.bench.cost`, $p$ rows or columns at $k$):
#
# | update | flops | why |
# |---|---|---|
# | adding rows | $2(p+1)n^2$ | reflectors of height $p+1$ per column of $R$, independent of $m$ and $k$ |
# | removing columns | $2(p+1)(n-k-p)^2$ | the same, on the $n-k-p$ columns right of the gap |
# | removing rows | $6pm(m+n)$ | $p$ sweeps of rotations through $Q$ and $R$ |
# | adding columns | $2m^2p + 4m(m-n)p + 6p(n-k)(m+n+p-k)$ | $Q^TU$, reflectors below row $n$, rotations above |
#
# `course.qr_flops(m, n, full_q)` (in `qrlab/course.py`, shared with notebooks 04-07)
# counts the recomputation of the changed matrix, whose shape is `course.new_shape`.

# %%
def valid(op, m, n, p, k):
    if op == "delete_cols":
        return 0 <= k and k + p <= n and p < n
    if op == "insert_cols":
        return 0 <= k <= n
    if op == "delete_rows":
        return 0 <= k and k + p <= m and m - p >= n
    return 0 <= k <= m


def count_ratio(op, m, n, p, k):
    """flops(recompute) / flops(update); inf where the update needs no arithmetic
    (removing the last p columns just drops them), nan where (p, k) is not a valid case."""
    if not valid(op, m, n, p, k):
        return math.nan
    update = cost(op, m, n, p, k, 4)[0]
    return (course.qr_flops(*course.new_shape(op, m, n, p), full_q=op in RETURNS_Q) / update
            if update else math.inf)


# %% [markdown]
# At the papers' size, $m = 4000$, $n = 2000$, $k = 0$ (the first rows or columns, the
# papers' accuracy runs; for columns the most expensive position):

# %%
M, N = 4000, 2000
PS = (1, 10, 100, 300, 500, 700, 900)
print(f"{'recompute / update (flops)':28s}" + "".join(f"{'p=' + str(p):>9s}" for p in PS))
for op, label in OPS.items():
    print(f"{label:28s}" + "".join(f"{count_ratio(op, M, N, p, 0):9.3g}" for p in PS))


def break_even(op, m, n, k):
    """Smallest p at which recomputing costs no more flops than updating, or None."""
    return next((p for p in range(1, n) if valid(op, m, n, p, k)
                 and count_ratio(op, m, n, p, k) <= 1), None)


print()
for op, label in OPS.items():
    where = {k: break_even(op, M, N, k) for k in (0, N // 2)}
    said = ", ".join(f"k = {k}: " + (f"p >= {p}" if p else "never") for k, p in where.items())
    print(f"{label:18s} stops paying at  {said}")

# %% [markdown]
# By the counts, **adding rows** and **removing columns** always pay: their cost does not
# even depend on $m$, since only the $n \times n$ triangle of $R$ is touched.  **Removing
# rows** works through all of $Q$ (reflectors on its columns past $n$, then $p$ sweeps of
# rotations on the rest: notebook 07) and stops paying at $p \approx 0.29\,n$; **adding columns** stops at $p \approx n/2$ when the columns go in at
# the front, later when they go further right (fewer rotations).  The checks:

# %%
assert all(count_ratio("insert_rows", M, N, p, 0) > 1 for p in range(1, N))
assert all(count_ratio("delete_cols", M, N, p, k) > 1
           for p in range(1, N, 7) for k in range(0, N - p + 1, 13))
assert break_even("delete_rows", M, N, 0) == 576
assert break_even("insert_cols", M, N, 0) == 920
assert break_even("insert_cols", M, N, N // 2) > break_even("insert_cols", M, N, 0)
# removing rows / adding columns on a tall matrix: ratio -> n~ / p and 2 n~ / (3 p),
# whatever m
for op, limit in (("delete_rows", 1.0), ("insert_cols", 2 / 3)):
    nt = course.new_shape(op, 10 ** 6, 300, 100)[1]
    assert abs(count_ratio(op, 10 ** 6, 300, 100, 0) / (limit * nt / 100) - 1) < 0.01
# adding rows: the update's cost is independent of m, so the ratio grows with m
assert (count_ratio("insert_rows", 16000, N, 100, 0)
        > 3 * count_ratio("insert_rows", M, N, 100, 0))

# %% [markdown]
# ### Maps over $(k, p)$ and over $(m, n)$
#
# The colour is $\log_{10}$ of the ratio (red: updating loses; blue: it wins), the black
# line is the break-even contour, ratio = 1.  Blank cells are cases that do not exist
# ($k + p > n$ when removing columns, $m - p < n$ when removing rows); removing the last
# columns costs nothing at all and is drawn at the top of the scale.

# %%
# NBVAL_IGNORE_OUTPUT
def ratio_map(op, xs, ys, fn):
    return np.array([[fn(op, x, y) for x in xs] for y in ys])


def draw_maps(xs, ys, fn, xlabel, ylabel, title, logx=False, logy=False):
    fig, axes = plt.subplots(1, 4, figsize=(11, 2.9), dpi=70, sharey=True)
    for ax, (op, label) in zip(axes, OPS.items()):
        Z = np.log10(np.clip(ratio_map(op, xs, ys, fn), 1e-2, 1e4))
        im = ax.pcolormesh(xs, ys, Z, cmap="RdBu", vmin=-2, vmax=2, shading="auto")
        if np.nanmin(Z) < 0 < np.nanmax(Z):
            ax.contour(xs, ys, Z, levels=[0], colors="k", linewidths=1)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_xscale("log" if logx else "linear")
        ax.set_yscale("log" if logy else "linear")
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel(ylabel, fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.8, label="log10(recompute / update)")
    fig.suptitle(title, fontsize=10)
    plt.show()


ks = np.linspace(0, N, 81).astype(int)
ps = np.linspace(1, 1000, 81).astype(int)
draw_maps(ks, ps, lambda op, k, p: count_ratio(op, M, N, p, k), "k", "p",
          f"flop ratio over (k, p), m = {M}, n = {N}")

# %%
# NBVAL_IGNORE_OUTPUT
P, K = 100, 0
mm = np.geomspace(200, 16000, 60).astype(int)
nn = np.geomspace(50, 8000, 60).astype(int)
draw_maps(mm, nn, lambda op, m, n: count_ratio(op, m, n, P, K), "m", "n",
          f"flop ratio over (m, n), p = {P}, k = {K}", logx=True, logy=True)

# %% [markdown]
# Over $(m, n)$: adding rows and removing columns win more the taller the matrix, since
# their cost does not grow with $m$.  Removing rows and adding columns pay only when $n$
# is large against $p$: forming the new $Q$ costs about $4m^2\tilde n$ flops, and on a
# tall matrix the update's work on $Q$ about $4pm^2$ (removing rows: reflectors on the
# columns past $n$) or $6pm^2$ (adding columns: $Q^T U$ and reflectors), so the ratio
# tends to $\tilde n / p$ or $2\tilde n / (3p)$ whatever $m$ is.
#
# ## 2. Measuring
#
# Flops are not the whole story.  The update's Givens sweeps are matrix-vector work, or
# worse, strings of small dependent operations, while a library QR runs mostly matrix
# products near the machine's peak: the same flop counts can take very different
# times.  `qrlab.bench.run_case` times both sides, everything on the default array module
# (CuPy on a GPU), median of a few runs: the update (with the solve for $x$) and the
# recomputation producing the same outputs (a complete QR when the update returns $Q$, a
# QR least-squares solve otherwise).  Few points, so that this runs in seconds on a
# laptop; `QRLAB_SIZE=paper` uses the papers' sizes.

# %%
xp = qrlab.default_module()
m, n = qrlab.config.pick(small=(400, 200), paper=(4000, 2000))
p_values = qrlab.config.pick(small=(10, 50), paper=(100, 500))
reps = 3
cases = []
for op in OPS:
    for p in p_values:
        for k in ((0, n - p) if op.endswith("cols") else (0,)):
            cases.append(dict(table="notebook", op=op, m=m, n=n, p=p, k=k, paper_cula=None,
                              paper_update=None, paper_speedup=None))
measured = [run_case(xp, case, "float32", reps) for case in cases]
for r in measured:
    assert r["rel_err_x"] < 1e-3, "the updated solution disagrees with a fresh one"
print(f"{len(measured)} cases measured at m = {m}, n = {n}, p in {p_values}, float32")

# %%
# NBVAL_IGNORE_OUTPUT
print("backend:", qrlab.backend.describe())
print(f"{'update':18s}{'p':>5s}{'k':>6s}{'update ms':>11s}{'recompute ms':>14s}"
      f"{'measured':>10s}{'counted':>9s}")
for r in measured:
    counted = count_ratio(r["op"], r["m"], r["n"], r["p"], r["k"])
    print(f"{OPS[r['op']]:18s}{r['p']:5d}{r['k']:6d}{r['t_update'] * 1e3:11.2f}"
          f"{r['t_same'] * 1e3:14.2f}{r['speedup_same']:10.2f}{counted:9.3g}")

# %% [markdown]
# ## 3. GPU results
#
# `python -m qrlab.bench --suite paper` writes its measurements to
# `benchmarks/results/<GPU>-<dtype>.json`, each case with the same ratio (`speedup_same`)
# measured on that GPU (`course.load_results` reads them all, one row per case, each with
# its GPU and precision).  The figure puts every measured case, from this machine and from
# any committed results, against its flop ratio: points on the diagonal run as fast as
# their flop counts predict; points below it are slower than their arithmetic.

# %%
# NBVAL_IGNORE_OUTPUT
committed = course.load_results()
loaded = []                                       # (label, rows): one series per GPU
for device, dtype in sorted({(r["device"], r["dtype"]) for r in committed}):
    rows = [r for r in committed if r["device"] == device and r["dtype"] == dtype]
    loaded.append((f"{device} ({dtype})", rows))
if loaded:
    for label, rows in loaded:
        print(f"{label}: {len(rows)} cases from {course.RESULTS.name}/")
else:
    print(f"No GPU results in {course.RESULTS} yet: run "
          "'python -m qrlab.bench --suite paper' on a GPU to add some.")

here = f"this machine ({'GPU' if xp is not np else 'CPU'}, m={m}, n={n})"
series = [(here, measured)] + loaded
fig, ax = plt.subplots(figsize=(6, 4), dpi=70)
markers = {"insert_rows": "o", "delete_cols": "s", "delete_rows": "v", "insert_cols": "^"}
for i, (label, rows) in enumerate(series):
    for op in OPS:
        pts = [(count_ratio(r["op"], r["m"], r["n"], r["p"], r["k"]), r["speedup_same"])
               for r in rows if r["op"] == op]
        pts = [(c, s) for c, s in pts if math.isfinite(c)]
        if pts:
            ax.scatter(*zip(*pts), marker=markers[op], color=f"C{i}", s=18,
                       label=f"{label}: {OPS[op]}")
ax.axline((1, 1), slope=1, color="gray", lw=0.8)
ax.axhline(1, color="k", lw=0.5)
ax.axvline(1, color="k", lw=0.5)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("recompute / update, counted (flops)", fontsize=8)
ax.set_ylabel("recompute / update, measured (time)", fontsize=8)
ax.legend(fontsize=5, loc="lower right")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## What the maps say
#
# * By the **counts**, adding rows and removing columns pay everywhere, removing rows
#   only for $p$ up to about $0.3\,n$, adding columns up to about $n/2$ (more when the new
#   columns go in further right).  The counts are an upper bound on the gain.
# * The **measurements** fall short of the counts, often by a factor of ten or more,
#   because the library QR runs its flops as tuned matrix products while an update runs
#   many smaller operations.  With `QRLAB_SIZE=paper` on an H100, for example, removing
#   the last 100 or 500 columns was about 20 times faster than recomputing and adding 100
#   columns near the right end about 4 times, while adding 500 columns at the front, or
#   removing 500 rows with their $Q$, took 10 to 25 times longer than a fresh cuSOLVER QR
#   (flop ratios 1.7 and 1.05: no margin to absorb slow flops).
# * The updates made of rotation sweeps (removing rows, adding columns) suffer most: on a
#   GPU every sweep of small dependent rotations costs kernel launches.  The papers saw
#   the same: their removing-rows update lost to a full QR in all but a few cases (001
#   Section 5).
#
# Whether to update is a question about the case, $(m, n, p, k)$, and about the machine:
# count first to see whether there is a margin, then measure.
