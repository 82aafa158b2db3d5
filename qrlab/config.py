"""Problem sizes, chosen in one place.

Notebooks, examples and benchmarks ask this module how big their matrices should be, so one
environment variable switches all of them between quick runs and the papers' sizes:

``QRLAB_SIZE=small`` (the default)
    Sizes that run in seconds on a laptop's CPU; the test suite and CI use these.
``QRLAB_SIZE=paper``
    The sizes of the GPU papers' experiments (thousands of rows and columns); meant for a GPU.

The variable is read on every call rather than once at import, so a notebook or a test can
change it without reloading qrlab.
"""
from __future__ import annotations

import os

__all__ = ["SIZES", "size", "pick"]

#: The accepted values of ``QRLAB_SIZE``, the default first.
SIZES = ("small", "paper")


def size() -> str:
    """The problem-size setting: ``'small'`` or ``'paper'``.

    Returns
    -------
    str
        ``QRLAB_SIZE`` lower-cased and stripped, or ``'small'`` when it is unset or empty.

    Raises
    ------
    ValueError
        If ``QRLAB_SIZE`` holds anything else: a typo should not silently run the small case.

    Examples
    --------
    >>> size()  # with QRLAB_SIZE unset
    'small'
    """
    value = os.environ.get("QRLAB_SIZE", "").strip().lower() or SIZES[0]
    if value not in SIZES:
        raise ValueError(f"QRLAB_SIZE={value!r} is not one of {', '.join(SIZES)}")
    return value


def pick(small, paper):
    """Return ``small`` or ``paper`` according to :func:`size`.

    Parameters
    ----------
    small, paper : object
        The values to use for each setting: a number, a tuple of shapes, a list of cases.

    Returns
    -------
    object
        ``small`` when ``QRLAB_SIZE`` is ``small`` (or unset), else ``paper``.

    Raises
    ------
    ValueError
        If ``QRLAB_SIZE`` is set to an unknown value.

    Examples
    --------
    >>> m, n = pick(small=(40, 20), paper=(6000, 3000))  # with QRLAB_SIZE unset
    >>> m, n
    (40, 20)
    """
    return small if size() == "small" else paper
