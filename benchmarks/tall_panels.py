"""Householder QR of tall panels on the GPU: ``tall_qr`` (``kernels/tall.cu``, every SM,
two grid barriers per reflector) against cuSOLVER's ``geqrf``, both as
``GpuExecutor.factor_panel`` returns them (V, the compact WY T, R), interleaved in one
process (CUDA events, 2 warm-up calls of each, the median of 9).

    python3 benchmarks/tall_panels.py float32 float64 > tall-panels.md

The shapes are the panels of the paper suite that do not fit one block: the rows of
Q^T U below R adding 200 columns (000 Tables 2 and 3: 1000 to 10000 rows), adding 100
to 900 columns at 2980 of 5000 x 3000 (Table 5: 2020 rows), and the rows of Q to remove
in their columns past R (Tables 10 and 11: 2000 to 10000 rows, 20 to 100 columns).
"""
import statistics
import sys

SHAPES = [(1000, 200), (5000, 200), (9000, 200), (10000, 200), (2020, 100), (2020, 500),
          (2000, 20), (6000, 20), (6000, 100), (10000, 100), (4000, 60)]


def measure(dtype, reps=9):
    import cupy as cp

    from qrlab import gpu
    from qrlab.bench import interleaved_times
    ex = gpu.GpuExecutor()
    rng = cp.random.default_rng(0)
    rows = []
    for h, w in SHAPES:
        P = rng.standard_normal((h, w)).astype(dtype)
        variants = {"geqrf": lambda: setattr(ex, "tall_w_max", 0),
                    "tall_qr": lambda: setattr(ex, "tall_w_max", 512)}
        times = interleaved_times(cp, ex.factor_panel, lambda: (P.copy(),), variants, reps)
        Rs = {}
        for name, switch in variants.items():
            switch()
            Rs[name] = ex.factor_panel(P.copy())[2]
        diff = float(cp.abs(Rs["tall_qr"] - Rs["geqrf"]).max() / cp.abs(Rs["geqrf"]).max())
        t0, t1 = (statistics.median(times[n]) for n in variants)
        rows.append(f"| {dtype} | {h} | {w} | {t0:.3f} | {t1:.3f} | {t0 / t1:.2f} | "
                    f"{diff:.1e} |")
    return rows


if __name__ == "__main__":
    import cupy as cp
    print(f"# Tall panels, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}\n")
    print("Command: `python3 benchmarks/tall_panels.py " + " ".join(sys.argv[1:]) + "`\n")
    print("| dtype | h | w | geqrf ms | tall_qr ms | geqrf / tall_qr | R differs by |")
    print("|---|---|---|---|---|---|---|")
    for dt in sys.argv[1:]:
        print("\n".join(measure(dt)), flush=True)
