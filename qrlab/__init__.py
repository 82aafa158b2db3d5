"""qrlab: QR factorization updating on NumPy and on the GPU, for learning and for use."""
from .backend import array_module, default_module, gpu_available

__version__ = "0.1.0"

__all__ = ["array_module", "default_module", "gpu_available", "__version__"]
