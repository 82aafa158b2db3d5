"""Time qrlab's GPU Cholesky update under several builds, each in its own process.

    python benchmarks/ab_builds.py --build old=/path/to/old --build new=. \\
        --case float32:5000:64 --case float32:10000:256 --rounds 3 --reps 7

A build is a directory holding a ``qrlab`` package (a copy of the repository at some
commit, say).  Each round runs every build once, in turn, in a fresh Python process with
that directory first on ``sys.path``: kernels compiled from different sources never share
a process, where a module loaded earlier could be the one that runs.  Every process times
each case (cholesky_bench.py's Clock: CUDA events, the L2 cache flushed before each call, a
warm-up call first) on the same inputs (seeded), and measures the result's error against
the float64 update of the same inputs by the chain of reflectors (another algorithm, so
that float64 cases have an error to compare too).  The table gives, per build, the median
over the rounds of each round's median (and the rounds' medians, so that a drift shows),
that over the first build's, and the largest relative error seen.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def reference(cholesky_update, R, V):
    """The float64 update of R by V along the chain of reflectors (``kernels/triangle.cu``):
    an algorithm other than the structured one that the cases time, so that a float64
    case's error is not its difference from itself."""
    from qrlab.gpu import GpuExecutor
    saved = GpuExecutor.structured_k_max
    GpuExecutor.structured_k_max = 0
    try:
        return cholesky_update(R, V)
    finally:
        GpuExecutor.structured_k_max = saved


def worker(cases, reps):
    import cupy as cp

    import qrlab
    from qrlab.cholesky import cholesky_update
    # after qrlab: cholesky_bench puts this checkout first on sys.path, which must not
    # decide which build's qrlab is imported
    from cholesky_bench import Clock

    clock = Clock(cp)
    out = {"qrlab": os.path.dirname(qrlab.__file__), "cases": {}}
    for case in cases:
        dtype, n, k = case.split(":")
        n, k = int(n), int(k)
        rng = cp.random.RandomState(n * 1000 + k)
        X = rng.standard_normal((n, n))
        A = X.T @ X / n + cp.eye(n)
        R64 = cp.ascontiguousarray(cp.linalg.cholesky(A).T)
        del X, A
        R = R64.astype(dtype)
        times, errors = [], []
        for rep in range(reps + 1):
            V64 = rng.standard_normal((n, k))
            V64 *= 0.9 / cp.linalg.norm(V64)
            V = V64.astype(dtype)
            clock.sync()
            ms, got = clock(lambda: cholesky_update(R, V))
            if rep:
                times.append(ms)
            ref = reference(cholesky_update, R.astype(cp.float64), V.astype(cp.float64))
            errors.append(float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref)))
        out["cases"][case] = {"ms": times, "err": max(errors)}
    print("RESULT " + json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", default=[], help="name=directory")
    ap.add_argument("--case", action="append", default=[], help="dtype:n:k")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.case, args.reps)
    builds = [b.split("=", 1) for b in args.build]
    runs = {name: {} for name, _ in builds}
    errs = {name: {} for name, _ in builds}
    for r in range(args.rounds):
        # each round in another order, so that no build always runs first (after the
        # machine idled) or last
        for name, path in builds[r % len(builds):] + builds[:r % len(builds)]:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--reps",
                   str(args.reps)] + [a for c in args.case for a in ("--case", c)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  cwd=os.path.abspath(path))
            line = [s for s in proc.stdout.splitlines() if s.startswith("RESULT ")]
            if proc.returncode or not line:
                sys.exit(f"build {name} failed:\n{proc.stdout}\n{proc.stderr}")
            res = json.loads(line[-1][7:])
            for case, v in res["cases"].items():
                runs[name].setdefault(case, []).append(statistics.median(v["ms"]))
                errs[name][case] = max(errs[name].get(case, 0.0), v["err"])
            # as it goes, so that a run cut off by a time limit keeps what it measured
            print(f"round {r} {name} ({res['qrlab']}): " + ", ".join(
                f"{case} {runs[name][case][-1]:.4g} ms" for case in res["cases"]), flush=True)
    base = builds[0][0]
    print("median over rounds of each round's median ms; [each round's, in round order]")
    print("| case | " + " | ".join(f"{n} ms | {n}/{base} | {n} err" for n, _ in builds) + " |")
    print("|---" * (1 + 3 * len(builds)) + "|")
    for case in args.case:
        cells = []
        b0 = statistics.median(runs[base][case])
        for name, _ in builds:
            m = statistics.median(runs[name][case])
            rounds = " ".join(f"{x:.3g}" for x in runs[name][case])
            cells += [f"{m:.4g} [{rounds}]", f"{m / b0:.3f}", f"{errs[name][case]:.1e}"]
        print(f"| {case} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
