# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Adding columns
#
# A least-squares model gains $p$ new variables: $p$ columns $U$ enter $A$ before column
# $k$.  This notebook follows 001 Section 3.1 (000 Section 2.3.1): the algebra, the
# papers' example of Fig. 2 stage by stage, a check against recomputation, the operation
# count, and a timing sweep over $k$ like 000 Tables 2 and 3.
#
# Indices are 0-based as in SciPy: qrlab's `k=2` is the papers' $k = 3$.  $A$ is
# $m \times n$ ($m$ rows, $n$ columns), as in 001; 000 swaps the letters.

# %%
import os

# Timings on the CPU run both sides on one thread: at these sizes, waking BLAS threads
# costs more than it saves (many times more on small virtual machines) and would hide
# the algorithms behind thread start-up.  Set before NumPy loads its BLAS.
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
# With $A = QR$ ($Q$ is $m \times m$, $R$ is $m \times n$ upper trapezoidal), adding the
# $m \times p$ block $U$ before column $k$ gives
#
# $$\tilde A = \begin{bmatrix} A_{:,\,0:k} & U & A_{:,\,k:n} \end{bmatrix},
# \qquad
# Q^T \tilde A = \begin{bmatrix} R_{:,\,0:k} & Q^T U & R_{:,\,k:n} \end{bmatrix}.$$
#
# The first $k$ columns are already upper triangular, so $\tilde R_{:,0:k} = R_{:,0:k}$:
# only an orthogonal $X$ of order $m - k$ with
# $\operatorname{diag}(I_k, X)\, Q^T \tilde A = \tilde R$ is needed.  It is built in two
# stages, both acting on rows of $W = Q^T U$ and of the shifted columns $R_{:,k:n}$:
#
# * **Stage 1, Householder.**  Rows $n{:}m$ of $W$ lie where $R_{:,k:n}$ is zero, so a
#   Householder QR of that $(m-n) \times p$ block, $H^T W_{n:m,:} = \binom{T}{0}$, touches
#   nothing else: no fill-in.  Column $s$ of $W$ is then nonzero down to row $n + s$.
# * **Stage 2, Givens.**  Sweep $s$ zeroes column $s$ of $W$ from row $n+s$ up to row
#   $k+s+1$ with rotations of adjacent rows $(i-1, i)$.  Each rotation mixes two rows of
#   the shifted columns $R_{:,k:n}$ and fills one entry below their old diagonal; after
#   $p$ sweeps they carry $p$ subdiagonals, which is exactly the shift by $p$ that leaves
#   them upper triangular in $\tilde R$.  A Householder reflector here would mix all rows
#   $k{:}n+s$ at once and fill the whole block (001: "would make $\tilde R$ full").
#
# The same transformations update the other factors:
# $\tilde Q = Q\, \operatorname{diag}(I_n, H)\, G_1^T G_2^T \cdots$ and
# $\tilde d = \cdots G_2 G_1 \operatorname{diag}(I_n, H^T)\, d$ with $d = Q^T b$, so the new
# least-squares solution is one triangular solve away.
#
# ## The papers' example, stage by stage (001 Fig. 2)
#
# $m = 10$, $n = 5$, $p = 3$ columns before the papers' column $k = 3$ (`k=2`).  `trace`
# runs qrlab's own plan for this update on zero/nonzero masks.  Symbols as in the papers:
# `*` nonzero, `0` zero, `-` a nonzero the stage makes zero, `+` a zero it makes nonzero
# (fill-in); `[ ]` encloses the active region (red in the papers), `b` marks the new
# columns (blue).  Each frame shows the matrix *before* its stage, marked with what the
# stage does; `setup` shows the whole update at once (it is 000 Fig. 1 exactly).

# %%
frames = trace("insert_cols", m=10, n=5, p=3, k=2)
for frame in frames:
    print(viz.text(frame))
    print()

# %% [markdown]
# Stage 2 runs its three sweeps *pipelined*: sweep $s$ starts two rows behind sweep
# $s-1$, so each time step (a *wave*) rotates disjoint pairs of rows, and the waves are
# what a GPU runs in parallel (notebook 03).  The first two waves of Stage 2:

# %%
waves = [f for f in trace("insert_cols", m=10, n=5, p=3, k=2, detail=True) if "wave" in f.title]
print(len(waves), "waves in Stage 2")
assert len(waves) == 5
for frame in waves[:2]:
    print(viz.text(frame))
    print()

# %% [markdown]
# The same stages as an animation (a static fallback that plays on GitHub and nbviewer):

# %%
# NBVAL_IGNORE_OUTPUT
viz.animate(frames)

# %% [markdown]
# ## Explore: any $m$, $n$, $p$, $k$
#
# Move the sliders to change the shape and the stage; tick "every wave / panel" to step
# through single Givens waves.  (The sliders need a live kernel; the animation above is the
# static version.)

# %%
explorer = viz.explorer("insert_cols", m=10, n=5, p=3, k=2)

# %%
# NBVAL_IGNORE_OUTPUT
explorer

# %% [markdown]
# The explorer's state is open to Python, so the same sliders can be set from code.
# Adding the columns at the end (`k = n`) needs no Givens stage at all, and with
# $m = n$ (a square $A$) nothing lies below $R$, so Stage 1 disappears instead:

# %%
w = explorer.widgets
w["stage"].value = 2
print(explorer.params, "->", explorer.frame.title)
assert explorer.frame.title.startswith("Stage 2")

w["k"].value = 5                                   # append: k = n
print(explorer.params, "->", [f.title for f in explorer.frames])
assert not any("Givens" in f.title for f in explorer.frames)

w["k"].value, w["m"].value = 0, 5                  # square A, columns in front
print(explorer.params, "->", [f.title for f in explorer.frames])
assert not any("Householder" in f.title for f in explorer.frames)

w["m"].value, w["k"].value = 10, 2                 # back to Fig. 2, every wave
w["detail"].value = True
print(explorer.params, "->", len(explorer.frames), "frames with detail")
assert len(explorer.frames) == 1 + 2 + 5 + 1       # setup, Stage 1 (panel, rest), 5 waves, result
w["detail"].value = False
w["stage"].value = 0

# %% [markdown]
# ## The update agrees with recomputation
#
# On random matrices (float64, NumPy): $\tilde Q \tilde R = \tilde A$, $\tilde Q$ is
# orthogonal, $\tilde R$ is upper triangular with *exact* zeros below the diagonal, and
# $\tilde R$ is the R of `scipy.linalg.qr` of $\tilde A$ (and of SciPy's own `qr_insert`)
# up to the signs of its rows.  `course.check_update` (defined in `qrlab/course.py`, and
# shared by the four update notebooks) adds $p$ random columns to a random $A$, raises if
# $\tilde R$ has anything but zeros below its diagonal, and returns these errors.
# `course.check_on_numpy` runs it on a few shapes and prints the power of ten each error
# stays below (asserted; the values themselves vary in their last digits from one BLAS to
# another).

# %%
checked = course.check_on_numpy("insert_cols", [(10, 5, 3, 2), (200, 120, 20, 37)], seed=4)

# %% [markdown]
# On a GPU the same check runs on CuPy arrays (with CuPy in, CuPy comes out;
# `course.check_on_gpu` says which backend it found):

# %%
# NBVAL_IGNORE_OUTPUT
on_gpu = course.check_on_gpu("insert_cols", [(10, 5, 3, 2), (2000, 1200, 200, 370)], seed=4)
for shape, errors in on_gpu.items():
    assert max(errors.values()) < 1e-11, (shape, errors)

# %% [markdown]
# ## How much work?
#
# `qrlab.bench.cost` counts the update's floating-point operations (for $Q$, $R$ and $d$):
#
# $$\underbrace{2m^2p}_{Q^T U}
# + \underbrace{4m(m-n)p}_{\text{Stage 1 on } Q}
# + \underbrace{6\,p(n-k)\,(m + n + p - k)}_{\text{Stage 2: } p(n-k)
#   \text{ rotations on } Q \text{ and } R},$$
#
# against $2\tilde n^2(m - \tilde n/3)$ for the papers' baseline, a Householder QR
# least-squares solve of $\tilde A$ ($\tilde n = n + p$; forming the new $Q$ as well would
# add about $4m^2\tilde n$ more; `course.qr_flops` counts both).  The rotations dominate
# when $k$ is small, and vanish at $k = n$.  At the sizes of 000 Table 2 ($m = 4000$,
# $n = 3000$, $p = 200$), `course.flop_sweep` prints both counts over $k$ (it and the
# other `course` functions below are in `qrlab/course.py`):

# %%
m, n, p = 4000, 3000, 200
ratios = course.flop_sweep("insert_cols", "k", range(0, n + 1, 500), m=m, n=n, p=p)
assert ratios == sorted(ratios, reverse=True)       # the later the columns, the cheaper
assert ratios[-1] < 0.2 < ratios[0]

# %% [markdown]
# ## Timing: update against recomputation, over $k$
#
# As in the papers (000 Section 5): the update of $Q$, $R$ and $d$ plus the triangular
# solve for $x$ is timed against a QR least-squares solve of $\tilde A$ (`bench.gels`:
# `geqrf`, $Q^T b$, `trsm`), both on the same device, median of several runs on fresh
# random blocks (`bench.run_case` does both sides; `bench.Timer` uses CUDA events on a
# GPU; `course.timing_sweep` runs it over one parameter and prints the table).  The sizes
# come from `QRLAB_SIZE`: small on a CPU, 000 Table 2's ($m = 4000$, $n = 3000$,
# $p = 200$, single precision) with `QRLAB_SIZE=paper`.

# %%
# NBVAL_IGNORE_OUTPUT
m_t, n_t, p_t = qrlab.config.pick(small=(400, 300, 20), paper=(4000, 3000, 200))
reps = qrlab.config.pick(small=3, paper=5)
ks = list(range(0, n_t + 1, n_t // 6))
live = course.timing_sweep("insert_cols", "k", ks, m=m_t, n=n_t, p=p_t, reps=reps)
for r in live:
    assert r["rel_err_x"] < 1e-3, r

# %%
# NBVAL_IGNORE_OUTPUT
faster = [r["k"] for r in live if r["speedup_gels"] > 1]
if len(faster) == len(live):
    print("On this machine updating is faster than recomputing for every k tried.")
elif faster:
    print(f"On this machine updating is faster than recomputing for k >= {min(faster)} "
          f"(of n = {n_t}), slower for smaller k: the Givens stage grows with n - k.")
else:
    print("On this machine recomputing is faster than updating for every k tried.")

# %% [markdown]
# ## The papers' numbers, and GPU results committed to this repository
#
# 000 Table 2 (Tesla M2050, CULA `sgels` against the update, seconds; in qrlab's
# $m$ rows and $n = 3000$ columns, $p = 200$), as `bench.paper_cases()` holds them.  The
# update wins only for $k$ near $n$: there the Givens stage, which the papers ran as
# $O(n - k)$ pairs of kernel launches, is short.

# %%
paper = [c for c in bench.paper_cases(full=True) if c["table"] == "T2"]
sizes = sorted({c["m"] for c in paper})
print("paper speed-up (CULA / update), 000 Table 2, n=3000, p=200")
print(f"{'k':>5}" + "".join(f" {'m=' + str(m):>9}" for m in sizes))
for k in sorted({c["k"] for c in paper}):
    cells = {c["m"]: c for c in paper if c["k"] == k}
    print(f"{k:5d}" + "".join(f" {cells[m]['paper_speedup']:9.2f}" for m in sizes))
assert max(c["paper_speedup"] for c in paper) > 2 and min(c["paper_speedup"] for c in paper) < 0.2

# %% [markdown]
# GPU results of the same cells, where `benchmarks/results/` holds some
# (`course.load_results` reads them, `course.results_table` lays them out), and all of it
# as speed-ups over the QR solve, this machine's sweep on the left (`course.speedup_plot`):

# %%
# NBVAL_IGNORE_OUTPUT
gpu_rows = course.load_results("insert_cols", {"T2"})
if not gpu_rows:
    print("No GPU results for this update in benchmarks/results/ yet: on a GPU, "
          "'python -m qrlab.bench --suite paper-full --tables T2' writes them.")
else:
    print(course.results_table(gpu_rows, keys=("m", "k")))

# %%
# NBVAL_IGNORE_OUTPUT
fig = course.speedup_plot(live, "k", paper, gpu_rows, by="m",
                          xlabel="k (columns added before column k)",
                          title=f"this machine, m={m_t}, n={n_t}, p={p_t}",
                          paper_title="000 Table 2 sizes (n=3000, p=200)")
plt.show()

# %% [markdown]
# ## Summary
#
# * Adding columns needs $Q$: the new columns enter as $Q^T U$.
# * Stage 1 (Householder) handles the part of $Q^T U$ below $R$; Stage 2 (Givens) the
#   part beside $R$, where a reflector would fill the shifted columns.
# * Stage 1 is a QR of a tall, narrow block ($9000 \times 200$ adding 200 columns to
#   $12000 \times 3000$): $p$ dependent reflectors, each a sum over all $m - n$ rows.
#   cuSOLVER's `geqrf` spends a few launches on each; on a GPU qrlab keeps a chunk of the
#   rows on every SM, which hands on its partial sums once per reflector
#   (`qrlab/kernels/tall.cu`: 2.3 ms down to 1.3 on an H200 in float64,
#   `benchmarks/results/tall-panels-*.md`), and the sweeps of Stage 2 start that much
#   sooner.
# * Unless those shifted columns are few: for $p \ge 4 (n - k)$ qrlab's plan lets Stage
#   1's reflectors fill them and then reduces them by Householder too
#   (`stages.plan_insert_cols`): a few more flops on $Q$, and no chain of $2p + n - k$
#   dependent waves of rotations (000 Table 5's cells, $n - k = 20$).
# * The work of Stage 2 grows with $n - k$: updating pays off when the columns go near
#   the end.  The papers lost most of their time in Stage 2's many small kernels
#   (001 Table 2: 11.0 s of Givens rotations against 1.4 s of Householder at
#   $k = 500$); notebook 03 shows how qrlab fuses them.
