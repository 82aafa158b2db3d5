# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Removing columns
#
# A least-squares model drops $p$ variables: columns $k, \dots, k+p-1$ leave $A$.  This
# notebook follows 001 Section 3.2 (000 Section 2.3.2): the algebra, the papers' example
# of Fig. 3 stage by stage, a check against recomputation, the operation count, and a
# timing sweep over $p$ like 000 Table 7.
#
# Indices are 0-based as in SciPy: qrlab's `k=2` is the papers' $k = 3$.  $A$ is
# $m \times n$ ($m$ rows, $n$ columns), as in 001; 000 swaps the letters.

# %%
import os

# Time both sides on one thread on the CPU (see notebook 04).  Set before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import matplotlib.pyplot as plt
import numpy as np

import qrlab
import qrlab.config
from qrlab import bench, course, viz
from qrlab.patterns import trace

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## The algebra
#
# With $A = QR$, deleting columns $k{:}k+p$ gives
#
# $$\tilde A = \begin{bmatrix} A_{:,\,0:k} & A_{:,\,k+p:n} \end{bmatrix},
# \qquad
# Q^T \tilde A = \begin{bmatrix} R_{:,\,0:k} & R_{:,\,k+p:n} \end{bmatrix}.$$
#
# Again $\tilde R_{:,0:k} = R_{:,0:k}$.  The columns right of the gap have moved $p$
# places left, so each now reaches $p$ rows below the diagonal: $R_{:,k+p:n}$ is upper
# triangular plus $p$ subdiagonals (upper Hessenberg when $p = 1$).  Householder
# reflectors $H_k, \dots, H_{n-p-1}$, one per remaining column, remove the band:
#
# $$H_{n-p-1} \cdots H_{k}\, R_{:,\,k+p:n} = \tilde R_{:,\,k:n-p}.$$
#
# Reflector $H_j$ acts only on rows $j, \dots, j+p$ (the column's band), so nothing fills
# in.  Blocked, as in the papers: a panel of $n_b$ columns is reduced by a Householder QR
# of its $(p + n_b) \times n_b$ block (001 writes $p + n_b + 1$ rows), and the panel's
# reflectors, gathered as $I - V T V^T$, update the columns to its right by matrix
# products.
#
# $Q$ is not needed: $\tilde R$ and $\tilde d = H^T d$ come from $R$ and $d$ alone.  If
# $Q$ is kept, $\tilde Q = Q H_k \cdots H_{n-p-1}$ changes only in columns $k{:}n$.
#
# ## The papers' example, stage by stage (001 Fig. 3)
#
# $m = 10$, $n = 8$, $p = 3$ columns removed from the papers' column $k = 3$ (`k=2`), in
# blocks of $n_b = 2$.  The `|` above the grid shows where the removed columns were (the
# papers' blue line); `[ ]` encloses the active block (red); `-` marks the entries each
# block makes zero.  The setup frame is 000 Fig. 2 exactly.

# %%
frames = trace("delete_cols", m=10, n=8, p=3, k=2, nb=2)
for frame in frames:
    print(viz.text(frame))
    print()

# %% [markdown]
# Without $Q$ (`Q=None`, the R-only update the papers time) the stages do the same to $R$:

# %%
r_only = trace("delete_cols", m=10, n=8, p=3, k=2, nb=2, Q=None)
assert all(a.Q is None for a in r_only) and all(b.Q is not None for b in frames)
assert all(np.array_equal(a.R, b.R) for a, b in zip(r_only, frames))
print(len(r_only), "frames, R identical with and without Q")

# %% [markdown]
# The same stages as an animation (a static fallback that plays on GitHub and nbviewer):

# %%
# NBVAL_IGNORE_OUTPUT
viz.animate(frames)

# %% [markdown]
# ## Explore: any $m$, $n$, $p$, $k$
#
# Move the sliders to change the shape and the stage; tick "every wave / panel" to see each
# panel split into its reduction and its update of the columns to the right.  This
# explorer draws panels of Fig. 3's width, $n_b = 2$ (`nb=2`), so it starts on the two
# blocks above; without `nb` it would use qrlab's default, $n_b = \max(16, p)$ (at most
# 128), and small examples would take a single block.  (The sliders need a live kernel;
# the animation above is the static version.)

# %%
explorer = viz.explorer("delete_cols", m=10, n=8, p=3, k=2, nb=2)

# %%
# NBVAL_IGNORE_OUTPUT
explorer

# %% [markdown]
# Driving the sliders from Python: removing the last $p$ columns needs no work at all
# (001: "the update is complete"), the slider ranges follow the operation ($k \le n - p$),
# and the update takes one block per $n_b = 2$ columns right of the gap:

# %%
w = explorer.widgets
w["stage"].value = 1
print(explorer.params, "->", explorer.frame.title)
assert explorer.frame.title.startswith("Remove columns: block 1")
assert [f.title for f in explorer.frames] == [f.title for f in frames]     # Fig. 3, as above

w["k"].value = 5                                   # the last p columns: k = n - p
print(explorer.params, "->", [f.title for f in explorer.frames])
assert [f.step for f in explorer.frames] == ["setup", "result"]

w["k"].value = 7                                   # clamped by the slider: k <= n - p
print("k slider max:", w["k"].max, "value:", w["k"].value)
assert w["k"].max == 5 and w["k"].value == 5

w["m"].value, w["n"].value, w["k"].value, w["p"].value = 12, 12, 0, 1
blocks = [f.title for f in explorer.frames if f.step == "stage"]
print(explorer.params, "->", len(blocks), "blocks, the last:", blocks[-1])
assert len(blocks) == 6                                         # 11 columns, panels of 2

w["m"].value, w["n"].value, w["p"].value, w["k"].value = 10, 8, 3, 2
w["stage"].value = 0
print("back to", explorer.params)

# %% [markdown]
# ## The update agrees with recomputation
#
# On random matrices (float64, NumPy): $\tilde Q \tilde R = \tilde A$, $\tilde Q$ is
# orthogonal, $\tilde R$ is upper triangular with *exact* zeros below the diagonal, and
# $\tilde R$ is the R of `scipy.linalg.qr` of $\tilde A$ (and of SciPy's own `qr_delete`)
# up to the signs of its rows.  The R-only update (`Q=None`) gives the same $\tilde R$
# (on a GPU up to row signs too: there it runs as one triangle update).
# `course.check_update` (in `qrlab/course.py`, the check of notebook 04 for every update)
# runs the update on random data, raises unless $\tilde R$ is exactly triangular, and
# returns the errors; `course.check_on_numpy` runs it on a few shapes and prints the power
# of ten each error stays below (asserted; the values themselves vary in their last digits
# from one BLAS to another).

# %%
checked = course.check_on_numpy("delete_cols", [(10, 8, 3, 2), (200, 120, 20, 37)], seed=5)

# %% [markdown]
# On a GPU the same check runs on CuPy arrays (with CuPy in, CuPy comes out;
# `course.check_on_gpu` says which backend it found):

# %%
# NBVAL_IGNORE_OUTPUT
on_gpu = course.check_on_gpu("delete_cols", [(10, 8, 3, 2), (2000, 1200, 200, 370)], seed=5)
for shape, errors in on_gpu.items():
    assert max(errors.values()) < 1e-11, (shape, errors)

# %% [markdown]
# ## How much work?
#
# With $w = n - k - p$ columns right of the gap, reflector $j$ has $p + 1$ entries and
# meets the $w - j$ columns to its right: about $4(p+1)(w-j)$ flops, in all
# (`qrlab.bench.cost`)
#
# $$2\,(p+1)\,w^2 \qquad\text{for } R \text{ and } d,\text{ independent of } m,$$
#
# against $2\tilde n^2(m - \tilde n/3)$ for a Householder QR least-squares solve of
# $\tilde A$ ($\tilde n = n - p$), which grows with $m$ (000 Section 5.3).  At the sizes of
# 000 Table 7 ($m = 6000$, $n = 3000$, $k = 0$), over $p$ (`course.flop_sweep`):

# %%
m, n, k = 6000, 3000, 0
ratios = course.flop_sweep("delete_cols", "p", (100, 200, 500, 1000, 2000), m=m, n=n, k=k)
assert all(r < 0.5 for r in ratios)               # always well under recomputation
assert bench.cost("delete_cols", 60000, n, 500, k, 4) == bench.cost("delete_cols", m, n, 500, k, 4)

# %% [markdown]
# ## Timing: update against recomputation, over $p$
#
# As in the papers (000 Section 5): the R-only update of $R$ and $d$ plus the triangular
# solve for $x$, timed against a QR least-squares solve of $\tilde A$ (`bench.gels`:
# `geqrf`, $Q^T b$, `trsm`), both on the same device, median of several runs
# (`bench.run_case` does both sides, `course.timing_sweep` over $p$; `bench.Timer` uses
# CUDA events on a GPU).  The sizes come from `QRLAB_SIZE`: small on a CPU, 000 Table 7's
# ($m = 6000$, $n = 3000$, $k = 0$, single precision) with `QRLAB_SIZE=paper`.

# %%
# NBVAL_IGNORE_OUTPUT
m_t, n_t, k_t = qrlab.config.pick(small=(600, 300, 0), paper=(6000, 3000, 0))
ps = qrlab.config.pick(small=(10, 50, 100, 200), paper=(100, 500, 1000, 2000))
reps = qrlab.config.pick(small=3, paper=5)
live = course.timing_sweep("delete_cols", "p", ps, m=m_t, n=n_t, k=k_t, reps=reps)
for r in live:
    assert r["rel_err_x"] < 1e-3, r

# %%
# NBVAL_IGNORE_OUTPUT
faster = [r["p"] for r in live if r["speedup_gels"] > 1]
if len(faster) == len(live):
    print("On this machine updating is faster than recomputing for every p tried "
          f"({min(r['speedup_gels'] for r in live):.1f}x to "
          f"{max(r['speedup_gels'] for r in live):.1f}x).")
elif faster:
    print(f"On this machine updating is faster than recomputing for p in {faster}, "
          "slower for the others.")
else:
    print("On this machine recomputing is faster than updating for every p tried.")

# %% [markdown]
# ## The papers' numbers, and GPU results committed to this repository
#
# 000 Table 7 (the $p$ sweep) survives in the extracted text only as update times with a
# garbled CULA column, and 001 Fig. 10 as a plot ("speed-ups reach over 13x for large $p$
# and $k$"), so `bench.paper_cases()` keeps its cells without numbers.  000 Table 6 has
# them: removing $p = 500$ columns at $k = 0$ from $m \times 3000$ matrices, where the
# update's time stays flat while CULA's grows with $m$ (Tesla M2050, seconds):

# %%
t6 = [c for c in bench.paper_cases(full=True) if c["table"] == "T6"]
print(f"{'m':>6} {'CULA s':>7} {'update s':>9} {'speed-up':>9}")
for c in t6:
    print(f"{c['m']:6d} {c['paper_cula']:7.3f} {c['paper_update']:9.3f} {c['paper_speedup']:9.2f}")
t7 = [c for c in bench.paper_cases(full=True) if c["table"] == "T7"]
print("000 Table 7 cells (m, n, p, k):", sorted({(c["m"], c["n"], c["p"], c["k"]) for c in t7}))
assert all(c["paper_speedup"] is None for c in t7)
assert max(c["paper_update"] for c in t6) - min(c["paper_update"] for c in t6) < 0.05

# %% [markdown]
# GPU results of both tables' cells, where `benchmarks/results/` holds some, and the
# speed-ups over $m$ beside 000 Table 6's (`course.load_results`, `course.results_table`
# and `course.speedup_plot`, as in notebook 04):

# %%
# NBVAL_IGNORE_OUTPUT
gpu_rows = course.load_results("delete_cols", {"T6", "T7"})
if not gpu_rows:
    print("No GPU results for this update in benchmarks/results/ yet: on a GPU, "
          "'python -m qrlab.bench --suite paper-full --tables T6,T7' writes them.")
else:
    print(course.results_table(gpu_rows, keys=("table", "m", "p", "k")))

# %%
# NBVAL_IGNORE_OUTPUT
fig = course.speedup_plot(live, "p", t6, [r for r in gpu_rows if r["table"] == "T6"],
                          paper_x="m", xlabel="p (columns removed)", paper_xlabel="m (rows)",
                          title=f"this machine, m={m_t}, n={n_t}, k={k_t}",
                          paper_title="000 Table 6 sizes (n=3000, p=500, k=0)")
plt.show()

# %% [markdown]
# ## Summary
#
# * Removing columns needs only $R$ (and $d$): the columns right of the gap gain $p$
#   subdiagonals, and Householder panels of $(p + n_b)$ rows remove them without fill.
# * The work, $2(p+1)(n-k-p)^2$ flops, does not depend on $m$, while recomputing does:
#   the taller $A$, the larger the gain.  Removing columns near the end (large $k$) leaves
#   almost nothing to do.
