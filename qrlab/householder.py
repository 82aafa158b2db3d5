"""Householder reflectors and their compact WY form (seed 002; 001 Section 3.3).

A reflector ``H = I - tau v v^H`` maps a vector ``x`` onto a multiple of ``e_1``.  ``nb``
reflectors compose into ``H_1 H_2 ... H_nb = I - V T V^H`` with ``V`` unit lower
trapezoidal and ``T`` upper triangular (Schreiber & Van Loan's compact WY form), so a block
of reflectors is applied to a matrix by three matrix products -- the reason blocked
Householder runs at matrix-multiply speed on a GPU.

All functions here are written once against the array module of their inputs (NumPy or
CuPy).
"""
from __future__ import annotations

from .backend import array_module, matmul

__all__ = ["house", "panel_qr", "wy_factor", "apply_wy_left", "apply_wy_right"]


def house(x):
    """Householder vector of ``x`` (seed 002, Golub & Van Loan Algorithm 5.1.1).

    Returns ``v`` with ``v[0] = 1`` and ``tau`` such that ``(I - tau v v^H) x = beta e_1``
    with ``|beta| = ||x||``, and ``beta``.  The sign of ``beta`` is opposite to that of
    ``x[0]``, so ``x[0] - beta`` never cancels.

    Parameters
    ----------
    x : (m,) array

    Returns
    -------
    v : (m,) array
    tau : scalar
    beta : scalar

    Examples
    --------
    >>> import numpy as np
    >>> from qrlab.householder import house
    >>> x = np.array([3.0, 4.0, 0.0])
    >>> v, tau, beta = house(x)
    >>> y = x - tau * v * (v @ x)
    >>> bool(np.allclose(y, [beta, 0, 0])), float(beta)
    (True, -5.0)
    """
    xp = array_module(x)
    x = xp.asarray(x)
    alpha = x[0]
    sigma = xp.linalg.norm(x[1:]) if x.shape[0] > 1 else xp.zeros((), x.real.dtype)
    v = x.copy()
    v[0] = 1
    if float(sigma) == 0.0 and (x.dtype.kind != "c" or float(abs(alpha.imag)) == 0.0):
        return v, x.dtype.type(0), alpha        # already a multiple of e_1: H = I
    norm = xp.sqrt(abs(alpha) ** 2 + sigma ** 2)
    phase = alpha / abs(alpha) if float(abs(alpha)) != 0.0 else x.dtype.type(1)
    beta = -phase * norm
    v[1:] = x[1:] / (alpha - beta)
    tau = (beta - alpha) / beta
    return v, tau, beta


def panel_qr(P):
    """Householder QR of a panel: ``P = (H_1 ... H_w) [Rp; 0]``.

    Uses LAPACK's ``geqrf`` through ``numpy.linalg.qr(mode='raw')`` (cuSOLVER through
    CuPy), which builds the same reflectors as :func:`house`.

    Returns
    -------
    V : (h, w') unit lower trapezoidal reflector vectors, ``w' = min(h, w)``
    tau : (w',) reflector coefficients
    Rp : (w', w) upper trapezoidal
    """
    xp = array_module(P)
    h, tau = xp.linalg.qr(P, mode="raw")
    a = h.T                                     # geqrf's column-major output, as (h, w)
    w = min(P.shape)
    V = xp.tril(a[:, :w], -1)
    xp.fill_diagonal(V, 1)                      # (one strided fill, no index arrays)
    return V, tau, xp.triu(a[:w, :])


def wy_factor(V, tau):
    """``T`` of the compact WY form ``H_1 ... H_w = I - V T V^H`` (Schreiber & Van Loan).

    LAPACK's ``larft`` builds ``T`` column by column (``T[:i, i] = -tau_i T[:i, :i]
    V[:, :i]^H v_i``), ``w`` dependent steps.  The same ``T`` is the inverse of
    ``triu(V^H V, 1) + diag(1 / tau)`` (Puglisi; Joffrain et al.), which takes one matrix
    product and one triangular solve: two launches on a GPU instead of ``w``.  A reflector
    with ``tau = 0`` is the identity; its column of ``V`` is zeroed so that it drops out.
    ``V`` is modified in place for such columns.  One reflector needs none of this:
    ``T = [tau]`` (on a GPU, about ten array operations of host time fewer).
    """
    from .backend import solve_triangular

    xp = array_module(V)
    w = V.shape[1]
    if w == 1:
        return tau.reshape(1, 1).astype(V.dtype)
    identity = tau == 0
    V[...] = xp.where(identity[None, :], 0, V)      # no host round trip on a GPU
    inv_tau = 1 / xp.where(identity, 1, tau)
    Tinv = xp.triu(matmul(V.conj().T, V), 1)
    Tinv.reshape(-1)[:: w + 1] = inv_tau            # the diagonal: one strided copy
    # the diagonal is 1 / tau, never zero: no test (on a GPU it would wait for the device)
    return solve_triangular(Tinv, xp.eye(w, dtype=V.dtype), check=False)


def apply_wy_left(V, T, C):
    """``(I - V T V^H)^H C = C - V (T^H (V^H C))``: reflectors applied to rows of ``C``."""
    return C - matmul(V, matmul(T.conj().T, matmul(V.conj().T, C)))


def apply_wy_right(C, V, T):
    """``C (I - V T V^H) = C - ((C V) T) V^H``: reflectors applied to columns of ``C``."""
    return C - matmul(matmul(matmul(C, V), T), V.conj().T)
