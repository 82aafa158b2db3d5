"""The one-launch triangle update's critical path per panel, float32 against float64.

    PYTHONPATH=. python3 benchmarks/triangle_trace.py [float32] [float64]

For [R; B] with R n x n upper triangular and B k x n (n = 2500 and 3000, k = 500: the
triangles of 000 Tables 6 and 8), every count of chunks of B's rows from 2 to 16 and the
count that ``qrlab.gpu._triangle_chunks`` picks: the launch's time (CUDA events, median
of 5 after one untimed call, on copies of the same inputs), and from the kernel's time
stamps (``profile_panels.panel_trace``) the median microseconds per panel of each stage
on the first chunk's critical path (waiting for the panel before, loading, updating the
panel's columns, factoring, publishing) and the span.  The dtypes named (both by default).
"""
import sys

import cupy as cp
import numpy as np

from qrlab.gpu import GpuExecutor

sys.path.insert(0, "benchmarks")
from fit_triangle_chunks import launch_ms  # noqa: E402
from profile_panels import panel_trace  # noqa: E402

rng = np.random.default_rng(0)
for dt in sys.argv[1:] or ("float32", "float64"):
    for n, k in [(2500, 500), (3000, 500)]:
        R = cp.asarray(np.triu(rng.standard_normal((n, n))) + 2 * n * np.eye(n), dtype=dt)
        W = cp.asarray(rng.standard_normal((k, n)), dtype=dt)
        ex = GpuExecutor()
        model = ex.triangle_chunks(n, n, k, dt)
        for nc in sorted({model, 2, 3, 4, 5, 6, 8, 10, 12, 16}):
            ex.triangle_chunk = -(-k // nc)
            t = launch_ms(ex, R, W)
            line = panel_trace(ex, R.copy(), W.copy())
            print(np.dtype(dt).name, n, k, "chunks", nc, "(model)" if nc == model else "",
                  "ms %.3f" % t, "|", line, flush=True)
