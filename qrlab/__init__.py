"""qrlab: QR factorization updating on NumPy and on the GPU, for learning and for use.

The four block updates of ``A = QR`` (add or remove ``p`` rows or columns at ``k``) and
the rank-p update, as drop-in replacements for SciPy's:

>>> from qrlab import qr_insert, qr_delete, qr_update

They take NumPy or CuPy arrays and return arrays of the same kind.  Start reading at
:mod:`qrlab.updates`; the algorithms themselves are the stage plans of
:mod:`qrlab.stages`, run by :mod:`qrlab.executor` (NumPy, CuPy) and drawn by
:mod:`qrlab.patterns`.  The rank-k Cholesky update and downdate (``cholesky_update``,
``cholesky_downdate``, :mod:`qrlab.cholesky`) take NumPy or CuPy arrays too.
"""
from .backend import array_module, default_module, gpu_available
from .cholesky import cholesky_downdate, cholesky_update
from .lstsq import LeastSquaresQR
from .updates import qr_delete, qr_insert, qr_update

__version__ = "0.1.0"

__all__ = ["qr_insert", "qr_delete", "qr_update", "cholesky_update", "cholesky_downdate",
           "LeastSquaresQR", "array_module", "default_module", "gpu_available",
           "__version__"]
