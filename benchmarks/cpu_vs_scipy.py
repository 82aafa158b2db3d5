"""qrlab's NumPy executor against SciPy's compiled updates, on the CPU, same run.

    python benchmarks/cpu_vs_scipy.py [--m 4000 --n 2000 --reps 3] > benchmarks/results/cpu-vs-scipy.md

Each update at m x n, p in {1, 16, 128}, k in {0, n/2}; full Q; median of --reps runs,
fresh random block each run, factorization computed once per shape.  SciPy's qr_insert /
qr_delete handle a block of p columns or rows as p single updates (compiled Givens
loops); qrlab handles the block at once (Householder panels, Givens sweeps accumulated
into matrix products) but from Python.
"""
import argparse
import os
import platform
import statistics
import time

import numpy as np
import scipy.linalg as sl

import qrlab


def median_time(fn, make, reps):
    fn(*make())
    times = []
    for _ in range(reps):
        args = make()
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=4000)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ps", default="1,16,128")
    args = ap.parse_args()
    m, n = args.m, args.n
    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, n))
    Q, R = sl.qr(A)
    print(f"# qrlab (NumPy) vs SciPy {sl.__name__.split('.')[0]} on the CPU\n")
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"NumPy {np.__version__}, float64, m={m}, n={n}, full Q, median of {args.reps}.\n")
    print("| update | p | k | qrlab ms | SciPy ms | SciPy / qrlab |")
    print("|---|---|---|---|---|---|")
    for p in map(int, args.ps.split(",")):
        for k in (0, n // 2):
            cases = {
                "insert columns": (lambda U: qrlab.qr_insert(Q, R, U, k, "col"),
                                   lambda U: sl.qr_insert(Q, R, U, k, "col"),
                                   lambda: (rng.standard_normal((m, p)),)),
                "remove columns": (lambda: qrlab.qr_delete(Q, R, k, p, "col"),
                                   lambda: sl.qr_delete(Q, R, k, p, "col"), lambda: ()),
                "insert rows": (lambda U: qrlab.qr_insert(Q, R, U, k, "row"),
                                lambda U: sl.qr_insert(Q, R, U, k, "row"),
                                lambda: (rng.standard_normal((p, n)),)),
                "remove rows": (lambda: qrlab.qr_delete(Q, R, k, p, "row"),
                                lambda: sl.qr_delete(Q, R, k, p, "row"), lambda: ()),
            }
            for name, (ours, theirs, make) in cases.items():
                a = median_time(ours, make, args.reps)
                b = median_time(theirs, make, args.reps)
                print(f"| {name} | {p} | {k} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
