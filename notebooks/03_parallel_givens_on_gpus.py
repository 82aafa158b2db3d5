# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Parallel Givens rotations on GPUs
#
# Two of the four updates need Givens rotations where Householder reflectors would fill
# in $R$: adding columns (Stage 2) and removing rows (all of it).  A rotation changes two
# rows, so rotations can run at the same time only on disjoint pairs of rows.  This
# notebook compares two ways to run them on a GPU:
#
# * **the papers' scheme** (001 Section 2, Fig. 1; 000 Fig. 5): strips of two rows, one
#   GPU thread each; every parallel step launches one kernel that computes the rotations
#   (`makeGivens`) and one that applies them (`applyGivens`): two launches per step, so
#   $O(m)$ launches for an update on $m$ rows;
# * **qrlab's fused scheme** (`qrlab/gpu.py`): all rotations computed on the few *driver
#   lines* in one launch; all of them applied to $R$ and $Q$ in one more, group of steps by
#   group of steps, each group's rows read and written once: two launches, whatever $m$.
#
# The counts are exact and checked below; a live timing of both ways closes the notebook.

# %%
import math
import os

# On the CPU, time both sides on one thread (see notebook 04): thread start-up would blur
# the per-step overhead this notebook is about.  Set before NumPy loads its BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import matplotlib.pyplot as plt
import numpy as np

import qrlab
import qrlab.backend
import qrlab.config
from qrlab import bench, stages, viz
from qrlab.executor import Executor
from qrlab.gpu import apply_waves, wave_rows

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Which rotations can run at once
#
# Givens QR of an $m \times n$ matrix zeroes every entry below the diagonal with a
# rotation of rows $(i-1, i)$.  Three orders, as grids of the step at which each entry is
# zeroed (`viz.schedule_grid`):
#
# * **column**: column by column, bottom-up (003 eq. 6): one rotation per step;
# * **wavefront**: column $j$ starts two steps after column $j-1$ (003 eq. 7): every step
#   rotates disjoint row pairs, so a step is one parallel *wave*;
# * **strips**: the papers' GPU scheme; a thread owns a strip of two rows (`p1` at the
#   bottom) and spends two steps per column, so its steps are the wavefront's.

# %%
m, n = 8, 5
for kind in ("column", "wavefront", "strips"):
    print(viz.schedule_grid(kind, m, n))
    print()

steps = {kind: viz.schedule_steps(kind, m, n) for kind in ("column", "wavefront", "strips")}
assert steps["column"] == sum(m - 1 - j for j in range(n))          # 25 rotations, one by one
assert steps["wavefront"] == steps["strips"] == m + n - 2           # 11 parallel steps

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(1, 3, figsize=(9, 3.6), dpi=70)
for ax, kind in zip(axes, ("column", "wavefront", "strips")):
    viz.schedule_figure(kind, m, n, ax=ax)
fig.tight_layout()
plt.show()

# %% [markdown]
# A full QR has $m + n - 2$ waves.  The updates run *sweeps* instead: sweep $s$ zeroes one
# line (a column of $R$, or a row of $Q$) bottom-up, two steps behind sweep $s - 1$.
# Removing $p$ rows (notebook 07) zeroes the $p$ rows of $Q$ that belong to them, the strip
# $Z$, from right to left; each rotation of columns $(i-1, i)$ of $Q$ also rotates rows
# $(i-1, i)$ of $R$.  The wave at which each entry of $Z$ is zeroed, for $m = 10$, $p = 3$,
# read off the plan that qrlab's executors run with `method='paper'`.  (By default qrlab
# first reduces $Z$'s columns past $n$ by reflectors, which fill nothing because $R$ is zero
# on those rows, and sweeps only the first $n + p$ columns: notebook 07.  This notebook
# counts the papers' plan, all $m$ columns, to compare the ways of running the waves.)

# %%
def sweeps_of(plan):
    """The Givens sweeps of an update plan (one operation)."""
    ops = [op for op in plan.ops() if isinstance(op, stages.Sweeps)]
    assert len(ops) == 1
    return ops[0]


m, p = 10, 3
op = sweeps_of(stages.plan_delete_rows(m, 4, p, householder=False))
grid = np.zeros((p, m), dtype=int)
for t, wave in enumerate(op.waves(), start=1):
    for s, i in wave:
        grid[s, i] = t
print("Z (rows of Q to remove); entry = wave that zeroes it, x = kept (the diagonal D)")
for row in grid:
    print(" ".join(f"{v:2d}" if v else " x" for v in row))
print(f"{len(op.waves())} waves, {op.count} rotations, at most "
      f"{max(len(w) for w in op.waves())} at once")
assert len(op.waves()) == m + p - 2

# %% [markdown]
# ## Counting kernel launches
#
# For an update whose Givens part has $W$ waves:
#
# * **the papers' scheme**: two launches per wave (`makeGivens`, `applyGivens`): $2W$;
# * **qrlab's fused scheme**: one launch computes all rotations on the driver lines (one thread
#   block per strip of 32 lines, all at once, each a few waves behind the one before; one launch per
#   256 sweeps, or, where the rotations bound the update, passes of 32 sweeps pipelined in a single
#   launch, since a block holding fewer sweeps makes shorter waves), and one more applies them to
#   $R$ and $Q$: its thread blocks take the waves in
#   groups of $w_b$ (`qrlab.gpu.apply_waves`, 256 unless shared memory asks for fewer) and tiles of
#   32 rows of $Q$ or 32 columns of $R$, each tile taking a group as soon as the group's waves are
#   out, beside the rotation kernel on the SMs it leaves free.  So at most
#   $\lceil p / 256 \rceil + 1$ kernels compute, whatever $m$.  (A small kernel waits until the rotation kernel has started,
#   and a fixed handful of small set-ups comes on top.)  The reference executor instead multiplies
#   each group of $\max(32, 2p)$ waves into an orthogonal matrix $G_g$ and applies it by two
#   matrix products, $R \leftarrow G_g R$ and $Q \leftarrow Q G_g^T$: the fewest flops of that
#   approach, and on NumPy far fewer Python-level steps than wave by wave.
#
# Removing $p$ rows of an $m \times n$ factorization has $W = m + p - 2$ waves (above).
# The number of waves below comes from two places that must agree: the reference
# executor's schedule (`Sweeps.waves`) and the GPU executor's host-side schedule
# (`qrlab.gpu.wave_rows`), which it computes without asking the device.

# %%
def launches(op, p):
    """(waves, papers' launches, groups, qrlab launches) for one Sweeps operation.

    ``wave_rows`` numbers the time steps from 0 and marks the steps without rotations
    (adding columns starts with p - 1 of them) by ``hi = -1``; the GPU executor groups the
    steps (a group without rotations costs its tiles nothing)."""
    _, steps, lo, hi = wave_rows(op)
    busy = hi >= 0
    waves = int(busy.sum())
    nbw = apply_waves(p, 4)
    groups = sum(bool(busy[t:t + nbw].any()) for t in range(0, steps, nbw))
    return waves, 2 * waves, groups, math.ceil(p / 256) + 1


print(f"{'m':>6} {'p':>4} {'waves':>6} {'papers':>7} {'groups':>7} {'qrlab':>6} {'ratio':>6}")
for p in (20, 100):
    for m in (1000, 2000, 4000, 8000, 12000, 16000):
        op = sweeps_of(stages.plan_delete_rows(m, 6000, p, householder=False))
        waves, paper_l, groups, ours = launches(op, p)
        assert waves == m + p - 2
        assert paper_l == 2 * waves and ours == 2
        assert groups == math.ceil(waves / apply_waves(p, 4))
        print(f"{m:6d} {p:4d} {waves:6d} {paper_l:7d} {groups:7d} {ours:6d} "
              f"{paper_l / ours:6.0f}")
small = sweeps_of(stages.plan_delete_rows(200, 6, 4, householder=False))
assert launches(small, 4)[0] == len(small.waves()) == 200 + 4 - 2
fig2 = sweeps_of(stages.plan_insert_cols(10, 5, 2, 3))     # adding columns, 001 Fig. 2
assert launches(fig2, 3)[0] == len(fig2.waves()) == 5 + 3 - 2 - 1

# %% [markdown]
# The counts are the executor's, not just a formula: a reference executor that counts what
# it does, run on a real removal of $p = 4$ rows from a $200 \times 6$ factorization, computes
# one wave at a time and applies one $G_g$ per group (two products each); with
# `method='paper'` it applies every wave separately, as the papers' kernels do.

# %%
class CountingExecutor(Executor):
    """The reference executor, counting waves computed and products applied."""

    def __init__(self, method):
        super().__init__(method)
        self.waves = self.products = 0

    def _compute_wave(self, xp, D, wave):
        self.waves += 1
        return Executor._compute_wave(xp, D, wave)

    def _apply_blocked(self, xp, waves, Rc, Qc, p):
        nbw = self.wave_block or max(32, 2 * p)
        for b0 in range(0, len(waves), nbw):        # one group per call: one G, two products
            self.products += (Rc is not None) + (Qc is not None)
            super()._apply_blocked(xp, waves[b0:b0 + nbw], Rc, Qc, p)


rng = np.random.default_rng(3)
m, n, p, k = 200, 6, 4, 50
A = rng.standard_normal((m, n))
Q, R = np.linalg.qr(A, mode="complete")
order = list(range(k, k + p)) + list(range(k)) + list(range(k + p, m))   # Z to the top
results = {}
for method in ("paper", "blocked"):
    ex = CountingExecutor(method)
    Q_w, R_w = Q[order], R.copy()
    ex.run(stages.plan_delete_rows(m, n, p, householder=False), Q_w, R_w)
    Q1, R1 = Q_w[p:, p:], R_w[p:]
    assert np.allclose(Q1 @ R1, np.delete(A, range(k, k + p), axis=0))
    results[method] = R1
    print(f"method={method!r}: {ex.waves} waves computed, {ex.products} blocked products")
    assert ex.waves == m + p - 2
assert ex.products == 2 * math.ceil((m + p - 2) / max(32, 2 * p))   # its groups: 2p waves
waves, paper_l, groups, ours = launches(small, p)
print(f"GPU launches for this case: papers' scheme {paper_l}, qrlab {ours} "
      f"(one of them in {groups} group(s) of {apply_waves(p, 4)} waves)")
assert np.allclose(results["paper"], results["blocked"])

# %% [markdown]
# ## What the launches alone cost
#
# A kernel launch costs about **4.6 µs** on the H100 this kit is measured on, and about
# **0.9 µs** when the launches are captured in a CUDA graph.  The launches alone of the
# papers' scheme, at the sizes of their slowest tables (000 Table 10: removing $p$ rows,
# $m = 12000$; 000 Table 2: adding $p = 200$ columns at $k$, $m = 4000$, $n = 3000$),
# against the times they measured on a Tesla M2050:

# %%
LAUNCH, GRAPH = 4.6e-6, 0.9e-6          # seconds per launch on the H100: plain, CUDA graph


def update_sweeps(case):
    if case["op"] == "delete_rows":
        return sweeps_of(stages.plan_delete_rows(case["m"], case["n"], case["p"],
                                                  householder=False))
    return sweeps_of(stages.plan_insert_cols(case["m"], case["n"], case["k"], case["p"]))


cases = [c for c in bench.paper_cases(full=True)
         if (c["table"] == "T10" and c["n"] == 6000)
         or (c["table"] == "T2" and c["m"] == 4000 and c["k"] < c["n"])]
print(f"{'table':5} {'update':11} {'m':>6} {'n':>5} {'p':>4} {'k':>5} {'launches':>9} "
      f"{'4.6 us':>8} {'graph':>7} {'paper s':>8} {'share':>6} {'qrlab':>6}")
shares = []
for c in cases:
    op = update_sweeps(c)
    waves, paper_l, groups, ours = launches(op, c["p"])
    share = paper_l * LAUNCH / c["paper_update"]
    shares.append(share)
    print(f"{c['table']:5} {c['op']:11} {c['m']:6d} {c['n']:5d} {c['p']:4d} {c['k']:5d} "
          f"{paper_l:9d} {paper_l * LAUNCH * 1e3:6.1f}ms {paper_l * GRAPH * 1e3:5.1f}ms "
          f"{c['paper_update']:8.3f} {share:6.1%} {ours:6d}")
assert max(shares) < 0.1       # launches alone: under a tenth of what the papers measured
t10 = [c for c in cases if c["table"] == "T10"]
assert [c["paper_update"] for c in t10] == sorted(c["paper_update"] for c in t10)

# %% [markdown]
# On an H100 the launches alone would take tens of milliseconds, a few percent of the
# seconds the papers measured, and a CUDA graph would cut them five-fold.  The papers' own
# Table 10 says the same: from $p = 20$ to $p = 100$ the number of launches hardly changes
# (it is $2(m + p - 2)$), yet their time triples.  What grows with $p$ is the work of each
# wave: a wave holds up to $p$ rotations (one per sweep), each streaming two rows of $R$
# and two columns of $Q$ through memory, and each of the papers' threads owns a whole pair
# of rows.  The data moved, rotations counted one by one, against qrlab's groups, which
# read and write each window of rows once:

# %%
def traffic(op, m_q, n_r, p, itemsize=4):
    """Bytes read + written: one wave at a time, and group by group (windows from the
    GPU executor's schedule)."""
    _, waves, lo, hi = wave_rows(op)
    per_wave = op.count * 4 * (m_q + n_r) * itemsize
    nbw = apply_waves(p, itemsize)
    windows = [hi[t:t + nbw].max() - lo[t:t + nbw].min() for t in range(0, waves, nbw)]
    grouped = sum(2 * int(w) * (m_q + n_r) * itemsize for w in windows)
    return per_wave, grouped


M2050, H100 = 148e9, 3.35e12            # bytes/s: peak memory bandwidth of each GPU
print(f"{'m':>6} {'p':>4} {'per wave GB':>12} {'grouped GB':>11} {'ratio':>6} "
      f"{'per wave at M2050 peak':>23} {'paper s':>8}")
for c in t10:
    op = update_sweeps(c)
    a, b = traffic(op, c["m"], c["n"], c["p"])
    print(f"{c['m']:6d} {c['p']:4d} {a / 1e9:12.0f} {b / 1e9:11.1f} {a / b:6.1f} "
          f"{a / M2050:21.2f} s {c['paper_update']:8.3f}")
    assert a / b > c["p"] / 2

# %% [markdown]
# At the M2050's peak bandwidth the traffic of one wave at a time alone takes a sixth to a
# quarter of the measured time, and grows with $p$ as the measured time does (the rest:
# strided access to $Q$, and waves too small to fill the GPU).  On an H100 (3.35 TB/s) the
# same traffic would still take 20-100 ms, as long as the launches.  Grouping cuts the
# traffic by $p$ or more: each window of $w_b + 2p$ rows is read into shared memory and
# written back once for $w_b$ waves of up to $p$ rotations.  In between, each thread owns
# one row of $Q$ (or column of $R$) and applies the group's rotations sweep by sweep,
# holding the few rows that a handful of sweeps are working on in registers, so a rotation
# costs its four multiplications and little else.  (Forming each group's $G_g$ and applying
# it by matrix products, the reference executor's way, moves as little data but costs two to
# three times the flops: on the H100 that way took 1.1 to 1.6 times as long per update.)
#
# ## Live: one wave at a time against grouped waves
#
# `qr_delete(..., method='paper')` runs the papers' algorithm and applies each wave as it
# is computed, as their kernels do; `method='blocked'` (the default) groups the waves, and
# before them reduces the columns of $Z$ past $n$ by reflectors (notebook 07), so its sweeps
# have $n + p - 1$ waves instead of $m + p - 2$: half as many here, where $n = m/2$.  On NumPy the difference shows up as Python-level overhead per wave; on CuPy
# `method='paper'` issues tens of small launches and a few host-to-device copies per wave
# (more than the papers' two launches, so it is a pessimistic stand-in for their kernels)
# while `method='blocked'` runs the fused kernels.  Timings are machine dependent; the
# sizes come from `QRLAB_SIZE`.

# %%
# NBVAL_IGNORE_OUTPUT
xp = qrlab.default_module()
ms = qrlab.config.pick(small=(200, 400, 800, 1600), paper=(1000, 2000, 4000))
p = qrlab.config.pick(small=8, paper=20)
reps = 3
timer = bench.Timer(xp)
rng = np.random.default_rng(5)
print(f"{qrlab.backend.describe()}; removing p={p} rows at k=0, n = m/2, float32, "
      f"median of {reps}")
print(f"{'m':>6} {'paper ms':>9} {'blocked ms':>11} {'ratio':>6}")
live = []
for m in ms:
    A = xp.asarray(rng.uniform(-1, 1, (m, m // 2)), dtype=np.float32)
    Q, R = xp.linalg.qr(A, mode="complete")
    t = {method: timer(lambda: qrlab.qr_delete(Q, R, 0, p, which="row", method=method,
                                               check_finite=False), lambda: (), reps)[0]
         for method in ("paper", "blocked")}
    live.append((m, t["paper"], t["blocked"]))
    print(f"{m:6d} {t['paper'] * 1e3:9.1f} {t['blocked'] * 1e3:11.1f} "
          f"{t['paper'] / t['blocked']:6.1f}")

# %%
# NBVAL_IGNORE_OUTPUT
ratio = live[-1][1] / live[-1][2]
print(f"At m={live[-1][0]} grouping the waves is {ratio:.1f}x "
      f"{'faster' if ratio > 1 else 'slower'} than applying them one at a time here.")
fig, ax = plt.subplots(figsize=(4.5, 3), dpi=70)
ax.loglog([r[0] for r in live], [r[1] * 1e3 for r in live], "s--", label="one wave at a time")
ax.loglog([r[0] for r in live], [r[2] * 1e3 for r in live], "o-", label="grouped (blocked)")
ax.set_xlabel("m (rows of Q)", fontsize=8)
ax.set_ylabel("ms", fontsize=8)
ax.set_title(f"removing p={p} rows: {'CuPy' if xp is not np else 'NumPy'}", fontsize=9)
ax.tick_params(labelsize=7)
ax.legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Summary
#
# * Rotations run in parallel only on disjoint row pairs: waves of the wavefront (003
#   eq. 7) or the papers' strips (001 Fig. 1), $m + n - 2$ of them for a full QR,
#   $m + p - 2$ for removing $p$ rows.
# * The papers launch two kernels per wave: $O(m)$ launches, each doing at most $p$
#   rotations.  qrlab computes the rotations in one launch and applies them, group of
#   waves by group of waves, in one more: $\lceil p / 256 \rceil + 1$ launches.
# * The launches alone are a small part of the papers' times; the larger part is moving
#   $Q$ and $R$ through memory once per wave, which grouping cuts by a factor of $p$ or
#   more.
