"""Time qrlab's rank-k Cholesky update/downdate against recomputing the factor.

On a GPU (CuPy), for each dtype, n and k, with device-resident data and CUDA events:

* t_update, t_downdate: ``qrlab.cholesky_update`` (blocked method, default settings) on R
  and V: on a GPU, the structured method (one launch into a new array per 64 columns of
  V, ``qrlab/kernels/structured.cu``) where ``GpuExecutor.structured_passes`` takes it,
  else one cooperative launch for the whole update (``qrlab/kernels/triangle.cu``,
  panels of 32, V's columns in pipelined chunks);
* t_update_chain: where the structured method runs, the same update by the chain of
  reflectors of ``triangle.cu`` (``GpuExecutor.structured_k_max = 0``), the path before
  the structured one;
* t_update_per_panel: where the update runs as one launch, the same update with one
  ``reflect_panel`` launch per panel (``GpuExecutor.one_launch = False``);
* t_update_arrayops: the same update by array-operation panels of --block-size (default
  256 on CuPy; a Cholesky factorization per panel, then matrix products), for
  n <= --arrayops-max-n;
* t_recompute_incl: ``A_new = A +- V V^T`` and ``cupy.linalg.cholesky(A_new)``;
* t_recompute_excl: ``cupy.linalg.cholesky(A_new)`` alone (A_new formed beforehand);
* host baselines for n <= --cpu-max-n: SciPy's ``scipy.linalg.cholesky(A_new)`` (forming
  A_new included) and qrlab's blocked update on NumPy (NumPy's default block size);
* the floor ``max(bytes / copy bandwidth, flops / GEMM rate)``, both rates measured in the
  same run, and t_update / floor. Bytes: R's upper triangle read once and written once,
  and W = V^T (k x trailing columns) read and written once per panel; flops
  ``(2 k + b) n^2`` (see the Notes of ``qrlab.cholesky.cholesky_update``).

Every repetition uses a fresh V (R and A are made once per dtype and n: A = X^T X / n + I,
R its Cholesky factor), and a 256 MiB buffer is rewritten before each timed call so no
case starts with its data in the L2 cache. V is scaled to ||V||_F = 0.9 so that
A - V V^T stays positive definite (the eigenvalues of A are >= 1): the same V serves the
update and the downdate. Each time is the median of --reps runs after one warm-up run.

Prints a markdown table and writes JSON to --out.

Usage (GPU):   python3 benchmarks/cholesky_bench.py --out benchmarks/cholesky_h100.json
Split a long run: ... --dtypes float64 --n 10000 20000
Check on a CPU: python3 benchmarks/cholesky_bench.py --cpu --small --out /tmp/c.json
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from qrlab.backend import executor_for, gpu_name  # noqa: E402
from qrlab.cholesky import DEFAULT_BLOCK_SIZE, cholesky_update  # noqa: E402

GPU_N = (1000, 2000, 5000, 10000, 20000)
GPU_K = (1, 16, 64, 256)
SMALL_N = (100, 300, 1000)
SMALL_K = (1, 16, 64)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu", action="store_true", help="run on NumPy instead of CuPy")
    p.add_argument("--small", action="store_true",
                   help=f"small sizes: n in {SMALL_N}, k in {SMALL_K}")
    p.add_argument("--n", type=int, nargs="+", help=f"sizes n (default {GPU_N})")
    p.add_argument("--k", type=int, nargs="+", help=f"ranks k (default {GPU_K})")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"],
                   choices=["float32", "float64"])
    p.add_argument("--reps", type=int, default=5, help="timed repetitions (median; >= 5)")
    p.add_argument("--block-size", type=int, default=None,
                   help=f"panel width of the blocked method (default {DEFAULT_BLOCK_SIZE})")
    p.add_argument("--cpu-max-n", type=int, default=5000,
                   help="largest n for the host baselines on a GPU run (default 5000)")
    p.add_argument("--arrayops-max-n", type=int, default=5000,
                   help="largest n for timing the array-operation panels (default 5000)")
    p.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = p.parse_args(argv)
    args.n = args.n or (SMALL_N if args.small else GPU_N)
    args.k = args.k or (SMALL_K if args.small else GPU_K)
    return args


class Clock:
    """Time a callable on the array module's device: CUDA events on CuPy, perf_counter on NumPy."""

    def __init__(self, xp):
        self.xp = xp
        self.gpu = xp.__name__ == "cupy"
        # Rewritten before every timed call, so that no case starts with a warm L2 cache.
        self.flush_buf = xp.empty(256 * 2**20 // 4, dtype=xp.float32)

    def sync(self):
        if self.gpu:
            self.xp.cuda.Device().synchronize()

    def __call__(self, fn):
        """Run fn once; return (milliseconds, fn's result)."""
        self.flush_buf.fill(1.0)
        if self.gpu:
            start, end = self.xp.cuda.Event(), self.xp.cuda.Event()
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            return self.xp.cuda.get_elapsed_time(start, end), out
        t0 = time.perf_counter()
        out = fn()
        return 1e3 * (time.perf_counter() - t0), out


def median_ms(clock, make_inputs, fn, reps):
    """Median time of fn(*make_inputs()) over reps runs after one warm-up; inputs untimed."""
    times = []
    for rep in range(reps + 1):
        inputs = make_inputs()
        clock.sync()
        ms, _ = clock(lambda: fn(*inputs))
        if rep > 0:
            times.append(ms)
    return statistics.median(times), times


def copy_bandwidth(xp, clock, nbytes=2**30):
    """Bytes per second of a large device-to-device copy, counting reads and writes."""
    src = xp.ones(nbytes // 4, dtype=xp.float32)
    dst = xp.empty_like(src)
    ms, _ = median_ms(clock, lambda: (), lambda: dst.__setitem__(Ellipsis, src), 5)
    return 2 * nbytes / (ms * 1e-3)


def gemm_rate(xp, clock, dtype, size):
    """Flops per second of a square matrix product in dtype."""
    a = xp.ones((size, size), dtype=dtype)
    ms, _ = median_ms(clock, lambda: (), lambda: a @ a, 5)
    return 2 * size**3 / (ms * 1e-3)


def floor_counts(n, k, b, itemsize):
    """(bytes, flops) that the blocked update must move and compute at least."""
    trailing = sum(n - min(j0 + b, n) for j0 in range(0, n, b))   # sum of m over panels
    bytes_ = itemsize * (n * (n + 1) + 2 * k * trailing)
    flops = (2 * k + b) * n * n
    return bytes_, flops


def randn(xp, rng, shape, dtype):
    """Standard normal numbers made on the device that will use them."""
    if xp is np:
        return rng.standard_normal(shape).astype(dtype)
    return xp.random.standard_normal(shape, dtype=dtype)


def run_case(xp, clock, dtype, n, ks, args, rng, rates):
    """All timings for one dtype and n, for each k; returns a list of result dicts."""
    X = randn(xp, rng, (n, n), dtype)
    A = X.T @ X / n + xp.eye(n, dtype=dtype)   # eigenvalues >= 1
    del X
    R = xp.ascontiguousarray(xp.linalg.cholesky(A).T)
    b = min(n, args.block_size or DEFAULT_BLOCK_SIZE[xp.__name__])
    results = []
    executor = executor_for(xp)
    for k in ks:
        # the default path: fused panels on a GPU unless a block size is asked for
        fused = args.block_size is None and executor.fuses_triangle(np.dtype(dtype), k)
        once = fused and executor.launches_once(np.dtype(dtype))
        b_run = None if fused else b
        b_floor = min(n, 32 if once else executor.panel_width(k, np.dtype(dtype))) if fused else b
        def fresh_v():
            V = randn(xp, rng, (n, k), dtype)
            return V * (0.9 / xp.linalg.norm(V))

        def with_a_new(sign):
            def make():
                V = fresh_v()
                return (A + sign * (V @ V.T),)
            return make

        passes = executor.structured_passes(np.dtype(dtype), n, k) if once else 0
        structured = passes > 0
        res = {"dtype": np.dtype(dtype).name, "n": n, "k": k, "block_size": b_floor,
               "path": ("structured" if passes == 1 else f"structured, {passes} passes"
                        if structured else "one launch" if once
                        else "fused" if fused else "array operations")}
        res["t_update_ms"], res["t_update_all"] = median_ms(
            clock, lambda: (R, fresh_v()),
            lambda R_, V: cholesky_update(R_, V, block_size=b_run), args.reps)
        res["t_downdate_ms"], res["t_downdate_all"] = median_ms(
            clock, lambda: (R, fresh_v()),
            lambda R_, V: cholesky_update(R_, V, downdate=True, block_size=b_run), args.reps)
        # the other fused paths, by a class setting of the executor for the one timing
        for key, run_it, setting, value in (
                ("t_update_chain_ms", structured, "structured_k_max", 0),
                ("t_update_per_panel_ms", once, "one_launch", False)):
            if run_it:
                saved = getattr(type(executor), setting)
                setattr(type(executor), setting, value)
                try:
                    res[key], _ = median_ms(clock, lambda: (R, fresh_v()),
                                            lambda R_, V: cholesky_update(R_, V), args.reps)
                finally:
                    setattr(type(executor), setting, saved)
        if fused and n <= args.arrayops_max_n:
            res["t_update_arrayops_ms"], _ = median_ms(
                clock, lambda: (R, fresh_v()),
                lambda R_, V: cholesky_update(R_, V, block_size=b), args.reps)
        res["t_recompute_incl_ms"], _ = median_ms(
            clock, lambda: (fresh_v(),), lambda V: xp.linalg.cholesky(A + V @ V.T), args.reps)
        res["t_recompute_excl_ms"], _ = median_ms(
            clock, with_a_new(+1), lambda A_new: xp.linalg.cholesky(A_new), args.reps)

        nbytes, flops = floor_counts(n, k, b_floor, np.dtype(dtype).itemsize)
        res["floor_bytes"], res["floor_flops"] = nbytes, flops
        res["floor_ms"] = 1e3 * max(nbytes / rates["copy_bytes_per_s"],
                                    flops / rates[f"gemm_flops_per_s_{res['dtype']}"])
        res["update_over_floor"] = res["t_update_ms"] / res["floor_ms"]
        res["recompute_incl_over_update"] = res["t_recompute_incl_ms"] / res["t_update_ms"]

        if xp is not np and n <= args.cpu_max_n:
            b_host = min(n, args.block_size or DEFAULT_BLOCK_SIZE["numpy"])
            res["cpu_block_size"] = b_host
            res.update(host_baselines(R, A, fresh_v, b_host, args.reps))
        results.append(res)
        print(table_row(res), flush=True)
    return results


def host_baselines(R, A, fresh_v, b, reps):
    """SciPy's recomputation and qrlab's blocked update, on host copies (perf_counter)."""
    import scipy.linalg

    clock = Clock(np)
    R_h, A_h = R.get(), A.get()
    out = {}
    out["t_cpu_scipy_recompute_ms"], _ = median_ms(
        clock, lambda: (fresh_v().get(),),
        lambda V: scipy.linalg.cholesky(A_h + V @ V.T, lower=False, check_finite=False), reps)
    out["t_cpu_qrlab_blocked_ms"], _ = median_ms(
        clock, lambda: (fresh_v().get(),),
        lambda V: cholesky_update(R_h, V, block_size=b, check_finite=False), reps)
    return out


COLUMNS = [("dtype", "dtype", "{}"), ("n", "n", "{}"), ("k", "k", "{}"),
           ("update ms", "t_update_ms", "{:.3g}"), ("downdate ms", "t_downdate_ms", "{:.3g}"),
           ("update ms, chain of reflectors", "t_update_chain_ms", "{:.3g}"),
           ("update ms, per-panel launches", "t_update_per_panel_ms", "{:.3g}"),
           ("update ms, array-op panels", "t_update_arrayops_ms", "{:.3g}"),
           ("recompute incl ms", "t_recompute_incl_ms", "{:.3g}"),
           ("recompute excl ms", "t_recompute_excl_ms", "{:.3g}"),
           ("floor ms", "floor_ms", "{:.3g}"), ("update/floor", "update_over_floor", "{:.3g}"),
           ("recompute/update", "recompute_incl_over_update", "{:.3g}"),
           ("CPU scipy ms", "t_cpu_scipy_recompute_ms", "{:.3g}"),
           ("CPU qrlab ms", "t_cpu_qrlab_blocked_ms", "{:.3g}")]


def table_header():
    return ("| " + " | ".join(c[0] for c in COLUMNS) + " |\n"
            + "|" + "---|" * len(COLUMNS))


def table_row(res):
    return "| " + " | ".join(fmt.format(res[key]) if key in res else "-"
                             for _, key, fmt in COLUMNS) + " |"


def main(argv=None):
    args = parse_args(argv)
    if args.reps < 5:
        print(f"note: --reps {args.reps} is below the 5 the conventions ask for", flush=True)
    if args.cpu:
        xp = np
        device = f"CPU ({platform.processor() or platform.machine()}), NumPy {np.__version__}"
    else:
        import cupy as xp
        device = f"{gpu_name()}, CuPy {xp.__version__}"
    clock = Clock(xp)
    rng = np.random.default_rng(20101104)          # seed 004's date
    if not args.cpu:
        xp.random.seed(20101104)
    rates = {"copy_bytes_per_s": copy_bandwidth(xp, clock, 2**28 if args.cpu else 2**30)}
    for name in args.dtypes:
        rates[f"gemm_flops_per_s_{name}"] = gemm_rate(xp, clock, np.dtype(name),
                                                      1024 if args.cpu else 8192)
    print(f"device: {device}")
    print("rates: " + ", ".join(f"{key} {val:.3g}" for key, val in rates.items()))
    print(table_header(), flush=True)
    report = {"command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
              "device": device, "rates": rates, "reps": args.reps,
              "timer": "perf_counter" if args.cpu else "CUDA events",
              "results": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.dtypes:
        for n in args.n:
            report["results"] += run_case(xp, clock, np.dtype(name).type, n, args.k, args,
                                          rng, rates)
            args.out.write_text(json.dumps(report, indent=1))   # after each n: a cut-off
    print(f"wrote {args.out}")                                  # run keeps what it did


if __name__ == "__main__":
    main()
