"""The apply kernel of the Givens sweeps (``kernels/sweeps.cu``) against other versions of
that file, or the executor with an attribute set otherwise, on cells of the paper suite,
interleaved in one process.

    git show REV:qrlab/kernels/sweeps.cu > /tmp/base_sweeps.cu
    python3 benchmarks/ab_apply.py float64 T2,T3,T5,T10,T11 base=/tmp/base_sweeps.cu > f64.log
    python3 benchmarks/ab_apply.py float32 T2,T3 geqrf@tall_w_max=0 > f32.log
    python3 benchmarks/ab_apply.py --summarize f32.log f64.log

Each file named ``NAME=FILE.cu`` is compiled into a module of its own (with ``vector.cuh``
and ``flags.cuh`` of this checkout), which serves the apply kernel (and
``wait_for_waves``) while that build runs; every other kernel is this checkout's.
``NAME@ATTR=VALUE`` is this checkout with ``GpuExecutor.ATTR`` set to the integer
``VALUE`` while it runs; ``new`` is this checkout alone.  For
every cell of the given tables whose update applies sweeps, the update of ``t_update``
(the factors and the solve) timed by every build, repetition by repetition in turn (7 each
after two warm-up calls of each; CUDA events; the median), and the builds' solutions x of
the same inputs compared with the first build's (their largest difference, relative to
x's largest entry).  ``--summarize`` (no GPU) turns such logs into a markdown table of
each build's time over the first build's.
"""
import re
import statistics
import sys
from pathlib import Path

LINE = re.compile(r"(\w+) (T\d+) m=(\d+) n=(\d+) p=(\d+) k=(\d+): (.*)")
SWEEPS = ("insert_cols", "delete_rows")
APPLY = ("apply_sweeps_", "wait_for_waves")


def measure(dtype, tables, specs, reps=7):
    import cupy as cp

    import qrlab.bench as qb
    from qrlab import gpu
    kernels = gpu.kernels
    here = Path(gpu.__file__).with_name("kernels")

    def mixed(path):                      # that file's apply kernel, this checkout's others
        module = cp.RawModule(code="\n".join([(here / "vector.cuh").read_text(),
                                               (here / "flags.cuh").read_text(),
                                               Path(path).read_text()]),
                              options=("-std=c++17",))

        class Mixed:
            def get_function(self, name):
                return (module if name.startswith(APPLY) else kernels()).get_function(name)
        build = Mixed()
        return lambda: build

    builds, attrs = {}, {}
    for spec in specs:
        if "@" in spec:
            name, setting = spec.split("@", 1)
            attr, value = setting.split("=", 1)
            builds[name], attrs[name] = kernels, (attr, int(value))
        else:
            name, path = spec.split("=", 1)
            builds[name] = mixed(path)
    builds["new"] = kernels
    names = list(builds)
    times, last = {}, {}
    defaults = {attr: getattr(gpu.GpuExecutor, attr) for attr, _ in attrs.values()}

    def use(name):
        gpu.kernels = builds[name]
        for attr, value in defaults.items():
            setattr(gpu.GpuExecutor, attr, value)
        if name in attrs:
            setattr(gpu.GpuExecutor, *attrs[name])

    def interleaved(self, fn, prepare, reps):
        if getattr(fn, "__name__", "") != "update":     # only the update is compared
            return 1.0, [1.0]
        times.update(qb.interleaved_times(
            cp, fn, prepare, {name: (lambda n=name: use(n)) for name in names}, reps))
        args = prepare()
        for name in names:
            use(name)
            last[name] = fn(*args)
        use("new")
        return 1.0, [1.0]

    qb.Timer.__call__ = interleaved
    for case in qb.paper_cases(False):
        if case["table"] not in tables or case["op"] not in SWEEPS:
            continue
        times.clear()
        qb.run_case(cp, case, dtype, reps)
        first = last[names[0]]
        scale = float(cp.abs(first).max())
        print(f"{dtype} {case['table']} m={case['m']} n={case['n']} p={case['p']} "
              f"k={case['k']}: " + " ".join(
                  f"{name} {statistics.median(times[name]):.2f} "
                  f"{float(cp.abs(last[name] - first).max()) / scale:.1e}" for name in names),
              flush=True)


def summarize(paths):
    rows, ratios = [], {}
    for path in paths:
        for line in open(path):
            hit = LINE.match(line)
            if not hit:
                continue
            *cell, rest = hit.groups()
            words = rest.split()
            builds = words[0::3]
            ms = [float(w) for w in words[1::3]]
            diffs = [float(w) for w in words[2::3]]
            rows.append((cell, builds, ms, diffs))
            for name, t in zip(builds[1:], ms[1:]):
                ratios.setdefault((cell[0], name), []).append(t / ms[0])
    builds = rows[0][1]
    print("| dtype | table | m | n | p | k | " + " | ".join(f"{b} ms" for b in builds)
          + " | " + " | ".join(f"{b} / {builds[0]}" for b in builds[1:])
          + " | x differs by at most |")
    print("|---" * (6 + 2 * len(builds)) + "|")
    for cell, _, ms, diffs in rows:
        print("| " + " | ".join(cell) + " | " + " | ".join(f"{t:.2f}" for t in ms) + " | "
              + " | ".join(f"{t / ms[0]:.3f}" for t in ms[1:]) + f" | {max(diffs):.1e} |")
    print()
    for (dtype, name), r in ratios.items():
        print(f"- {dtype}, {name} / {builds[0]}: {min(r):.3f} to {max(r):.3f} "
              f"(median {statistics.median(r):.3f}, {len(r)} cells)")


if __name__ == "__main__":
    if sys.argv[1] == "--summarize":
        summarize(sys.argv[2:])
    else:
        measure(sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3:])
