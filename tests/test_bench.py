"""The benchmark and accuracy harnesses run end to end on NumPy (timings not asserted)."""
import json

import numpy as np

from qrlab import accuracy, bench


def test_bench_cpu_writes_results_and_report(tmp_path):
    results = bench.main(["--cpu", "--reps", "1", "--out", str(tmp_path)])
    assert {r["op"] for r in results} == {"insert_cols", "delete_cols", "insert_rows",
                                          "delete_rows"}
    for r in results:
        assert r["t_update"] > 0 and r["floor"] > 0
        assert r["rel_err_x"] < 1e-3                  # float32 update vs fresh QR solve
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert data["results"] and "command" in data
    assert next(tmp_path.glob("*.md")).read_text().count("|") > 20
    assert next(tmp_path.glob("*.png")).stat().st_size > 1000


def test_timer_warms_up_then_times_each_repetition():
    calls = []
    median, runs = bench.Timer(np, warmup=3)(lambda x: calls.append(x), lambda: (1,), 4)
    assert len(calls) == 7 and len(runs) == 4 and median >= 0


def test_interleaved_times_rotate_the_variants():
    """Each variant warmed up first, then every round times each variant once, a different
    one first each round, and each call runs under the variant switched to."""
    current, calls = [], []
    variants = {name: (lambda n=name: current.append(n)) for name in "abc"}
    times = bench.interleaved_times(np, lambda: calls.append(current[-1]), tuple, variants,
                                    4, warmup=2)
    assert calls[:6] == list("aabbcc")
    rounds = [calls[6 + 3 * r: 9 + 3 * r] for r in range(4)]
    assert rounds == [list("abc"), list("bca"), list("cab"), list("abc")]
    assert {name: len(t) for name, t in times.items()} == {"a": 4, "b": 4, "c": 4}
    assert all(t >= 0 for ts in times.values() for t in ts)


def test_paper_cases_cover_every_table():
    tables = {c["table"] for c in bench.paper_cases(full=True)}
    assert tables == {"T2", "T3", "T5", "T6", "T7", "T8", "T9", "T10", "T11"}
    # the surviving cells carry the paper's speed-up
    t6 = [c for c in bench.paper_cases() if c["table"] == "T6"]
    assert len(t6) == 7 and all(c["paper_speedup"] for c in t6)


def test_accuracy_small_is_at_float_precision():
    rows = accuracy.accuracy_table(np, "float64", m=60, n=30, ps=(3, 9))
    assert len(rows) == 8
    for r in rows:
        assert r["forward"] < 1e-10
        for what in ("orthogonality", "backward"):
            if what in r:
                assert r[what] < 1e-12
