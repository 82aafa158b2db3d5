# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Welcome to qrlab
#
# **qrlab** is a small kit for learning, drawing and running *QR factorization updating*:
# when a matrix changes by a few rows or columns, its QR factorization can be updated
# for much less work than computing it again.  It runs on NumPy, and on NVIDIA GPUs
# through CuPy.
#
# ## What QR updating is for
#
# A linear least-squares problem asks for the $x$ that makes $\|Ax - b\|_2$ smallest,
# where $A$ is $m \times n$ ($m \ge n$) and $b$ holds $m$ observations.  With $A = QR$,
#
# $$\|Ax - b\|_2^2 = \|Rx - Q^T b\|_2^2 = \|R_1 x - f\|_2^2 + \|g\|_2^2,
# \qquad Q^T b = d = \begin{pmatrix} f \\ g \end{pmatrix},$$
#
# so $x$ comes from the triangular system $R_1 x = f$ by back substitution, and $\|g\|_2$
# is the size of the residual.
#
# Think of a model of wages: each **row** of $A$ is one person (age, years of education,
# years employed), and $b$ holds what each person earns.  Data change all the time:
#
# | the data change | $A$ changes | qrlab call (same arguments as SciPy) |
# |---|---|---|
# | $p$ new people are surveyed | $p$ rows added at row $k$ | `qr_insert(Q, R, U, k, which='row')` |
# | $p$ people leave the survey | $p$ rows removed from row $k$ | `qr_delete(Q, R, k, p, which='row')` |
# | $p$ new variables are measured | $p$ columns added at column $k$ | `qr_insert(Q, R, U, k, which='col')` |
# | $p$ variables are dropped | $p$ columns removed from column $k$ | `qr_delete(Q, R, k, p, which='col')` |
#
# Computing $A = QR$ from scratch costs $O(mn^2)$ operations.  Updating the factorization
# we already have touches only the part of $R$ the change disturbs, and costs far less:
# that is the whole point, and the subject of the notebooks that follow.
#
# ## How to use this kit
#
# * `python3 tasks.py lab` opens these notebooks; `python3 tasks.py test` runs every test,
#   and re-runs every notebook to check its stored outputs.
# * Notebooks are numbered in reading order.  Each `NN_topic.ipynb` has a twin
#   `NN_topic.py` holding the same cells as plain text; JupyterLab keeps them in step.
# * Problem sizes come from `QRLAB_SIZE`: `small` (the default, quick on any laptop)
#   or `paper` (the sizes of the GPU papers; best on a GPU).
# * Arrays decide where the work runs: NumPy arrays in, NumPy arrays out; CuPy arrays in,
#   CuPy arrays out.  `QRLAB_BACKEND=numpy|cupy` picks the module that examples create
#   their arrays with.
#
# Which backend does this machine give you?

# %%
import numpy as np
import scipy.linalg

import qrlab
import qrlab.backend
import qrlab.config

# Print few digits and no 1e-17 noise, so outputs read well and stay the same from run to run.
np.set_printoptions(precision=3, suppress=True)

# %%
# NBVAL_IGNORE_OUTPUT
# (the answer depends on the machine, so the test suite does not compare it)
print("qrlab", qrlab.__version__)
print("backend:", qrlab.backend.describe())
print("problem sizes:", qrlab.config.size())

# %% [markdown]
# ## A least-squares problem, solved by QR
#
# Six people, three variables (a column of ones gives the model an intercept):

# %%
#              1  age  education  years employed
A = np.array([[1, 25, 12,  3],
              [1, 32, 16,  8],
              [1, 47, 12, 25],
              [1, 51, 18, 20],
              [1, 38, 14, 12],
              [1, 29, 20,  2]], dtype=float)
b = np.array([31.0, 52.0, 48.0, 75.0, 45.0, 58.0])  # yearly wage, in thousands
m, n = A.shape

Q, R = np.linalg.qr(A, mode="complete")  # Q is m-by-m, R is m-by-n upper trapezoidal
print(R)

# %% [markdown]
# $Q$ is orthogonal and $QR$ gives back $A$.  Checks like these are asserts, so the test
# suite fails if they ever stop holding:

# %%
assert np.allclose(Q @ R, A)
assert np.allclose(Q.T @ Q, np.eye(m))

d = Q.T @ b
x = scipy.linalg.solve_triangular(R[:n], d[:n])  # back substitution on R_1 x = f
print("coefficients x:", x)
print("residual norm ||g||:", round(float(np.linalg.norm(d[n:])), 3))
assert np.allclose(x, np.linalg.lstsq(A, b, rcond=None)[0])

# %% [markdown]
# ## Updating instead of starting again
#
# A seventh person joins the survey.  Rather than factorize the $7 \times 4$ matrix from
# scratch, update $Q$ and $R$ with `qrlab.qr_insert`.  It takes the same arguments as
# `scipy.linalg.qr_insert` (so either works here), adds blocks of rows or columns in one
# call, and runs on the GPU when given CuPy arrays.

# %%
k = 2                                  # the new person becomes row 2 (0-based, as in SciPy)
u = np.array([1.0, 44, 16, 15])
A1 = np.insert(A, k, u, axis=0)
b1 = np.insert(b, k, 63.0)

Q1, R1 = qrlab.qr_insert(Q, R, u, k, which="row")
assert np.allclose(Q1 @ R1, A1)

x1 = scipy.linalg.solve_triangular(R1[:n], (Q1.T @ b1)[:n])
print("coefficients with a 7th person:", x1)
assert np.allclose(x1, np.linalg.lstsq(A1, b1, rcond=None)[0])

# %% [markdown]
# Now drop a variable, "years employed" (column 3), again by updating:

# %%
Q2, R2 = qrlab.qr_delete(Q1, R1, 3, 1, which="col")   # k=3, p=1
A2 = np.delete(A1, 3, axis=1)
assert np.allclose(Q2 @ R2, A2)

x2 = scipy.linalg.solve_triangular(R2[:n - 1], (Q2.T @ b1)[:n - 1])
print("coefficients without 'years employed':", x2)
assert np.allclose(x2, np.linalg.lstsq(A2, b1, rcond=None)[0])

# %% [markdown]
# ## Where next
#
# The numbered notebooks in this folder take the four updates one at a time: the zeros
# and fill-in each one creates in $R$, the Givens rotations and Householder reflectors
# that remove it, and how the same steps run as GPU kernels.  Without a notebook,
# `python -m qrlab` runs a short demonstration in the terminal.
