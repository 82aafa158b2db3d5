"""The rotation kernel's passes pipelined in one launch against one launch after the other.

    python3 benchmarks/pipeline_passes.py float32 T2,T3,T10,T11 > float32.log
    python3 benchmarks/pipeline_passes.py float64 T2,T3,T10,T11 > float64.log
    python3 benchmarks/pipeline_passes.py --summarize float32.log float64.log > table.md

For every cell of the given tables of the paper suite (``qrlab.bench``), the update of
``t_update`` timed three ways, interleaved repetition by repetition in one process (7 each,
after two warm-up calls of each; CUDA events; the median): passes of up to 256 sweeps one
launch after the other (``old``), passes of 32 sweeps pipelined in one launch wherever they
fit (``p32``) and the same with 4 sweeps per warp instead of 2 (``p32q4``).  Only the update
is timed; the rest of each cell (the baselines) is skipped.  ``--summarize`` (no GPU) turns
such logs into a markdown table, with whether :func:`qrlab.gpu._pipeline_pays` pipelines the
cell on an H100 (132 SMs).
"""
import re
import statistics
import sys

import numpy as np

VARIANTS = {"old": dict(sweeps_per_pass=None, strip_sweeps_per_warp=None),
            "p32": dict(sweeps_per_pass=32, strip_sweeps_per_warp=None),
            "p32q4": dict(sweeps_per_pass=32, strip_sweeps_per_warp=4)}
LINE = re.compile(r"(\w+) (T\d+) m=(\d+) n=(\d+) p=(\d+) k=(\d+): old ([\d.]+) "
                  r"p32 ([\d.]+) p32q4 ([\d.]+)")


def measure(dtype, tables, reps=7):
    import cupy as cp

    import qrlab.bench as qb
    from qrlab.gpu import GpuExecutor
    GpuExecutor.pipeline_always = True
    times = {}

    def use(name):
        for key, value in VARIANTS[name].items():
            setattr(GpuExecutor, key, value)

    def interleaved(self, fn, prepare, reps):
        if getattr(fn, "__name__", "") != "update":     # only the update is compared
            return 1.0, [1.0]
        times.update(qb.interleaved_times(
            cp, fn, prepare, {name: (lambda n=name: use(n)) for name in VARIANTS}, reps))
        return 1.0, [1.0]

    qb.Timer.__call__ = interleaved
    for case in qb.paper_cases(False):
        if case["table"] not in tables:
            continue
        times.clear()
        qb.run_case(cp, case, dtype, reps)
        t = {name: statistics.median(times[name]) for name in VARIANTS}
        print(f"{dtype} {case['table']} m={case['m']} n={case['n']} p={case['p']} "
              f"k={case['k']}: " + " ".join(f"{name} {v:.2f}" for name, v in t.items()),
              flush=True)


def vectors(table, m, n, p, k):
    """Rows of Q and columns of R that the cell's sweep applies its rotations to (the
    carried column of d left out)."""
    from qrlab import stages
    if table in ("T10", "T11"):
        return (m - p) + n                # the rows of Q below the p to remove, all of R
    for op in stages.plan_insert_cols(m, n, k, p).ops():
        if isinstance(op, stages.Sweeps):
            a0, a1 = op.apply_cols
            return m + ((n + p) if a1 is None else a1) - a0
    return None                           # no sweep (k = n: Householder only)


def summarize(paths):
    from qrlab import gpu
    gpu._sm_count = lambda: 132           # the H100 the logs come from
    print("| dtype | table | m | n | p | k | old ms | p32 ms | p32q4 ms | p32 / old | "
          "pipelined by the rule |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    chosen = {}
    for path in paths:
        for line in open(path):
            hit = LINE.match(line)
            if not hit:
                continue
            dtype, table, *dims = hit.groups()
            m, n, p, k = map(int, dims[:4])
            old, p32, q4 = map(float, dims[4:])
            v = vectors(table, m, n, p, k)
            size = np.dtype(dtype).itemsize
            rule = v is not None and gpu._strip_passes(p, 256, 32, 132,
                                                       gpu._pipeline_pays(v, p, size))[1]
            chosen.setdefault(dtype, []).append((p32 if rule else old) / old)
            print(f"| {dtype} | {table} | {m} | {n} | {p} | {k} | {old:.2f} | {p32:.2f} | "
                  f"{q4:.2f} | {p32 / old:.3f} | {'yes' if rule else 'no'} |")
    for dtype, ratios in chosen.items():
        print(f"\n{dtype}: with the rule, each cell takes {min(ratios):.3f} to "
              f"{max(ratios):.3f} of the time one launch after the other takes "
              f"(median {statistics.median(ratios):.3f}).")


if __name__ == "__main__":
    if sys.argv[1] == "--summarize":
        summarize(sys.argv[2:])
    else:
        measure(sys.argv[1], set(sys.argv[2].split(",")))
