"""A timeline of one update: where the GPU waits for the host, and what the host was doing.

    PYTHONPATH=. python3 benchmarks/timeline.py float32 T10 12000 6000 20 0 [...]

Arguments: a dtype, then cells of ``qrlab.bench.paper_cases`` as (table, m, n, p, k), five
values each.  Each cell's update (as ``benchmarks/host_gaps.py`` runs it: the factors and
the solve for x, on the same inputs every call) is called three times to warm up, then
once under PyTorch's profiler, which records the GPU's kernels, copies and memsets and the
host's CUDA API calls and Python functions on one clock (CUPTI, through Kineto).  Printed
per cell: the span from the update's call to the last GPU activity; the GPU's busy time;
and every interval over 10 us in which the GPU had nothing to run, with the activity that
ended it and the innermost qrlab functions on the host's stack when that activity was
queued.  The GPU waits for the host in such an interval; its length is time the update
would lose with the host infinitely fast.  The profiler slows the host (its Python
tracer), so the intervals are an upper bound: compare the span with the event time that
``host_gaps.py`` measures.
"""
import json
import os
import sys
import tempfile

import cupy as cp
import torch  # noqa: F401  (the profiler; its CUDA context is CuPy's, the device's primary)
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
from host_gaps import paper_cell, setup  # noqa: E402

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATS = ("cuda_runtime", "cuda_driver")


def trace(f):
    """The chrome trace's events of one call of f (the GPU synchronised at the end)."""
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 with_stack=True) as prof:
        f()
        cp.cuda.Device().synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            return json.load(fh)["traceEvents"]


def qrlab_stack(py, t):
    """The innermost qrlab and host_gaps frames of the Python functions running at t."""
    frames = [e for e in py if e["ts"] <= t <= e["ts"] + e.get("dur", 0)]
    frames.sort(key=lambda e: e["ts"])
    names = [e["name"] for e in frames
             if "qrlab" in e["name"] or "host_gaps" in e["name"]]
    return " < ".join(n.split("/")[-1] for n in reversed(names[-4:]))


def report(events, gap_us=10.0):
    gpu = sorted((e for e in events if e.get("cat") in GPU_CATS and "dur" in e),
                 key=lambda e: e["ts"])
    api = [e for e in events if e.get("cat") in API_CATS and "dur" in e]
    py = [e for e in events if e.get("cat") == "python_function" and "dur" in e]
    by_corr = {e.get("args", {}).get("correlation"): e for e in api}
    # from the update's own call (the profiler's start-up queues API calls before it)
    calls = [e["ts"] for e in py if "host_gaps" in e["name"]]
    t0 = min(calls) if calls else min(e["ts"] for e in api)
    end = max(e["ts"] + e["dur"] for e in gpu)
    busy, last = 0.0, t0
    lines = []
    for e in gpu:
        s, d = e["ts"], e["dur"]
        if s - last > gap_us:
            call = by_corr.get(e.get("args", {}).get("correlation"))
            at = call["ts"] if call else s
            lines.append("  idle %7.1f us from %7.1f: then %s (%s queued at %.1f) by %s"
                         % (s - last, last - t0, e["name"][:50],
                            call["name"] if call else "?", at - t0, qrlab_stack(py, at)))
        busy += max(0.0, s + d - max(s, last))
        last = max(last, s + d)
    idle = sum(float(x.split()[1]) for x in lines)
    print("  span %.1f us, GPU busy %.1f us, %d GPU activities, %d idle intervals over "
          "%.0f us adding to %.1f us" % (end - t0, busy, len(gpu), len(lines), gap_us, idle))
    print("\n".join(lines), flush=True)


def main(argv):
    dt, cells = argv[0], argv[1:]
    for i in range(0, len(cells), 5):
        key = (cells[i],) + tuple(int(v) for v in cells[i + 1:i + 5])
        update = setup(paper_cell(key), dt)
        for _ in range(3):
            update()
        cp.cuda.Device().synchronize()
        print(dt, *key, flush=True)
        report(trace(update))


if __name__ == "__main__":
    main(sys.argv[1:])
