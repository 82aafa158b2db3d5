"""Where the time of the structured Cholesky update goes: the chain, the blocks' own work
and the apply's tail, from globaltimer stamps of every thread block.

    PYTHONPATH=. python benchmarks/profile_structured.py [--n 5000 10000] [--k 1 16 64]
                                                         [--growth-max 0] [--out FILE.md]

Runs ``qrlab.cholesky_update`` (into a new array: the solve and the apply in one launch,
``qrlab/kernels/structured.cu``) with the kernels built with ``-DQRLAB_PHASE_TIMES``, so
that each block records when it reaches each phase.  Per case, the median over --reps
calls after one to warm up (each with fresh V and the L2 cache flushed) of, in
microseconds from the first block's start:

* ``set up``: block 0 has R_00^{-1}, M2 and Mx (every block makes its own at its start);
* ``first P``, ``last P``: blocks 0 and nb - 1 publish P; ``step``: the median and 90th
  percentile of the time between two blocks' P (the chain's step);
* ``loop early``: the median of (block C's loop over J < C - 2 done) minus (P_{C-1}
  published): negative when the block is ready before the chain reaches it;
* ``F work``: the median time a block spends after its P (G, S, its factor of M, F);
* ``last F``: the last block's F published;
* ``apply end``: the last job of the apply done, ``last job start``: when the job that ended
  last started (where it started after ``last P``, the apply was behind the chain);
* ``call``: the whole call (CUDA events; the stamps add a few percent).

With ``--jobs``, after each case: every 25 us of the last call, the blocks of the solve and
the apply's jobs running, the jobs started and done; how many jobs started after the last
P, and their median time per 32 rows.  With ``--parts``, after each case: the median over
the last call's jobs of the nanoseconds a group of 32 rows spends in each part of the
apply's loop (``structured_parts``: the flags and first barrier, the stash and next loads,
the Z product, the output product and its stores; for k = 1 in float32 the Z update is
part of the output's pass, ``st_apply_rank1``), for all jobs and for those that
started after the last P; and the median time of each part of the solve's blocks' work
after their P (G, then S's factor and X, then C's factor, Wm and F).  With ``--chain``
(k = 1), after each case, the median over the calls of the median over blocks C >= 3 of
the parts of a step of the chain, from thread 0's stamps (``structured_chain``): ``loop
lag``, block C's loop over J < C - 2 has P_{C-3} after block C - 3 sent it; ``loop to
wait``, from then until block C starts to wait for P_{C-1}; ``wait - sent``, that start
less block C - 1's sending of P_{C-1} (positive: the block came late to its step);
``hand-off``, block C has P_{C-1} after it was sent; ``look``, the wait itself;
``product``, from having P_{C-1} to P_C sent; and when the report (the word that the
host waits for) was written, and how long before the apply's end.
"""
import argparse
import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import qrlab  # noqa: E402
import qrlab.gpu as gpu  # noqa: E402
from cholesky_bench import Clock  # noqa: E402
from profile_panels import timed_kernels  # noqa: E402  (the module built with the stamps)
from qrlab.backend import gpu_name  # noqa: E402

COLUMNS = ["set up", "first P", "last P", "step", "step p90", "loop early", "F work",
           "last F", "apply end", "last job start", "call"]


PARTS = ["flags", "stash", "Z", "out"]
CHAIN = ["loop lag", "loop to wait", "wait - sent", "hand-off", "look", "product", "report",
         "report to apply end"]


def stamped_kernels():
    """qrlab's kernels built with -DQRLAB_PHASE_TIMES, their stamps (ticket x 8), the
    apply's cycles by part (ticket x 8), the chain's stamps (ticket x 4) and the report's."""
    mod = timed_kernels()
    return (mod, cp.ndarray((16384, 8), cp.uint64, mod.get_global("structured_stamps")),
            cp.ndarray((16384, 8), cp.int64, mod.get_global("structured_parts")),
            cp.ndarray((16384, 4), cp.uint64, mod.get_global("structured_chain")),
            cp.ndarray((1,), cp.uint64, mod.get_global("structured_reported")))


def chain_step(steps, reported, apply_end):
    """The parts of the k = 1 chain's step (CHAIN, microseconds; see --chain) from the
    chain's stamps of the solve's blocks and the report's (microseconds from the first
    block's start; NaN where a block left a stamp out: its loop takes P_{C-3} from P, not
    from its words, where it found it ready early)."""
    wait, have, sent, loop = (steps[:, i] for i in range(4))
    parts = [loop[3:] - sent[:-3], wait[3:] - loop[3:], wait[3:] - sent[2:-1],
             have[3:] - sent[2:-1], have[3:] - wait[3:], sent[3:] - have[3:]]
    return dict(zip(CHAIN, [float(np.nanmedian(x)) for x in parts]
                    + [reported, apply_end - reported]))


def parts(solve, apply, cycles):
    """Lines: the median ns a group of 32 rows spends in each part of the apply's loop."""
    nb = len(solve)
    c = cycles[nb:nb + len(apply)].astype(float)
    ns = c[:, :4] / np.maximum(c[:, 4:5], 1) / cp.cuda.Device().attributes["ClockRate"] * 1e6
    rows = c[:, 4] > 0
    late = rows & (apply[:, 0] > solve[-1, 3])
    lines = []
    for name, pick in (("all jobs", rows), ("jobs started after the last P", late)):
        if pick.any():
            lines.append(f"    {name} ({int(pick.sum())}), ns a group: " + ", ".join(
                f"{p} {np.median(ns[pick, i]):.0f}" for i, p in enumerate(PARTS))
                + f"; sum {np.median(ns[pick].sum(axis=1)):.0f}")
    return lines


def f_work(solve):
    """A line: the median us of each part of the solve's blocks' work after their P."""
    spans = (("G", 3, 4), ("S, its factor and X", 4, 7), ("C's factor, Wm and F", 7, 5))
    return "    F work of the solve's blocks (median us): " + ", ".join(
        f"{name} {np.median(solve[:, b] - solve[:, a]):.1f}" for name, a, b in spans)


def one_call(R, V, stamps, clock, chain=None):
    """The phases of one update (a dict of COLUMNS, microseconds; and of CHAIN where
    ``chain`` holds the chain's and the report's stamps), and the stamps of the solve's
    blocks and of the apply's jobs (microseconds from the first block's start)."""
    n = R.shape[0]
    nb = -(-n // 64)
    stamps.fill(0)
    ms, _ = clock(lambda: qrlab.cholesky_update(R, V))
    s = stamps.get().astype(np.int64)
    used = int((s[:, 0] > 0).sum())
    if used <= nb:
        raise RuntimeError("no stamps of the apply: the update did not run in one stamped launch")
    start = s[:used, 0].min()
    s = np.where(s > 0, s - start, -1)[:used] / 1e3
    solve, apply = s[:nb], s[nb:]
    last_job = int(np.argmax(apply[:, 6]))
    steps = {}
    if chain is not None:
        raw = chain[0].get()[:nb].astype(np.int64)
        steps = chain_step(np.where(raw > 0, (raw - start) / 1e3, np.nan),
                           (int(chain[1].get()[0]) - start) / 1e3, apply[:, 6].max())
    return steps | {"set up": solve[0, 1], "first P": solve[0, 3], "last P": solve[-1, 3],
            "step": np.median(np.diff(solve[:, 3])),
            "step p90": np.percentile(np.diff(solve[:, 3]), 90),
            "loop early": np.median(solve[1:, 2] - solve[:-1, 3]),
            "F work": np.median(solve[:, 5] - solve[:, 3]), "last F": solve[-1, 5],
            "apply end": apply[:, 6].max(), "last job start": apply[last_job, 0],
            "call": 1e3 * ms}, (solve, apply)


def jobs(solve, apply, table):
    """Lines: the solve's blocks and the apply's jobs over one call (see --jobs)."""
    lines = []
    for t in np.arange(0, apply[:, 6].max() + 1, 25):
        running = [int(((x[:, 0] <= t) & (x[:, 6] > t)).sum()) for x in (solve, apply)]
        started = int((apply[:, 0] <= t).sum())
        done = int(((apply[:, 6] >= 0) & (apply[:, 6] <= t)).sum())
        lines.append(f"    t {t:5.0f} us: solve {running[0]:4d}, apply {running[1]:4d} "
                     f"running, {started:5d} jobs started, {done:5d} done")
    late = apply[:, 0] > solve[-1, 3]
    groups = (table[:, 3] - table[:, 2]) / 32
    per = np.median((apply[late, 6] - apply[late, 0]) / groups[late]) if late.any() else 0
    lines.append(f"    {int(late.sum())} of {len(table)} jobs started after the last P, "
                 f"{per:.2f} us a group of 32 rows (median)")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[5000, 10000])
    p.add_argument("--k", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    p.add_argument("--reps", type=int, default=8)
    p.add_argument("--growth-max", type=float, default=gpu.GpuExecutor.growth_max,
                   help="the growth test (GpuExecutor.growth_max; 0: none)")
    p.add_argument("--jobs", action="store_true", help="also the apply's jobs over a call")
    p.add_argument("--parts", action="store_true",
                   help="also the time of each part of the apply's loop")
    p.add_argument("--chain", action="store_true",
                   help="also the parts of a step of the chain (k = 1 only)")
    p.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = p.parse_args(argv)
    gpu.GpuExecutor.growth_max = args.growth_max
    if any(k > gpu.GpuExecutor.structured_k_max for k in args.k):
        p.error(f"k must be at most {gpu.GpuExecutor.structured_k_max} (one launch)")
    if args.chain and args.k != [1]:
        p.error("--chain: the chain's stamps are those of k = 1 (give --k 1)")
    mod, stamps, cycles, chain, reported = stamped_kernels()
    gpu.kernels = lambda: mod            # (before the first update: the plans cache them)
    clock = Clock(cp)                    # (it flushes L2 before each call)
    lines = [f"Phases of one structured update, us from the first block's start (median of "
             f"{args.reps}; growth test {args.growth_max:g}; {gpu_name()})", "",
             "| dtype | n | k | " + " | ".join(COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(COLUMNS)]
    print("\n".join(lines), flush=True)
    for name in args.dtypes:
        dtype = np.dtype(name)
        for n in args.n:
            X = cp.random.standard_normal((n, n), dtype=dtype)
            R = cp.ascontiguousarray(cp.linalg.cholesky(X.T @ X / n + cp.eye(n, dtype=dtype)).T)
            del X
            for k in args.k:
                runs = []
                for rep in range(args.reps + 1):          # (the first one warms up)
                    V = cp.random.standard_normal((n, k), dtype=dtype)
                    if args.chain:
                        chain.fill(0)
                    phases, last = one_call(R, V * (0.9 / cp.linalg.norm(V)), stamps,
                                            clock, (chain, reported) if args.chain else None)
                    if rep > 0:
                        runs.append(phases)
                row = (f"| {name} | {n} | {k} | " + " | ".join(
                    f"{statistics.median(r[c] for r in runs):.1f}" for c in COLUMNS) + " |")
                lines.append(row)
                print(row, flush=True)
                if args.chain:
                    print("    chain's step (median us): " + ", ".join(
                        f"{c} {statistics.median(r[c] for r in runs):.2f}" for c in CHAIN),
                        flush=True)
                if args.parts:
                    print("\n".join(parts(*last, cycles.get()) + [f_work(last[0])]),
                          flush=True)
                if args.jobs:
                    table = gpu._structured_table(n, dtype.itemsize, cp.cuda.Device().id,
                                                  True).get()
                    print("\n".join(jobs(*last, table)), flush=True)
    if args.out:
        options = [a for a in sys.argv[1:] if a not in ("--out", str(args.out))]
        args.out.write_text("Command: `python3 benchmarks/profile_structured.py "
                            + " ".join(options + ["--out", "..."]) + "`\n\n"
                            + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
