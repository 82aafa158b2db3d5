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
import json
import os

# Timings on the CPU run both sides on one thread: at these sizes, waking BLAS threads
# costs more than it saves (many times more on small virtual machines) and would hide
# the algorithms behind thread start-up.  Set before NumPy loads its BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter
import numpy as np
import scipy.linalg

import qrlab
import qrlab.backend
import qrlab.config
from qrlab import bench, viz
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
# Section 3.4).  This is the one update that is Givens rotations throughout, on both $Q$
# and $R$, and the one the papers found slowest (notebook 03).
#
# ## The papers' example, stage by stage (001 Fig. 5)
#
# $m = 12$, $n = 5$, $p = 4$ rows removed from the papers' row $k = 5$ (`k=4`).  Their rows
# of $Q$ (`b`, blue: the strip $Z$) are moved to the top first, as the permutation $P$ does;
# 001 Fig. 5 draws $Z$ in place.  `-` marks what the sweeps zero (in $Z$, and below $D$ by
# orthogonality), `+` the band they fill in $R$; the result is $\tilde Q$ and $\tilde R$.

# %%
frames = trace("delete_rows", m=12, n=5, p=4, k=4)
for frame in frames:
    print(viz.text(frame))
    print()

# %% [markdown]
# The four sweeps are pipelined, two columns apart; each wave rotates disjoint column
# pairs of $Q$ (and row pairs of $R$).  Waves 1, 3 and the last of the $m + p - 2 = 14$:

# %%
waves = [f for f in trace("delete_rows", m=12, n=5, p=4, k=4, detail=True) if "wave" in f.title]
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
# frame; and at least one row must stay ($p \le m - 1$):

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
assert len(explorer.frames) == 1 + (12 + 4 - 2) + 1

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
# up to the signs of its rows.  Printed: the power of ten each error stays below
# (asserted; the values themselves vary in their last digits from one BLAS to another).

# %%
def order(x):
    """An error as its order of magnitude (the power of ten just above it)."""
    return "0" if x == 0 else f"1e{int(np.ceil(np.log10(x))):+03d}"


def signed_like(R, R_ref):
    """R with its rows' signs flipped to match R_ref's diagonal."""
    d = min(R.shape)
    sign = np.where(np.sign(np.diag(R)) == np.sign(np.diag(R_ref)), 1.0, -1.0)
    out = np.array(R, dtype=float)
    out[:d] *= sign[:, None]
    return out


def check(xp, m, n, p, k, seed):
    """Remove p rows at k from a random m x n A on array module xp; return errors."""
    rng = np.random.default_rng(seed)
    A = xp.asarray(rng.standard_normal((m, n)))
    Q, R = xp.linalg.qr(A, mode="complete")
    Q1, R1 = qrlab.qr_delete(Q, R, k, p, which="row")
    A1 = xp.concatenate([A[:k], A[k + p:]], axis=0)
    Q, R, Q1, R1, A1 = (qrlab.backend.to_numpy(a) for a in (Q, R, Q1, R1, A1))
    assert np.all(np.tril(R1, -1) == 0), "R~ is not exactly upper triangular"
    R_ref = scipy.linalg.qr(A1)[1]
    R_sp = scipy.linalg.qr_delete(Q, R, k, p, which="row")[1]
    scale = np.linalg.norm(A1)
    return {"||Q~R~ - A~|| / ||A~||": np.linalg.norm(Q1 @ R1 - A1) / scale,
            "||Q~^T Q~ - I||": np.linalg.norm(Q1.T @ Q1 - np.eye(m - p)),
            "||R~ - R(scipy qr)|| / ||A~||": np.linalg.norm(signed_like(R1, R_ref) - R_ref) / scale,
            "||R~ - R(scipy qr_delete)|| / ||A~||":
                np.linalg.norm(signed_like(R1, R_sp) - R_sp) / scale}


for shape in [(12, 5, 4, 4), (200, 120, 20, 37)]:
    errors = check(np, *shape, seed=7)
    print("m, n, p, k =", shape)
    for name, value in errors.items():
        limit = 1e-13 if "Q~^T" in name and shape[0] > 20 else 1e-14
        assert value < limit, (name, value)
        print(f"  {name:38s} < {limit:.0e}")

# %% [markdown]
# On a GPU the same check runs on CuPy arrays (with CuPy in, CuPy comes out):

# %%
# NBVAL_IGNORE_OUTPUT
xp = qrlab.default_module()
print("backend:", qrlab.backend.describe())
if xp is not np:
    for shape in [(12, 5, 4, 4), (2000, 1200, 200, 370)]:
        errors = check(xp, *shape, seed=7)
        print("m, n, p, k =", shape, {name: order(v) for name, v in errors.items()})
        assert max(errors.values()) < 1e-11
else:
    print("no GPU here: the NumPy check above is the whole check")

# %% [markdown]
# ## How much work?
#
# Sweep $s$ makes $m - 1 - s$ rotations, each on $m$ entries of $Q$ and $n$ of $R$ (6 flops
# per pair of entries), in all about (`qrlab.bench.cost`)
#
# $$6\,p\,m\,(m + n),$$
#
# independent of $k$, against $2n^2(m - p - n/3)$ for a Householder QR least-squares
# solve of the $(m-p) \times n$ matrix $\tilde A$.  At the sizes of 000 Table 10
# ($m = 12000$, $n = 6000$):

# %%
def qr_flops(m, n):
    """Householder QR of an m x n matrix (R and the reflectors): 2 n^2 (m - n/3)."""
    return 2 * n * n * (m - n / 3)


m, n = 12000, 6000
print(f"{'p':>5} {'update GFLOP':>13} {'QR solve GFLOP':>15} {'ratio':>6}")
ratios = []
for p in (20, 40, 60, 80, 100):
    upd = bench.cost("delete_rows", m, n, p, 0, 4)[0]
    full = qr_flops(m - p, n)
    ratios.append(upd / full)
    print(f"{p:5d} {upd / 1e9:13.1f} {full / 1e9:15.1f} {upd / full:6.3f}")
assert ratios == sorted(ratios) and ratios[-1] < 0.5

# %% [markdown]
# In flops the update is always cheaper here, and yet the papers measured it up to three
# times *slower* than CULA's full QR (Table 10 below): their rotations ran one wave per
# pair of kernel launches, each moving whole rows of $Q$ and $R$ through memory for at
# most $p$ rotations.  qrlab groups the waves and applies them as matrix products
# (notebook 03).
#
# ## Timing: update against recomputation, over $p$
#
# As in the papers (000 Section 5): the update of $Q$, $R$ and $d$ plus the triangular
# solve for $x$, timed against a QR least-squares solve of $\tilde A$ (`bench.gels`:
# `geqrf`, $Q^T b$, `trsm`), both on the same device, median of several runs
# (`bench.run_case` does both sides; `bench.Timer` uses CUDA events on a GPU).  The sizes
# come from `QRLAB_SIZE`: small on a CPU, 000 Table 10's ($m = 12000$, $n = 6000$,
# $k = 0$, single precision) with `QRLAB_SIZE=paper`.

# %%
# NBVAL_IGNORE_OUTPUT
xp = qrlab.default_module()
m_t, n_t = qrlab.config.pick(small=(1200, 600), paper=(12000, 6000))
ps = qrlab.config.pick(small=(2, 4, 6, 8, 10), paper=(20, 40, 60, 80, 100))
reps = qrlab.config.pick(small=3, paper=5)
print(f"{qrlab.backend.describe()}; m={m_t}, n={n_t}, k=0, float32, median of {reps}")
print(f"{'p':>5} {'update ms':>10} {'QR solve ms':>12} {'speed-up':>9} {'rel. err x':>11}")
live = []
for p in ps:
    case = dict(table="live", op="delete_rows", m=m_t, n=n_t, p=p, k=0,
                paper_cula=None, paper_update=None, paper_speedup=None)
    r = bench.run_case(xp, case, "float32", reps)
    live.append(r)
    print(f"{p:5d} {r['t_update'] * 1e3:10.2f} {r['t_gels'] * 1e3:12.2f} "
          f"{r['speedup_gels']:9.2f} {r['rel_err_x']:11.1e}")
    assert r["rel_err_x"] < 1e-3

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


# %%
def committed_results(op, tables):
    """Result rows for this update from benchmarks/results/*.json, with the GPU that
    measured each ("device" field of the file)."""
    folder = Path(qrlab.__file__).resolve().parent.parent / "benchmarks" / "results"
    rows = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        for r in data.get("results", []):
            if isinstance(r, dict) and r.get("op") == op and r.get("table") in tables:
                rows.append(dict(r, device=data.get("device", path.stem),
                                 dtype=data.get("dtype", "?"), file=path.name))
    return folder, rows


# %%
# NBVAL_IGNORE_OUTPUT
folder, gpu_rows = committed_results("delete_rows", {"T10"})
if not gpu_rows:
    print("No GPU results for this update in benchmarks/results/ yet: on a GPU, "
          "'python -m qrlab.bench --suite paper --tables T10' writes them.")
else:
    print(f"{'GPU (file)':34s} {'n':>6} {'p':>4} {'update ms':>10} {'QR solve ms':>12} "
          f"{'speed-up':>9} {'paper':>6}")
    for r in gpu_rows:
        ps_ = "-" if r.get("paper_speedup") is None else f"{r['paper_speedup']:.2f}"
        print(f"{r['device'] + ' ' + r['dtype']:34s} {r['n']:6d} {r['p']:4d} "
              f"{r['t_update'] * 1e3:10.2f} {r['t_gels'] * 1e3:12.2f} "
              f"{r['speedup_gels']:9.2f} {ps_:>6}")

# %%
# NBVAL_IGNORE_OUTPUT
fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3), dpi=70)
left.plot([r["p"] for r in live], [r["speedup_gels"] for r in live], "o-", label="qrlab")
left.set_title(f"this machine, m={m_t}, n={n_t}, k=0", fontsize=9)
for n in widths:
    cells = sorted((c for c in t10 if c["n"] == n), key=lambda c: c["p"])
    right.plot([c["p"] for c in cells], [c["paper_speedup"] for c in cells], "s--",
               label=f"paper M2050, n={n}")
for device in sorted({r["device"] for r in gpu_rows}):
    for n in widths:
        cells = sorted((r for r in gpu_rows if r["device"] == device and r["n"] == n),
                       key=lambda r: r["p"])
        if cells:
            right.plot([r["p"] for r in cells], [r["speedup_gels"] for r in cells], "o-",
                       label=f"qrlab {device}, n={n}")
right.set_title("000 Table 10 sizes (m=12000, k=0)", fontsize=9)
for ax in (left, right):
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("p (rows removed)", fontsize=8)
    ax.set_ylabel("speed-up over QR solve", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Summary
#
# * Removing rows needs $Q$: the rows of $Q$ that belong to the removed rows ($Z$) are
#   rotated to $[D\ \ 0]$, and the same rotations give $R$ a band of $p$ subdiagonals,
#   which falls away with the first $p$ rows.
# * Only Givens rotations will do, $p(m - 1) - p(p-1)/2$ of them, so how they are run
#   decides the speed: one wave at a time (the papers) or in groups applied as matrix
#   products (qrlab, notebook 03).
