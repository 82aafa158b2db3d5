# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Householder reflectors and Givens rotations
#
# Every QR algorithm in this kit, and every update, is built from two orthogonal
# transformations:
#
# * a **Householder reflector** $H = I - \tau v v^T$ zeroes a whole column below one entry at
#   once, and changes every row in which $v$ is nonzero;
# * a **Givens rotation** $G$ zeroes one entry against its neighbour, and changes only
#   those two rows.
#
# This notebook takes both apart on small matrices: their properties, which entries they
# zero and which they fill in, how to compute them without overflow, and how several
# reflectors combine into the compact WY form $I - V T V^T$ that lets a GPU apply them as
# matrix products.  References: seed 002 (reflectors, `house()`, WY), seed 003 (Givens,
# the overflow-safe rotation), 001 Section 3 (how the updates use both).

# %%
import numpy as np

import qrlab.householder as hh
from qrlab import viz
from qrlab.givens import givens, rotate_rows
from qrlab.patterns import FILL, NONZERO, ZERO, ZEROED, Frame

np.set_printoptions(precision=3, suppress=True)


def clean(M, tol=1e-12):
    """M with roundoff-sized entries set to exact zeros, so printed tables stay the same
    from machine to machine (no '-0.' or 1e-17 noise)."""
    M = np.array(M, dtype=float)
    M[np.abs(M) <= tol * max(1.0, np.abs(M).max())] = 0.0
    return M + 0.0          # turns -0.0 into 0.0


def pattern(M, tol=1e-12):
    """Nonzero pattern of M: ``*`` nonzero, ``0`` zero."""
    nz = np.abs(M) > tol * max(1.0, np.abs(M).max())
    return "\n".join(" ".join("*" if z else "0" for z in row) for row in nz)


def step_picture(title, before, after, rows, tol=1e-12):
    """One transformation drawn by qrlab.viz in the papers' symbols (001 Fig. 2): ``*``
    nonzero, ``0`` zero, ``-`` made zero, ``+`` fill-in, ``[ ]`` the rows it acts on."""
    scale = tol * max(1.0, np.abs(before).max())
    nz0, nz1 = np.abs(before) > scale, np.abs(after) > scale
    codes = np.full(before.shape, ZERO, dtype=np.int8)
    codes[nz0 & nz1], codes[nz0 & ~nz1], codes[~nz0 & nz1] = NONZERO, ZEROED, FILL
    active = np.zeros(before.shape, dtype=bool)
    active[rows] = True
    none = np.zeros(before.shape, dtype=bool)
    frame = Frame(title, kind="insert_rows", step="stage", R=codes, Q=None,
                  blue_R=none, blue_Q=None, red_R=active, red_Q=None)
    # viz labels the matrix of a frame "R"; here it is the matrix A being transformed
    return viz.text(frame, show="R").replace("\nR (", "\nA (", 1)


# %% [markdown]
# ## 1. The reflector
#
# For a nonzero vector $z$, $H = I - 2\,z z^T / (z^T z)$ reflects through the hyperplane
# orthogonal to $z$.  Seed 002 proves the three properties everything else rests on:
#
# * $H$ is **symmetric**: $H^T = H$;
# * $H$ is **orthogonal**: $H^T H = I$ (so $H^{-1} = H$);
# * if $\|x\|_2 = \|y\|_2$ and $z = y - x \ne 0$, then $H x = y$.
#
# Choosing $y = \beta e_1$ with $|\beta| = \|x\|_2$ gives a reflector that zeroes all of $x$
# below its first entry.  `qrlab.householder.house(x)` returns the vector scaled so that
# $v_1 = 1$, the coefficient $\tau = 2 / v^T v$ (seed 002's Julia `house` calls it
# $\beta$) and $\beta$, so that $H = I - \tau v v^T$ and $Hx = \beta e_1$:

# %%
x = np.array([3.0, 1.0, 5.0, 1.0])
v, tau, beta = hh.house(x)
H = np.eye(4) - tau * np.outer(v, v)

print("v    =", v)
print("tau  =", round(float(tau), 6), "  beta =", round(float(beta), 6),
      "  ||x|| =", round(float(np.linalg.norm(x)), 6))
print("H x  =", clean(H @ x))

assert np.allclose(H, H.T)                          # symmetric
assert np.allclose(H.T @ H, np.eye(4))              # orthogonal
assert np.allclose(H @ x, beta * np.eye(4)[0])      # H x = beta e_1
assert np.isclose(abs(beta), np.linalg.norm(x))     # |beta| = ||x||
assert np.isclose(tau, 2 / (v @ v)) and v[0] == 1

# %% [markdown]
# Nobody forms $H$ in practice: applying it to a matrix $C$ is a rank-one update,
# $HC = C - \tau v (v^T C)$, which costs $4 \cdot \mathrm{rows} \cdot \mathrm{cols}$ flops
# instead of a matrix product.
#
# ### Why $\beta$ takes the sign opposite to $x_1$
#
# Both $\beta = +\|x\|$ and $\beta = -\|x\|$ give a valid reflector in exact arithmetic,
# with $z = \beta e_1 - x$.  Its first entry is $\beta - x_1$.  If $x$ is already close
# to a positive multiple of $e_1$ and we pick $\beta = +\|x\|$, that difference cancels
# catastrophically and the "reflector" built from it is wrong.  `house` picks
# $\beta = -\operatorname{sign}(x_1)\|x\|$, so $x_1 - \beta$ is a sum, never a difference
# (seed 002's Julia version reaches the same end by rewriting $x_1 - \|x\|$ as
# $-\sigma / (x_1 + \|x\|)$).

# %%
x = np.array([1.0, 1e-9, 0.0])                    # nearly e_1 already


def reflect_onto(x, beta):
    """y = H x for the reflector with z = beta e_1 - x (seed 002's definition)."""
    z = beta * np.eye(len(x))[0] - x
    return x - 2 * z * (z @ x) / (z @ z)


naive = reflect_onto(x, +np.linalg.norm(x))        # same sign as x_1: cancellation
v, tau, beta = hh.house(x)
good = x - tau * v * (v @ x)

print(f"naive choice: H x = [{naive[0]:.0f}, {naive[1]:.0e}, {naive[2]:.0f}]"
      "   (x_2 only changed sign)")
print(f"house():      H x = [{good[0]:.0f}, {clean(good[1:], tol=1e-15)[0]:.0f}, "
      f"{clean(good[1:], tol=1e-15)[1]:.0f}]")
assert abs(naive[1]) > 1e-10                       # lost: the 1e-9 entry survives
assert np.all(np.abs(good[1:]) < 1e-15 * np.linalg.norm(x))

# %% [markdown]
# ### A reflector acting on a matrix, entry by entry
#
# Here is a $6 \times 4$ matrix with some zeros, and the reflector that zeroes its first
# column below the diagonal, drawn by `qrlab.viz` in the papers' symbols: `-` marks an
# entry made zero, `+` a zero made nonzero (fill-in), and `[ ]` the rows the reflector
# acts on.  Rows 2 and 3 already had a zero in column 0, so $v$ is zero there and they
# are left alone; every other row is mixed with all the others, and the zeros in those
# rows fill in.

# %%
A = np.array([[4.0, 1, 0, 2],
              [3.0, 0, 1, 0],
              [0.0, 2, 0, 1],
              [0.0, 0, 3, 0],
              [2.0, 0, 0, 1],
              [1.0, 1, 0, 0]])
v, tau, beta = hh.house(A[:, 0])
HA = A - tau * np.outer(v, v @ A)

print("v =", v)
print(step_picture("reflector H_1 zeroes column 0 below the diagonal", A, HA, v != 0))
assert np.allclose(clean(HA)[1:, 0], 0) and np.isclose(HA[0, 0], beta)
assert np.array_equal(HA[2:4], A[2:4])          # v[2] = v[3] = 0: rows 2, 3 untouched

# %% [markdown]
# ## 2. The Givens rotation
#
# A Givens rotation acts on two rows $a$ and $b$ only:
#
# $$G = \begin{pmatrix} c & s \\ -s & c \end{pmatrix},\qquad
# G \begin{pmatrix} x_a \\ x_b \end{pmatrix} = \begin{pmatrix} r \\ 0 \end{pmatrix},\qquad
# c = \frac{x_a}{r},\; s = \frac{x_b}{r},\; r = \sqrt{x_a^2 + x_b^2}$$
#
# (seed 003 eqs. 3-5; $c^2 + s^2 = 1$, so $G$ is orthogonal).  Seed 003 warns that
# $r = \sqrt{x_a^2 + x_b^2}$ "is prone to overflow": the squares leave the floating-point
# range long before $r$ does.  In single precision (largest number about $3.4 \cdot
# 10^{38}$) two entries of size $10^{20}$ are harmless, but their squares are not:

# %%
xa, xb = np.float32(3e20), np.float32(4e20)

with np.errstate(over="ignore"):
    r_naive = np.sqrt(xa * xa + xb * xb)              # xa * xa = 9e40 overflows to inf
c_naive, s_naive = xa / r_naive, xb / r_naive

c, s = givens(np.array([xa]), np.array([xb]))
c, s = c[0], s[0]

print(f"naive:  r = {r_naive}, c = {c_naive}, s = {s_naive}")
print(f"givens: r = {np.hypot(xa, xb):.3g}, c = {c:.3f}, s = {s:.3f}, dtype {c.dtype}")
assert np.isinf(r_naive) and c_naive == 0 and s_naive == 0    # the rotation is lost
assert np.isclose(c, 0.6) and np.isclose(s, 0.8)
assert np.isclose(-s * xa + c * xb, 0, atol=1e14)              # zeroes x_b (|x| ~ 1e20)

# %% [markdown]
# Small numbers fail the other way: their squares underflow to zero, $r$ becomes 0 and
# $c = x_a / r$ divides by zero.

# %%
xa, xb = np.float32(3e-25), np.float32(4e-25)
with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
    r_naive = np.sqrt(xa * xa + xb * xb)              # 9e-50 underflows to 0
    c_naive, s_naive = xa / r_naive, xb / r_naive
c, s = givens(np.array([xa]), np.array([xb]))

print(f"naive:  r = {r_naive}, c = {c_naive}, s = {s_naive}")
print(f"givens: c = {c[0]:.3f}, s = {s[0]:.3f}")
assert r_naive == 0 and np.isinf(c_naive)
assert np.isclose(c[0], 0.6) and np.isclose(s[0], 0.8)

# %% [markdown]
# Seed 003's remedy divides by the larger of the two first: with $|x_b| \ge |x_a|$,
# $t = x_a/x_b$, $s = \operatorname{sgn}(x_b)/\sqrt{1+t^2}$, $c = s\,t$ (and the mirror
# image otherwise).  Since $|t| \le 1$, nothing overflows.  `qrlab.givens.givens` gets
# the same effect from `hypot`, which computes $\sqrt{a^2 + b^2}$ without forming the
# squares.  Both agree:

# %%
def givens_003(a, b):
    """Seed 003's overflow-safe rotation, written out."""
    if b == 0:
        return 1.0, 0.0
    if abs(b) >= abs(a):
        t = a / b
        s = np.sign(b) / np.sqrt(1 + t * t)
        return s * t, s
    t = b / a
    c = np.sign(a) / np.sqrt(1 + t * t)
    return c, c * t


rng = np.random.default_rng(1)
pairs = rng.standard_normal((200, 2)) * 10.0 ** rng.integers(-30, 30, (200, 1))
for a, b in pairs:
    c3, s3 = givens_003(a, b)
    cq, sq = givens(np.array([a]), np.array([b]))
    # the same rotation up to sign: 003 keeps r >= 0 and lets c take the sign of a,
    # qrlab keeps c >= 0 and gives r the sign of a
    assert np.isclose(abs(c3), cq[0]) and np.isclose(abs(s3), abs(sq[0]))
    assert np.isclose(-sq[0] * a + cq[0] * b, 0, atol=1e-12 * np.hypot(a, b))
print("seed 003's formula and qrlab.givens.givens agree on 200 pairs from 1e-30 to 1e30")

# %% [markdown]
# ### A rotation acting on two rows
#
# Zero entry $(5, 0)$ of the same $6 \times 4$ matrix against $(4, 0)$ by rotating rows 4
# and 5 (this is how the column-by-column Givens QR of seed 003 eq. 6 starts).  Only those
# two rows change; a zero fills in wherever the other row of the pair had a nonzero.

# %%
G_A = A.copy()
c, s = givens(A[[4], 0], A[[5], 0])
rotate_rows(G_A, np.array([4]), np.array([5]), c, s)

print(f"c = {c[0]:.4f}, s = {s[0]:.4f}")
print(step_picture("rotation of rows 4 and 5 zeroes entry (5, 0)", A, G_A, [4, 5]))
assert abs(G_A[5, 0]) < 1e-15 and np.isclose(G_A[4, 0], np.hypot(A[4, 0], A[5, 0]))
assert np.array_equal(G_A[:4], A[:4])              # rows 0-3 untouched
assert np.isclose(np.linalg.norm(G_A), np.linalg.norm(A))   # orthogonal: norms kept

# %% [markdown]
# The contrast is the reason both tools exist.  A reflector clears a column in one step
# but touches every row of its range; a rotation clears one entry but touches two rows, so
# rotations on disjoint pairs of rows can run at the same time.  When most of a column is
# already zero (an $R$ factor with a few extra rows or columns, as in every update),
# rotations do little work and disturb few zeros; when a dense block must be cleared,
# reflectors win, especially in the blocked form that follows.
#
# ## 3. Many reflectors at once: the compact WY form
#
# Householder QR of a panel of $w$ columns applies $w$ reflectors in turn,
# $Q = H_1 H_2 \cdots H_w$.  Schreiber and Van Loan showed that the product has the form
#
# $$H_1 H_2 \cdots H_w = I - V T V^T,$$
#
# where $V = [v_1, \dots, v_w]$ holds the reflector vectors (unit lower trapezoidal, since
# $v_j$ starts at row $j$) and $T$ is $w \times w$ upper triangular.  Seed 002 writes the
# same product as $I + W Y^T$ (Bischof and Van Loan): $Y = V$ and $W = -VT$.  Applying
# $I - V T V^T$ to a matrix $C$ takes three matrix products,
# $C - V (T^T (V^T C))$, which run near the GPU's peak, instead of $w$ rank-one updates.
#
# Build the reflectors of a $7 \times 3$ panel one column at a time with `house`:

# %%
rng = np.random.default_rng(0)
m, w = 7, 3
P = rng.standard_normal((m, w))

Rp = P.copy()
V = np.zeros((m, w))
taus = np.zeros(w)
for j in range(w):
    v, tau, beta = hh.house(Rp[j:, j])
    Rp[j:, j:] -= tau * np.outer(v, v @ Rp[j:, j:])     # H_j applied to the panel
    V[j:, j], taus[j] = v, tau

print("V (unit lower trapezoidal):")
print(pattern(V))
print("R of the panel:")
print(pattern(Rp))

# %% [markdown]
# $T$ can be built column by column (LAPACK's `larft`):
# $T_{jj} = \tau_j$, $T_{0:j,\,j} = -\tau_j\, T_{0:j,0:j}\, V_{:,0:j}^T v_j$.
# That is $w$ dependent steps.  `qrlab.householder.wy_factor` uses the identity
# $T^{-1} = \operatorname{triu}(V^T V, 1) + \operatorname{diag}(1/\tau)$ instead: one
# matrix product and one triangular solve, two GPU launches in place of $w$.  Both give
# the same $T$, and $I - V T V^T$ equals the product of the reflectors:

# %%
T_larft = np.zeros((w, w))
for j in range(w):
    T_larft[j, j] = taus[j]
    T_larft[:j, j] = -taus[j] * T_larft[:j, :j] @ (V[:, :j].T @ V[:, j])

T = hh.wy_factor(V.copy(), taus)
product = np.eye(m)
for j in range(w):
    product = product @ (np.eye(m) - taus[j] * np.outer(V[:, j], V[:, j]))

print("T (upper triangular):")
print(pattern(T))
err_T = np.abs(T - T_larft).max()
err_WY = np.abs((np.eye(m) - V @ T @ V.T) - product).max()
print("larft T and one-solve T agree to 1e-14:", err_T < 1e-14)
print("I - V T V^T equals H_1 H_2 H_3 to 1e-14:", err_WY < 1e-14)
assert err_T < 1e-14 and err_WY < 1e-14
assert np.allclose(np.tril(T, -1), 0)

# %% [markdown]
# The compact form reproduces the panel's factorization, $P = (I - VTV^T) R_p$, and
# `apply_wy_left`, which computes $(I - V T V^T)^T C = C - V (T^T (V^T C))$ by three matrix
# products, undoes it.  `qrlab.householder.panel_qr` gets the same $V$, $\tau$ and $R_p$
# from LAPACK's `geqrf` (cuSOLVER on a GPU):

# %%
Q_panel = np.eye(m) - V @ T @ V.T
assert np.allclose(Q_panel @ Rp, P)
assert np.allclose(clean(hh.apply_wy_left(V, T, P)), clean(Rp))

V2, tau2, R2 = hh.panel_qr(P)
assert np.allclose(V2, V) and np.allclose(tau2, taus) and np.allclose(R2, Rp[:w])
W, Y = -V @ T, V                                    # seed 002's I + W Y^T
assert np.allclose(np.eye(m) + W @ Y.T, product)
print("P = (I - V T V^T) R_p, and geqrf builds the same V, tau, R_p: True")

# %% [markdown]
# ## Summary
#
# | | zeroes | touches | safe construction | many at once |
# |---|---|---|---|---|
# | reflector $I - \tau v v^T$ | a whole column below one entry | every row where $v \ne 0$ | $\beta = -\operatorname{sign}(x_1)\|x\|$ | compact WY $I - VTV^T$: matrix products |
# | rotation $G(c, s)$ | one entry | two rows | $r$ by `hypot` (seed 003) | disjoint row pairs in parallel (003 eq. 7) |
#
# The next notebook assembles both into full QR factorizations: Householder, blocked
# compact-WY, and Givens in seed 003's two elimination orders.
