"""Time cells of the papers' tables under several builds of qrlab, each in its own process.

    python3 benchmarks/ab_paper_cells.py --build base=/path/to/old --build new=. \\
        --rounds 2 [--dtype float32 --dtype float64] [--cell T10:12000:6000:20:0 ...]

A build is a directory holding a ``qrlab`` package and this ``benchmarks`` folder (a copy
of the repository at some commit, say).  Each round runs every build once, in turn, in a
fresh Python process with that directory first on ``sys.path``.  A process times each
cell's update as ``benchmarks/host_gaps.py`` runs it (the factors and the solve for x, on
the same inputs every call): CUDA events around the call, nothing queued before it, the
median of 9 calls after 3 warm-up calls.  The table gives, per cell, each build's
medians (one per round, so that a drift or a machine's slow spell shows) and the ratio
of the builds' medians over the rounds to the first build's.  Without ``--cell``: eleven
cells of Tables 2, 3, 5, 10 and 11 where the host's queueing shows (``host_gaps.py``).
"""
import argparse
import os
import statistics
import subprocess
import sys

CELLS = ["T2:4000:3000:200:3000", "T2:8000:3000:200:3000", "T5:5000:3000:100:2980",
         "T5:8000:3000:100:2980", "T3:8000:6000:200:6000", "T3:12000:6000:200:4500",
         "T10:12000:6000:20:0", "T10:12000:6000:100:0", "T10:12000:10000:80:0",
         "T11:8000:6000:100:0", "T11:16000:6000:20:0"]


def worker(root, dtypes, cells):
    sys.path[:0] = [root, os.path.join(root, "benchmarks")]
    import cupy as cp

    import qrlab
    from host_gaps import event_ms, paper_cell, setup
    if not os.path.abspath(qrlab.__file__).startswith(os.path.abspath(root) + os.sep):
        raise RuntimeError(f"qrlab came from {qrlab.__file__}, not from {root}")
    for dt in dtypes:
        for cell in cells:
            table, *dims = cell.split(":")
            update = setup(paper_cell((table, *map(int, dims))), dt)
            print(dt, cell, "%.3f" % event_ms(update, 9), flush=True)
            del update
            cp.get_default_memory_pool().free_all_blocks()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", default=[], help="NAME=DIR")
    ap.add_argument("--dtype", action="append")
    ap.add_argument("--cell", action="append", help="TABLE:M:N:P:K")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    dtypes, cells = args.dtype or ["float32", "float64"], args.cell or CELLS
    if args.worker:
        return worker(args.worker, dtypes, cells)
    if not args.build:
        ap.error("give at least one --build NAME=DIR")
    builds = [b.split("=", 1) for b in args.build]
    times = {}                                     # (dtype, cell, build) -> per round
    for _ in range(args.rounds):
        for name, root in builds:
            cmd = [sys.executable, __file__, "--worker", root]
            cmd += sum((["--dtype", d] for d in dtypes), []) + sum((["--cell", c]
                                                                     for c in cells), [])
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                dt, cell, ms = line.split()
                times.setdefault((dt, cell, name), []).append(float(ms))
    names = [name for name, _ in builds]
    print("| dtype | cell (table:m:n:p:k) | " + " | ".join(f"{n} ms" for n in names)
          + " | " + " | ".join(f"{n} / {names[0]}" for n in names[1:]) + " |")
    print("|---" * (2 + 2 * len(names) - 1) + "|")
    for dt in dtypes:
        for cell in cells:
            runs = [times[(dt, cell, n)] for n in names]
            base = statistics.median(runs[0])
            print(f"| {dt} | {cell} | "
                  + " | ".join(" ".join("%.2f" % t for t in r) for r in runs) + " | "
                  + " | ".join("%.3f" % (statistics.median(r) / base) for r in runs[1:]) + " |")


if __name__ == "__main__":
    main()
