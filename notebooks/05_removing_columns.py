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
# panel split into its reduction and its update of the columns to the right.  The explorer
# uses qrlab's default panel width, $n_b = \max(16, p)$ (at most 128), so small examples
# need a single block where Fig. 3 used two.  (The sliders need a live kernel; the
# animation above is the static version.)

# %%
explorer = viz.explorer("delete_cols", m=10, n=8, p=3, k=2)

# %%
# NBVAL_IGNORE_OUTPUT
explorer

# %% [markdown]
# Driving the sliders from Python: removing the last $p$ columns needs no work at all
# (001: "the update is complete"), the slider ranges follow the operation ($k \le n - p$),
# and with more columns than one panel holds the update takes several blocks:

# %%
w = explorer.widgets
w["stage"].value = 1
print(explorer.params, "->", explorer.frame.title)
assert explorer.frame.title.startswith("Remove columns: block 1")

w["k"].value = 5                                   # the last p columns: k = n - p
print(explorer.params, "->", [f.title for f in explorer.frames])
assert [f.step for f in explorer.frames] == ["setup", "result"]

w["k"].value = 7                                   # clamped by the slider: k <= n - p
print("k slider max:", w["k"].max, "value:", w["k"].value)
assert w["k"].max == 5 and w["k"].value == 5

w["m"].value, w["n"].value, w["k"].value, w["p"].value = 40, 40, 0, 1
print(explorer.params, "->", [f.title for f in explorer.frames][1:-1])
assert sum(f.step == "stage" for f in explorer.frames) == 3     # 39 columns, panels of 16

w["m"].value, w["n"].value, w["p"].value, w["k"].value = 10, 8, 3, 2
w["stage"].value = 0
print("back to", explorer.params)

# %% [markdown]
# ## The update agrees with recomputation
#
# On random matrices (float64, NumPy): $\tilde Q \tilde R = \tilde A$, $\tilde Q$ is
# orthogonal, $\tilde R$ is upper triangular with *exact* zeros below the diagonal, and
# $\tilde R$ is the R of `scipy.linalg.qr` of $\tilde A$ (and of SciPy's own `qr_delete`)
# up to the signs of its rows.  The R-only update (`Q=None`) gives the same $\tilde R$.
# Printed: the power of ten each error stays below (asserted; the values themselves vary
# in their last digits from one BLAS to another).

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
    """Remove p columns at k from a random m x n A on array module xp; return errors."""
    rng = np.random.default_rng(seed)
    A = xp.asarray(rng.standard_normal((m, n)))
    Q, R = xp.linalg.qr(A, mode="complete")
    Q1, R1 = qrlab.qr_delete(Q, R, k, p, which="col")
    R1_only = qrlab.qr_delete(None, R, k, p, which="col")
    A1 = xp.concatenate([A[:, :k], A[:, k + p:]], axis=1)
    Q, R, Q1, R1, R1_only, A1 = (qrlab.backend.to_numpy(a)
                                 for a in (Q, R, Q1, R1, R1_only, A1))
    assert np.all(np.tril(R1, -1) == 0), "R~ is not exactly upper triangular"
    R_ref = scipy.linalg.qr(A1)[1]
    R_sp = scipy.linalg.qr_delete(Q, R, k, p, which="col")[1]
    scale = np.linalg.norm(A1)
    return {"||Q~R~ - A~|| / ||A~||": np.linalg.norm(Q1 @ R1 - A1) / scale,
            "||Q~^T Q~ - I||": np.linalg.norm(Q1.T @ Q1 - np.eye(m)),
            "||R~ - R(scipy qr)|| / ||A~||": np.linalg.norm(signed_like(R1, R_ref) - R_ref) / scale,
            "||R~ - R(scipy qr_delete)|| / ||A~||":
                np.linalg.norm(signed_like(R1, R_sp) - R_sp) / scale,
            "||R~(Q=None) - R~|| / ||A~||": np.linalg.norm(R1_only - R1) / scale}


for shape in [(10, 8, 3, 2), (200, 120, 20, 37)]:
    errors = check(np, *shape, seed=5)
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
    for shape in [(10, 8, 3, 2), (2000, 1200, 200, 370)]:
        errors = check(xp, *shape, seed=5)
        print("m, n, p, k =", shape, {name: order(v) for name, v in errors.items()})
        assert max(errors.values()) < 1e-11
else:
    print("no GPU here: the NumPy check above is the whole check")

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
# 000 Table 7 ($m = 6000$, $n = 3000$, $k = 0$):

# %%
def qr_flops(m, n):
    """Householder QR of an m x n matrix (R and the reflectors): 2 n^2 (m - n/3)."""
    return 2 * n * n * (m - n / 3)


m, n, k = 6000, 3000, 0
print(f"{'p':>5} {'update GFLOP':>13} {'QR solve GFLOP':>15} {'ratio':>6}")
ratios = []
for p in (100, 200, 500, 1000, 2000):
    upd = bench.cost("delete_cols", m, n, p, k, 4)[0]
    full = qr_flops(m, n - p)
    ratios.append(upd / full)
    print(f"{p:5d} {upd / 1e9:13.1f} {full / 1e9:15.1f} {upd / full:6.2f}")
assert all(r < 0.5 for r in ratios)               # always well under recomputation
assert bench.cost("delete_cols", 60000, n, 500, k, 4) == bench.cost("delete_cols", m, n, 500, k, 4)

# %% [markdown]
# ## Timing: update against recomputation, over $p$
#
# As in the papers (000 Section 5): the R-only update of $R$ and $d$ plus the triangular
# solve for $x$, timed against a QR least-squares solve of $\tilde A$ (`bench.gels`:
# `geqrf`, $Q^T b$, `trsm`), both on the same device, median of several runs
# (`bench.run_case` does both sides; `bench.Timer` uses CUDA events on a GPU).  The sizes
# come from `QRLAB_SIZE`: small on a CPU, 000 Table 7's ($m = 6000$, $n = 3000$, $k = 0$,
# single precision) with `QRLAB_SIZE=paper`.

# %%
# NBVAL_IGNORE_OUTPUT
xp = qrlab.default_module()
m_t, n_t, k_t = qrlab.config.pick(small=(600, 300, 0), paper=(6000, 3000, 0))
ps = qrlab.config.pick(small=(10, 50, 100, 200), paper=(100, 500, 1000, 2000))
reps = qrlab.config.pick(small=3, paper=5)
print(f"{qrlab.backend.describe()}; m={m_t}, n={n_t}, k={k_t}, float32, median of {reps}")
print(f"{'p':>5} {'update ms':>10} {'QR solve ms':>12} {'speed-up':>9} {'rel. err x':>11}")
live = []
for p in ps:
    case = dict(table="live", op="delete_cols", m=m_t, n=n_t, p=p, k=k_t,
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
folder, gpu_rows = committed_results("delete_cols", {"T6", "T7"})
if not gpu_rows:
    print(f"No GPU results for this update in benchmarks/results/ yet: on a GPU, "
          "'python -m qrlab.bench --suite paper-full --tables T6,T7' writes them.")
else:
    print(f"{'GPU (file)':34s} {'table':5} {'m':>6} {'p':>5} {'k':>5} {'update ms':>10} "
          f"{'QR solve ms':>12} {'speed-up':>9} {'paper':>6}")
    for r in gpu_rows:
        ps_ = "-" if r.get("paper_speedup") is None else f"{r['paper_speedup']:.2f}"
        print(f"{r['device'] + ' ' + r['dtype']:34s} {r['table']:5} {r['m']:6d} {r['p']:5d} "
              f"{r['k']:5d} {r['t_update'] * 1e3:10.2f} {r['t_gels'] * 1e3:12.2f} "
              f"{r['speedup_gels']:9.2f} {ps_:>6}")

# %%
# NBVAL_IGNORE_OUTPUT
fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3), dpi=70)
left.plot([r["p"] for r in live], [r["speedup_gels"] for r in live], "o-", label="qrlab")
left.set_title(f"this machine, m={m_t}, n={n_t}, k={k_t}", fontsize=9)
left.set_xlabel("p (columns removed)", fontsize=8)
right.plot([c["m"] for c in t6], [c["paper_speedup"] for c in t6], "s--",
           label="paper M2050 (Table 6)")
for device in sorted({r["device"] for r in gpu_rows}):
    cells = sorted((r for r in gpu_rows if r["device"] == device and r["table"] == "T6"),
                   key=lambda r: r["m"])
    if cells:
        right.plot([r["m"] for r in cells], [r["speedup_gels"] for r in cells], "o-",
                   label=f"qrlab {device}")
right.set_title("000 Table 6 sizes (n=3000, p=500, k=0)", fontsize=9)
right.set_xlabel("m (rows)", fontsize=8)
for ax in (left, right):
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("speed-up over QR solve", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Summary
#
# * Removing columns needs only $R$ (and $d$): the columns right of the gap gain $p$
#   subdiagonals, and Householder panels of $(p + n_b)$ rows remove them without fill.
# * The work, $2(p+1)(n-k-p)^2$ flops, does not depend on $m$, while recomputing does:
#   the taller $A$, the larger the gain.  Removing columns near the end (large $k$) leaves
#   almost nothing to do.
