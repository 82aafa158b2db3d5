"""Where an update's GPU time goes, kernel by kernel (Nsight Compute).

Profile (one update of each named cell of the papers' tables, after two warm-up calls,
between cudaProfilerStart and Stop; ncu runs the kernels one at a time, so kernels that
overlap in a real run are each timed alone)::

    PYTHONPATH=. ncu --profile-from-start off --clock-control none \\
        --metrics gpu__time_duration.sum --csv \\
        python3 benchmarks/kernel_times.py float64 T2:12000:3000:200:0 T10:12000:10000:100:0 \\
        > float64.csv

then summarise (a markdown table per cell: kernels grouped by what they do)::

    python3 benchmarks/kernel_times.py --summarize float32.csv float64.csv

Each update ends with its triangular solve (``back_solve``), which is where the summary
splits one cell from the next; the cells come in the order of ``qrlab.bench``'s suite.
"""
import csv
import sys

#: kernel-name fragments -> what the kernel does, first match wins
GROUPS = [("sweep_strips", "rotations computed (strips.cu)"),
          ("apply_sweeps", "rotations applied to Q and R (sweeps.cu)"),
          ("triangle_update", "triangle update (triangle.cu)"),
          ("structured", "structured Cholesky update (structured.cu)"),
          ("reflect_panel", "Householder panels (reflect.cu)"),
          ("copy_rows", "working copies (copy.cu)"),
          ("back_solve", "triangular solve for x"),
          ("geqr", "cuSOLVER geqrf"), ("larf", "cuSOLVER geqrf"),
          ("gemmcn_skinny", "cuSOLVER geqrf"),
          ("gemm", "cuBLAS products"), ("cutlass", "cuBLAS products"),
          ("splitKreduce", "cuBLAS products"), ("trsm", "cuBLAS trsm")]


def profile(dtype, cells):
    import cupy as cp
    import qrlab.bench as qb

    def call(self, fn, prepare, reps):
        if getattr(fn, "__name__", "") != "update":       # the baselines: not timed here
            return 1.0, [1.0]
        fn(*prepare())
        fn(*prepare())
        args = prepare()
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.start()
        fn(*args)
        cp.cuda.Device().synchronize()
        cp.cuda.profiler.stop()
        return 1.0, [1.0]

    qb.Timer.__call__ = call
    want = {tuple(int(x) for x in c.split(":")[1:]) + (c.split(":")[0],) for c in cells}
    for case in qb.paper_cases(False):
        if (case["m"], case["n"], case["p"], case["k"], case["table"]) in want:
            print("CASE", case["table"], case["op"], case["m"], case["n"], case["p"], case["k"],
                  dtype, flush=True)
            qb.run_case(cp, case, dtype, 1)


def group(name):
    return next((g for key, g in GROUPS if key in name), "other")


def summarize(path):
    lines = open(path).read().splitlines()
    cases = [line.split()[1:] for line in lines if line.startswith("CASE")]
    rows = list(csv.reader(line for line in lines if line.startswith('"')))
    head = rows[0]
    cells, current = [], {}
    for row in rows[1:]:
        d = dict(zip(head, row))
        assert d["Metric Unit"] == "ns", d["Metric Unit"]
        g = group(d["Kernel Name"])
        current[g] = current.get(g, 0.0) + float(d["Metric Value"].replace(",", "")) / 1e6
        if g == "triangular solve for x":
            cells.append(current)
            current = {}
    assert len(cells) == len(cases), (len(cells), len(cases))
    out = []
    for (table, op, m, n, p, k, dtype), times in zip(cases, cells):
        total = sum(times.values())
        out.append(f"\n**{table} {op}, m = {m}, n = {n}, p = {p}, k = {k}, {dtype}**: "
                   f"{total:.2f} ms of kernels, one at a time\n")
        out.append("| kernels | ms | share |\n|---|---|---|")
        for g, t in sorted(times.items(), key=lambda x: -x[1]):
            out.append(f"| {g} | {t:.2f} | {100 * t / total:.0f}% |")
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1] == "--summarize":
        print("\n".join(summarize(p) for p in sys.argv[2:]))
    else:
        profile(sys.argv[1], sys.argv[2:])
