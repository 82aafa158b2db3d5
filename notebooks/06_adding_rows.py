# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Adding rows
#
# A least-squares problem gains $p$ observations: $p$ rows $U$ enter $A$ before row $k$.
# This notebook follows 001 Section 3.3 (000 Section 2.3.3): the algebra, the papers'
# example of Fig. 4 stage by stage, a check against recomputation, the operation count,
# and a timing sweep over $m$ like 000 Table 8.
#
# Indices are 0-based as in SciPy.  $A$ is $m \times n$ ($m$ rows, $n$ columns), as in
# 001; 000 swaps the letters.

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
# Adding the $p \times n$ block $U$ before row $k$ gives $\tilde A$; a permutation $P$ moves
# the new rows to the bottom, where $k$ no longer matters:
#
# $$P \tilde A = \begin{bmatrix} A \\ U \end{bmatrix},
# \qquad
# \begin{bmatrix} Q^T & 0 \\ 0 & I_p \end{bmatrix} P \tilde A
# = \begin{bmatrix} R \\ U \end{bmatrix}.$$
#
# $n$ Householder reflectors reduce the stack to triangular form,
# $H_n \cdots H_1 \begin{bmatrix} R \\ U \end{bmatrix} = \tilde R$, and
# $\tilde Q = P^T \operatorname{diag}(Q, I_p)\, H_1 \cdots H_n$.  Reflector $H_j$ zeroes
# column $j$ of $U$ against the diagonal entry $R_{jj}$: its vector is $e_j$ on the rows of
# $R$ and a dense $v_j$ on the $p$ new rows, so it touches **one row of $R$ and the $p$ new
# rows** and nothing else.  The update never looks at the zero rows of $R$: its cost does
# not depend on $m$.
#
# Blocked, as in the papers: $n_b$ reflectors combine into
# $H_1 \cdots H_{n_b} = I - V T V^T$ with
#
# $$V = \begin{bmatrix} I_{n_b} \\ 0 \\ v_{m+1:m+p} \end{bmatrix},
# \qquad T_1 = \tau_1,\quad
# T_i = \begin{bmatrix} T_{i-1} & -\tau_i T_{i-1} V_{m+1:m+p,\,1:i-1}^T v_i \\
#                       0 & \tau_i \end{bmatrix},$$
#
# and only the $n_b$ diagonal rows of the panel and the rows of $U$ take part in the
# products that update the columns to the right (and $d$, extended by the new
# right-hand sides $e$).  qrlab builds the same $T$ in one product and one triangular
# solve, $T = (\operatorname{triu}(V^T V, 1) + \operatorname{diag}(1/\tau))^{-1}$, instead of
# $n_b$ dependent steps.
#
# ## The papers' example, stage by stage (001 Fig. 4)
#
# $m = 8$, $n = 6$, $p = 4$ rows, panels of $n_b = 2$; here appended (`k=8`).  `b` marks the
# new rows (blue), `[ ]` the active region (red).  Each block has the papers' two stages:
# Householder on the panel (its $n_b$ diagonal rows and the $p$ new rows), then the same
# reflectors, as $V$ and $T$, on the columns to the right.  The setup frame is 000 Fig. 3
# exactly.

# %%
frames = trace("insert_rows", m=8, n=6, p=4, k=8, nb=2, detail=True)
for frame in frames:
    print(viz.text(frame))
    print()

# %% [markdown]
# The same blocks as an animation, one frame per block (a static fallback that plays on
# GitHub and nbviewer):

# %%
# NBVAL_IGNORE_OUTPUT
viz.animate(trace("insert_rows", m=8, n=6, p=4, k=8, nb=2))

# %% [markdown]
# ## Explore: any $m$, $n$, $p$, $k$
#
# Move the sliders to change the shape and the stage; tick "every wave / panel" to split
# each block into its two stages as above.  This explorer draws panels of Fig. 4's width,
# $n_b = 2$ (`nb=2`), so it starts on the three blocks above; without `nb` it would use
# qrlab's default, $n_b = \max(16, p)$ (at most 128), and small examples would take a
# single block.  (The sliders need a live kernel; the animation above is the static
# version.)

# %%
explorer = viz.explorer("insert_rows", m=8, n=6, p=4, k=8, nb=2)

# %%
# NBVAL_IGNORE_OUTPUT
explorer

# %% [markdown]
# Driving the sliders from Python: $k$ changes nothing in $R$, only which rows of
# $\tilde Q$ belong to the new observations; and the work stays the same however tall
# $A$ is:

# %%
w = explorer.widgets
w["stage"].value = 1
print(explorer.params, "->", explorer.frame.title)
assert [f.title for f in explorer.frames] == [f.title for f in trace("insert_rows", 8, 6, 4, 8,
                                                                     nb=2)]   # Fig. 4's blocks
at_end = [f.R.copy() for f in explorer.frames]
q_end = explorer.frames[-1].Q.copy()

w["k"].value = 0                                   # the new rows first instead of last
print(explorer.params, "->", explorer.frame.title)
assert all(np.array_equal(a, f.R) for a, f in zip(at_end, explorer.frames))
q_front = explorer.frames[-1].Q
assert np.array_equal(q_front[:4], q_end[8:]) and np.array_equal(q_front[4:], q_end[:8])
print("R identical for k=0 and k=8; the new rows of Q~ move from the bottom to the top")

w["m"].value = 30                                  # taller A, same n and p
print(explorer.params, "->", [f.title for f in explorer.frames][1:-1])
short = [f.title for f in trace("insert_rows", 8, 6, 4, 0, nb=2)]
assert [f.title for f in explorer.frames][1:-1] == short[1:-1]

w["m"].value, w["k"].value = 8, 8
w["stage"].value = 0
print("back to", explorer.params)

# %% [markdown]
# ## The update agrees with recomputation
#
# On random matrices (float64, NumPy): $\tilde Q \tilde R = \tilde A$, $\tilde Q$ is
# orthogonal, $\tilde R$ is upper triangular with *exact* zeros below the diagonal, and
# $\tilde R$ is the R of `scipy.linalg.qr` of $\tilde A$ (and of SciPy's own `qr_insert`)
# up to the signs of its rows.  The R-only update (`Q=None`) gives the same $\tilde R$.
# `course.check_update` (in `qrlab/course.py`, the check of notebook 04 for every update)
# runs the update on random data, raises unless $\tilde R$ is exactly triangular, and
# returns the errors; `course.check_on_numpy` runs it on a few shapes and prints the power
# of ten each error stays below (asserted; the values themselves vary in their last digits
# from one BLAS to another).

# %%
checked = course.check_on_numpy("insert_rows", [(8, 6, 4, 8), (200, 120, 20, 37)], seed=6)

# %% [markdown]
# On a GPU the same check runs on CuPy arrays (with CuPy in, CuPy comes out;
# `course.check_on_gpu` says which backend it found):

# %%
# NBVAL_IGNORE_OUTPUT
on_gpu = course.check_on_gpu("insert_rows", [(8, 6, 4, 8), (2000, 1200, 200, 370)], seed=6)
for shape, errors in on_gpu.items():
    assert max(errors.values()) < 1e-11, (shape, errors)

# %% [markdown]
# ## How much work?
#
# Reflector $j$ has $p + 1$ entries and meets $n - j$ columns: about $4(p+1)(n-j)$ flops,
# in all (`qrlab.bench.cost`)
#
# $$2\,(p+1)\,n^2 \qquad\text{for } R \text{ and } d,\text{ independent of } m,$$
#
# against $2n^2(m + p - n/3)$ for a Householder QR least-squares solve of the
# $(m+p) \times n$ matrix $\tilde A$.  At the sizes of 000 Table 8 ($n = 3000$,
# $p = 500$), over $m$ (`course.flop_sweep`):

# %%
n, p = 3000, 500
ratios = course.flop_sweep("insert_rows", "m", range(8000, 14001, 1000), n=n, p=p, k=0)
assert ratios == sorted(ratios, reverse=True) and ratios[0] < 0.1

# %% [markdown]
# Fifteen times fewer flops, yet the papers measured speed-ups of only 1.2 to 1.9 here:
# their update made twice as many CUBLAS calls per reflector as a full QR does (000
# Section 5.4).  Calls, not flops, set the time at these sizes on their GPU.
#
# ## Timing: update against recomputation, over $m$
#
# As in the papers (000 Section 5): the R-only update of $R$ and $d$ plus the triangular
# solve for $x$, timed against a QR least-squares solve of $\tilde A$ (`bench.gels`:
# `geqrf`, $Q^T b$, `trsm`), both on the same device, median of several runs on fresh
# random rows (`bench.run_case` does both sides, `course.timing_sweep` over $m$;
# `bench.Timer` uses CUDA events on a GPU).  The sizes come from `QRLAB_SIZE`: small on a
# CPU, 000 Table 8's ($n = 3000$, $p = 500$, $k = 0$, single precision) with
# `QRLAB_SIZE=paper`.

# %%
# NBVAL_IGNORE_OUTPUT
n_t, p_t = qrlab.config.pick(small=(300, 50), paper=(3000, 500))
ms = list(range(8 * n_t // 3, 14 * n_t // 3 + 1, n_t // 3))
reps = qrlab.config.pick(small=3, paper=5)
live = course.timing_sweep("insert_rows", "m", ms, n=n_t, p=p_t, k=0, reps=reps)
for r in live:
    assert r["rel_err_x"] < 1e-3, r

# %%
# NBVAL_IGNORE_OUTPUT
faster = [r["m"] for r in live if r["speedup_gels"] > 1]
if len(faster) == len(live):
    print("On this machine updating is faster than recomputing for every m tried "
          f"({live[0]['speedup_gels']:.1f}x at m={live[0]['m']}, "
          f"{live[-1]['speedup_gels']:.1f}x at m={live[-1]['m']}).")
elif faster:
    print(f"On this machine updating is faster than recomputing for m in {faster}, "
          "slower for the others.")
else:
    print("On this machine recomputing is faster than updating for every m tried.")

# %% [markdown]
# ## The papers' numbers, and GPU results committed to this repository
#
# 000 Table 8: adding $p = 500$ rows at $k = 0$ to $m \times 3000$ matrices (Tesla M2050,
# CULA `sgels` against the update, seconds).  The update's time stays flat while CULA's
# grows with $m$:

# %%
t8 = [c for c in bench.paper_cases(full=True) if c["table"] == "T8"]
print(f"{'m':>6} {'CULA s':>7} {'update s':>9} {'speed-up':>9}")
for c in t8:
    print(f"{c['m']:6d} {c['paper_cula']:7.3f} {c['paper_update']:9.3f} {c['paper_speedup']:9.2f}")
assert [c["paper_speedup"] for c in t8] == sorted(c["paper_speedup"] for c in t8)
assert max(c["paper_update"] for c in t8) - min(c["paper_update"] for c in t8) < 0.06

# %% [markdown]
# GPU results of the same cells, where `benchmarks/results/` holds some, and the
# speed-ups over $m$ beside the papers' (`course.load_results`, `course.results_table`
# and `course.speedup_plot`, as in notebook 04):

# %%
# NBVAL_IGNORE_OUTPUT
gpu_rows = course.load_results("insert_rows", {"T8"})
if not gpu_rows:
    print("No GPU results for this update in benchmarks/results/ yet: on a GPU, "
          "'python -m qrlab.bench --suite paper --tables T8' writes them.")
else:
    print(course.results_table(gpu_rows, keys=("m",)))

# %%
# NBVAL_IGNORE_OUTPUT
fig = course.speedup_plot(live, "m", t8, gpu_rows, xlabel="m (rows before the update)",
                          title=f"this machine, n={n_t}, p={p_t}, k=0",
                          paper_title="000 Table 8 sizes (n=3000, p=500, k=0)")
plt.show()

# %% [markdown]
# ## Summary
#
# * Adding rows needs only $R$ (and $d$): the new rows go to the bottom, and each
#   reflector touches one row of $R$ and the $p$ new rows, so $k$ does not matter and
#   neither does $m$.
# * The work, $2(p+1)n^2$ flops, is a small fraction of recomputing when $A$ is tall;
#   blocked into panels ($V$, $T$) it runs as matrix products.
