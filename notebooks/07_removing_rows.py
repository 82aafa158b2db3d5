# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Removing rows
#
# A least-squares problem loses $p$ observations: rows $k, \dots, k+p-1$ leave $A$.  This
# notebook follows 001 Section 3.4 (000 Section 2.3.4): the algebra, the papers' example
# of Fig. 5 stage by stage, a check against recomputation, the operation count, and a
# timing sweep over $p$ like 000 Table 10.
#
# Indices are 0-based as in SciPy: qrlab's `k=4` is the papers' $k = 5$.  $A$ is
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
# A permutation $P$ moves the rows to be removed to the top:
#
# $$P A = \begin{bmatrix} A_{k:k+p,\,:} \\ \tilde A \end{bmatrix} = (P Q)\, R .$$
#
# Call $Z$ the first $p$ rows of $PQ$: the rows of $Q$ that belong to the removed rows.
# Givens rotations $G$ of adjacent *columns* of $PQ$ zero $Z$ from the right, one row of
# $Z$ per sweep, until $Z = [D\ \ 0]$ with $D$ diagonal ($\pm 1$ on the diagonal, because
# the rows of an orthogonal matrix have unit length).  Orthogonality then forces zeros
# below $D$ too, and applying the same rotations to the rows of $R$ gives
#
# $$P A = (P Q G)(G^T R) =
# \begin{bmatrix} D & 0 \\ 0 & \tilde Q \end{bmatrix}
# \begin{bmatrix} S \\ \tilde R \end{bmatrix},
# \qquad \tilde A = \tilde Q \tilde R .$$
#
# A rotation of rows $(i-1, i)$ of $R$ fills the entry below the diagonal in row $i$; each
# sweep adds one subdiagonal, so $G^T R$ carries $p$ of them, and dropping its first $p$
# rows leaves $\tilde R$ upper triangular.  The right-hand side follows: $\tilde d = (G^T
# d)_{p:}$.  Householder reflectors cannot do this: one reflector that zeroes a row of $Z$
# mixes every column of $Q$, hence every row of $R$, and $R$ would fill completely (001
# Section 3.4).  In the papers this is the one update that is Givens rotations throughout,
# on both $Q$ and $R$, and the one they found slowest (notebook 03).  (Not quite every row
# of $R$, though: below row $n$, $R$ is zero.  qrlab uses that; see below.)
#
# ## The papers' example, stage by stage (001 Fig. 5)
#
# $m = 12$, $n = 5$, $p = 4$ rows removed from the papers' row $k = 5$ (`k=4`).  Their rows
# of $Q$ (`b`, blue: the strip $Z$) are moved to the top first, as the permutation $P$ does;
# 001 Fig. 5 draws $Z$ in place.  `-` marks what the sweeps zero (in $Z$, and below $D$ by
# orthogonality), `+` the band they fill in $R$; the result is $\tilde Q$ and $\tilde R$.

# %%
frames = trace("delete_rows", m=12, n=5, p=4, k=4, method="paper")
for frame in frames:
    print(viz.text(frame))
    print()

# %% [markdown]
# The four sweeps are pipelined, two columns apart; each wave rotates disjoint column
# pairs of $Q$ (and row pairs of $R$).  Waves 1, 3 and the last of the $m + p - 2 = 14$:

# %%
waves = [f for f in trace("delete_rows", m=12, n=5, p=4, k=4, detail=True, method="paper")
         if "wave" in f.title]
assert len(waves) == 12 + 4 - 2
for frame in (waves[0], waves[2], waves[-1]):
    print(viz.text(frame))
    print()

# %% [markdown]
# The same stages as an animation (a static fallback that plays on GitHub and nbviewer):

# %%
# NBVAL_IGNORE_OUTPUT
viz.animate(frames)

# %% [markdown]
# ## qrlab's first stage: reflectors where $R$ is zero
#
# Rows $n, \dots, m-1$ of $R$ are zero.  A transformation of the columns of $Q$ past $n$
# acts on those rows of $R$ only, so it fills nothing there, whatever it is; only the
# right-hand side $d$, which has no shape to keep, changes with it.  So qrlab (the default,
# `method='blocked'`) starts with an LQ factorization of $Z$'s last $m - n$ columns,
#
# $$Z_{:,\,n:} = [L\ \ 0]\,H^T, \qquad L \text{ lower triangular } (p \times p),$$
#
# by $p$ Householder reflectors, applied to those columns of $Q$ (and rows of $d$) as matrix
# products.  Row $s$ of $Z$ then ends at column $n + s$, and sweep $s$ starts there instead of
# at column $m - 1$: the sweeps have $n + p - 1$ waves instead of $m + p - 2$, and the rotations
# reach only the first $n + p$ columns of $Q$.  This is the papers' own first stage of adding
# columns (notebook 04: Householder on the rows of $Q^T U$ below $R$), seen from the other
# side; `method='paper'` keeps their algorithm.  The same example:

# %%
frames_q = trace("delete_rows", m=12, n=5, p=4, k=4)
for frame in frames_q:
    print(viz.text(frame))
    print()
sweeps_q = [op for op in qrlab.stages.plan_delete_rows(12, 5, 4).ops()
            if isinstance(op, qrlab.stages.Sweeps)][0]
print(f"{len(sweeps_q.waves())} waves of rotations (the papers': {len(waves)})")
assert len(sweeps_q.waves()) == 5 + 4 - 1 and frames_q[-1].R.shape == frames[-1].R.shape

# %% [markdown]
# At 000 Table 10's sizes ($m = 12000$) the waves drop from $m + p - 2 = 12018$ to
# $n + p - 1$: 6019 for $n = 6000$, 10019 for $n = 10000$.  The reflectors cost about
# $4\,m\,(m - n)\,p$ flops, as matrix products, which replace $6\,p\,m\,(m - n)$ flops of
# rotations that moved $Q$'s columns past $n$ through memory wave after wave.
#
# ## Explore: any $m$, $n$, $p$, $k$
#
# Move the sliders to change the shape and the stage; tick "every wave / panel" to step
# through the waves one by one.  (The sliders need a live kernel; the animation above is
# the static version.)

# %%
explorer = viz.explorer("delete_rows", m=12, n=5, p=4, k=4)

# %%
# NBVAL_IGNORE_OUTPUT
explorer

# %% [markdown]
# Driving the sliders from Python: with $Z$ moved to the top, $k$ changes nothing in the
# pictures (000: "the complexity of the update is not dependent on $k$"); every wave is a
# frame, and the first stage makes two (its panel, then the rest of $Q$); and at least one
# row must stay ($p \le m - 1$):

# %%
w = explorer.widgets
w["stage"].value = 1
print(explorer.params, "->", explorer.frame.title)
at_k4 = [(f.R.copy(), f.Q.copy()) for f in explorer.frames]

w["k"].value = 0
print(explorer.params, "->", explorer.frame.title)
assert all(np.array_equal(R, f.R) and np.array_equal(Q, f.Q)
           for (R, Q), f in zip(at_k4, explorer.frames))

w["detail"].value = True
print(len(explorer.frames), "frames with every wave")
assert len(explorer.frames) == 1 + 2 + (5 + 4 - 1) + 1

w["p"].value = 20
print("p slider max:", w["p"].max, "value:", w["p"].value)
assert w["p"].max == w["p"].value == 11

w["detail"].value = False
w["p"].value, w["k"].value = 4, 4
w["stage"].value = 0
print("back to", explorer.params)

# %% [markdown]
# ## The update agrees with recomputation
#
# On random matrices (float64, NumPy): $\tilde Q \tilde R = \tilde A$, $\tilde Q$ is
# orthogonal, $\tilde R$ is upper triangular with *exact* zeros below the diagonal, and
# $\tilde R$ is the R of `scipy.linalg.qr` of $\tilde A$ (and of SciPy's own `qr_delete`)
# up to the signs of its rows.  `course.check_update` (in `qrlab/course.py`, the check of
# notebook 04 for every update) runs the update on random data, raises unless $\tilde R$
# is exactly triangular, and returns the errors; `course.check_on_numpy` runs it on a few
# shapes and prints the power of ten each error stays below (asserted; the values
# themselves vary in their last digits from one BLAS to another).

# %%
checked = course.check_on_numpy("delete_rows", [(12, 5, 4, 4), (200, 120, 20, 37)], seed=7)

# %% [markdown]
# On a GPU the same check runs on CuPy arrays (with CuPy in, CuPy comes out;
# `course.check_on_gpu` says which backend it found):

# %%
# NBVAL_IGNORE_OUTPUT
on_gpu = course.check_on_gpu("delete_rows", [(12, 5, 4, 4), (2000, 1200, 200, 370)], seed=7)
for shape, errors in on_gpu.items():
    assert max(errors.values()) < 1e-11, (shape, errors)

# %% [markdown]
# ## How much work?
#
# In the papers' algorithm sweep $s$ makes $m - 1 - s$ rotations, each on $m$ entries of $Q$
# and $n$ of $R$ (6 flops per pair of entries), in all about $6\,p\,m\,(m + n)$ flops.  With
# qrlab's first stage (for $m - n > p$) it is about (`qrlab.bench.cost`)
#
# $$4\,m\,(m - n)\,p + 6\,p\,(n + p)\,(m + n),$$
#
# independent of $k$, against $2n^2(m - p - n/3)$ for a Householder QR least-squares
# solve of the $(m-p) \times n$ matrix $\tilde A$.  At the sizes of 000 Table 10
# ($m = 12000$, $n = 6000$), over $p$ (`course.flop_sweep`):

# %%
m, n = 12000, 6000
ratios = course.flop_sweep("delete_rows", "p", (20, 40, 60, 80, 100), m=m, n=n, k=0)
assert ratios == sorted(ratios) and ratios[-1] < 0.5

# %% [markdown]
# In flops the update is always cheaper here, and yet the papers measured it up to three
# times *slower* than CULA's full QR (Table 10 below): their rotations ran one wave per
# pair of kernel launches, each moving whole rows of $Q$ and $R$ through memory for at
# most $p$ rotations.  qrlab computes every rotation in one launch and applies them in one
# more, group of waves by group of waves, each group's rows of $Q$ and $R$ read and
# written once (notebook 03).
#
# ## Timing: update against recomputation, over $p$
#
# As in the papers (000 Section 5): the update of $Q$, $R$ and $d$ plus the triangular
# solve for $x$, timed against a QR least-squares solve of $\tilde A$ (`bench.gels`:
# `geqrf`, $Q^T b$, `trsm`), both on the same device, median of several runs
# (`bench.run_case` does both sides, `course.timing_sweep` over $p$; `bench.Timer` uses
# CUDA events on a GPU).  The sizes come from `QRLAB_SIZE`: small on a CPU, 000 Table
# 10's ($m = 12000$, $n = 6000$, $k = 0$, single precision) with `QRLAB_SIZE=paper`.

# %%
# NBVAL_IGNORE_OUTPUT
m_t, n_t = qrlab.config.pick(small=(1200, 600), paper=(12000, 6000))
ps = qrlab.config.pick(small=(2, 4, 6, 8, 10), paper=(20, 40, 60, 80, 100))
reps = qrlab.config.pick(small=3, paper=5)
live = course.timing_sweep("delete_rows", "p", ps, m=m_t, n=n_t, k=0, reps=reps)
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
    print("On this machine recomputing is faster than updating for every p tried: on NumPy "
          "each of the m + p - 2 waves costs a round of Python-level work (notebook 03).")

# %% [markdown]
# ## The papers' numbers, and GPU results committed to this repository
#
# 000 Table 10: removing $p$ rows at $k = 0$ from $12000 \times n$ matrices (Tesla M2050,
# speed-up of the update over CULA `sgels`; below 1, the update was slower).  It won only
# for the fewest rows ($p = 20$) from the widest matrices:

# %%
t10 = [c for c in bench.paper_cases(full=True) if c["table"] == "T10"]
widths = sorted({c["n"] for c in t10})
print("paper speed-up (CULA / update), 000 Table 10, m=12000, k=0")
print(f"{'p':>5}" + "".join(f" {'n=' + str(n):>8}" for n in widths))
for p in sorted({c["p"] for c in t10}):
    cells = {c["n"]: c for c in t10 if c["p"] == p}
    print(f"{p:5d}" + "".join(f" {cells[n]['paper_speedup']:8.2f}" for n in widths))
assert {(c["n"], c["p"]) for c in t10 if c["paper_speedup"] > 1} == {(8000, 20), (10000, 20)}

# %% [markdown]
# GPU results of the same cells, where `benchmarks/results/` holds some, and the
# speed-ups over $p$ beside the papers' (`course.load_results`, `course.results_table`
# and `course.speedup_plot`, as in notebook 04):

# %%
# NBVAL_IGNORE_OUTPUT
gpu_rows = course.load_results("delete_rows", {"T10"})
if not gpu_rows:
    print("No GPU results for this update in benchmarks/results/ yet: on a GPU, "
          "'python -m qrlab.bench --suite paper --tables T10' writes them.")
else:
    print(course.results_table(gpu_rows, keys=("n", "p")))

# %%
# NBVAL_IGNORE_OUTPUT
fig = course.speedup_plot(live, "p", t10, gpu_rows, by="n", xlabel="p (rows removed)",
                          title=f"this machine, m={m_t}, n={n_t}, k=0",
                          paper_title="000 Table 10 sizes (m=12000, k=0)")
plt.show()

# %% [markdown]
# ## Summary
#
# * Removing rows needs $Q$: the rows of $Q$ that belong to the removed rows ($Z$) are
#   rotated to $[D\ \ 0]$, and the same rotations give $R$ a band of $p$ subdiagonals,
#   which falls away with the first $p$ rows.
# * In the papers only Givens rotations will do, $p(m - 1) - p(p-1)/2$ of them, so how they
#   are run decides the speed: one wave at a time (the papers) or in groups of waves, each
#   group's rows read and written once (qrlab, notebook 03).
# * But $R$ is zero below row $n$: qrlab reduces $Z$'s columns past $n$ by Householder
#   first, which leaves sweeps of $n + p - 1$ waves instead of $m + p - 2$ (about half at
#   the papers' $m = 12000$, $n = 6000$).
# * That Householder step is a QR of a tall, narrow block ($6000 \times 100$ there): $p$
#   dependent reflectors, each a sum over all $m - n$ rows.  cuSOLVER's `geqrf` spends a
#   few launches on each; on a GPU qrlab keeps a chunk of the rows on every SM, which
#   hands on its partial sums once per reflector (`qrlab/kernels/tall.cu`: 0.99 ms down
#   to 0.63 on an H200 in float64, `benchmarks/results/tall-panels-*.md`).
# * The sweeps need only $Z$ after that step, not its compact WY factor $T$ nor the
#   reflectors on the other rows of $Q$ and on $R$.  On a GPU those are queued after the
#   rotation kernel's launch and run beside it: each array operation queued before the
#   launch is time in which the GPU, with little else to do, waits for the host.
#   Removing 20 rows of $12000 \times 6000$ so took 0.85 of its time on an H200
#   (`benchmarks/results/panels-later-*.md`).
