"""qrlab.course, what notebooks 04-09 share: each function on its own, and its examples."""
import doctest
import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.linalg  # noqa: E402

import qrlab  # noqa: E402
from qrlab import bench, course, updates  # noqa: E402

OPS = ("insert_cols", "delete_cols", "insert_rows", "delete_rows")


def test_examples_run():
    result = doctest.testmod(course)
    plt.close("all")
    assert result.attempted >= 15 and result.failed == 0


# ------------------------------------------------------------------------------------
# load_results, results_table
# ------------------------------------------------------------------------------------
def _row(op, table, m, **extra):
    return dict(table=table, op=op, m=m, n=30, p=2, k=0, t_update=0.002, t_gels=0.004,
                speedup_gels=2.0, paper_speedup=None, **extra)


def test_load_results_reads_filters_and_labels(tmp_path):
    (tmp_path / "b-H100-float32.json").write_text(json.dumps(dict(
        device="H100", dtype="float32",
        results=[_row("insert_cols", "T2", 40), _row("delete_cols", "T6", 50),
                 _row("insert_cols", "T3", 60), "not a row"])))
    (tmp_path / "a-nodevice.json").write_text(json.dumps(dict(
        results=[_row("insert_cols", "T2", 10, dtype="float64")])))
    (tmp_path / "c-broken.json").write_text("{ not json")
    (tmp_path / "d-list.json").write_text("[1, 2]")
    (tmp_path / "e-other.json").write_text(json.dumps({"device": "X", "results": 3}))
    (tmp_path / "f-cholesky.json").write_text(json.dumps(dict(      # other benchmarks' rows
        device="H100", results=[dict(dtype="float32", n=100, k=4, t_update_ms=1.0),
                                dict(op="insert_cols", table="T2", m=1, dtype="float32")])))
    (tmp_path / "g-accuracy.json").write_text(json.dumps([dict(op="insert_rows", p=10,
                                                                forward=1e-7)]))
    (tmp_path / "notes.md").write_text("not a result file")

    rows = course.load_results(folder=tmp_path)
    assert [(r["file"], r["m"]) for r in rows] == [
        ("a-nodevice.json", 10), ("b-H100-float32.json", 40), ("b-H100-float32.json", 50),
        ("b-H100-float32.json", 60)]
    assert [(r["device"], r["dtype"]) for r in rows] == [
        ("a-nodevice", "float64"), ("H100", "float32"), ("H100", "float32"),
        ("H100", "float32")]
    assert [r["m"] for r in course.load_results("insert_cols", folder=tmp_path)] == [10, 40, 60]
    assert [r["m"] for r in course.load_results("insert_cols", {"T2"}, tmp_path)] == [10, 40]
    assert [r["m"] for r in course.load_results(tables=["T6", "T3"], folder=tmp_path)] == [50, 60]
    assert course.load_results("delete_rows", folder=tmp_path) == []


def test_load_results_without_files(tmp_path):
    assert course.load_results(folder=tmp_path) == []
    assert course.load_results(folder=tmp_path / "missing") == []
    assert course.RESULTS.name == "results" and course.RESULTS.parent.name == "benchmarks"


def test_load_results_reads_the_committed_files():
    expected = 0
    for path in sorted(course.RESULTS.glob("*.json")) if course.RESULTS.is_dir() else []:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("suite"):        # python -m qrlab.bench
            expected += len(data["results"])
    rows = course.load_results()
    assert len(rows) == expected
    for r in rows:
        assert r["op"] in course.UPDATES and r["speedup_gels"] > 0 and r["t_update"] > 0
        assert r["device"] and r["dtype"] in ("float32", "float64")


def test_results_table():
    rows = [dict(_row("delete_cols", "T6", 6000), device="H100", dtype="float32"),
            dict(_row("delete_cols", "T7", 7000), device="H100", dtype="float32",
                 paper_speedup=1.234)]
    lines = course.results_table(rows, keys=("table", "m", "p")).splitlines()
    assert len(lines) == 3
    assert lines[0].split()[2:5] == ["table", "m", "p"]
    assert lines[1].split() == ["H100", "float32", "T6", "6000", "2", "2.00", "4.00", "2.00",
                                "-"]
    assert lines[2].split()[-1] == "1.23"
    assert len({len(line) for line in lines}) == 1          # columns line up
    assert course.results_table([]).count("\n") == 0


# ------------------------------------------------------------------------------------
# order, signed_like, qr_flops
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize("x, text", [(0, "0"), (0.0, "0"), (3.4e-15, "1e-14"),
                                     (1e-14, "1e-14"), (1.01e-14, "1e-13"),
                                     (9.9e-17, "1e-16"), (0.5, "1e+00"), (1.0, "1e+00"),
                                     (120.0, "1e+03")])
def test_order(x, text):
    assert course.order(x) == text


@pytest.mark.parametrize("shape", [(7, 4), (4, 4), (3, 6)])
def test_signed_like_undoes_row_signs(shape):
    rng = np.random.default_rng(1)
    R = scipy.linalg.qr(rng.standard_normal(shape))[1]
    flips = np.where(rng.standard_normal(min(shape)) > 0, 1.0, -1.0)
    flips[0] = -1.0
    other = R.copy()
    other[:min(shape)] *= flips[:, None]
    kept = other.copy()
    out = course.signed_like(other, R)
    assert np.array_equal(out, R)
    assert np.array_equal(other, kept)                     # input untouched
    assert np.array_equal(course.signed_like(R, R), R)
    assert out.dtype == float and out is not R


def test_qr_flops():
    assert course.qr_flops(3, 3) == 36.0
    for m, n in [(10, 3), (4000, 3000), (12000, 6000)]:
        assert course.qr_flops(m, n) == pytest.approx(2 * m * n * n - 2 * n ** 3 / 3)
        q = 4 * (m * m * n - m * n * n + n ** 3 / 3)
        assert course.qr_flops(m, n, full_q=True) == pytest.approx(course.qr_flops(m, n) + q)
    # square: 4/3 n^3; forming Q as well doubles it
    assert course.qr_flops(300, 300) == pytest.approx(4 / 3 * 300 ** 3)
    assert course.qr_flops(300, 300, True) == pytest.approx(8 / 3 * 300 ** 3)


def test_new_shape():
    assert [course.new_shape(op, 10, 6, 2) for op in OPS] == [(10, 8), (10, 4), (12, 6), (8, 6)]
    with pytest.raises(ValueError, match="op must be one of"):
        course.new_shape("rank_update", 10, 6, 2)


def test_flop_sweep(capsys):
    ratios = course.flop_sweep("insert_cols", "k", [0, 1500, 3000], m=4000, n=3000, p=200)
    expected = [bench.cost("insert_cols", 4000, 3000, 200, k, 4)[0] / course.qr_flops(4000, 3200)
                for k in (0, 1500, 3000)]
    assert ratios == pytest.approx(expected, rel=1e-15)
    assert ratios == sorted(ratios, reverse=True)           # later columns: fewer rotations
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["k", "update", "GFLOP", "QR", "solve", "GFLOP", "ratio"]
    update_gflop = bench.cost("insert_cols", 4000, 3000, 200, 3000, 4)[0] / 1e9
    assert lines[3].split() == ["3000", f"{update_gflop:.1f}", "60.1", f"{expected[-1]:.3f}"]
    assert len({len(line) for line in lines}) == 1          # columns line up
    # over m, quietly: adding rows costs the same whatever m, recomputing grows with it
    rows = course.flop_sweep("insert_rows", "m", [8000, 16000], n=3000, p=500, k=0,
                             verbose=False)
    assert rows[1] < rows[0] and capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="needs m, n, k"):
        course.flop_sweep("delete_cols", "p", [1], m=10, n=5)
    with pytest.raises(ValueError, match="op must be one of"):
        course.flop_sweep("delete", "p", [1], m=10, n=5, k=0)


# ------------------------------------------------------------------------------------
# check_update
# ------------------------------------------------------------------------------------
SHAPES = {"insert_cols": (10, 5, 3, 2), "delete_cols": (10, 8, 3, 2),
          "insert_rows": (8, 6, 4, 8), "delete_rows": (12, 5, 4, 4)}


@pytest.mark.parametrize("op", OPS)
def test_check_update_names_and_bounds(op):
    errors = course.check_update(op, *SHAPES[op], seed=4)
    function = "qr_insert" if op.startswith("insert") else "qr_delete"
    names = ["||Q~R~ - A~|| / ||A~||", "||Q~^T Q~ - I||", "||R~ - R(scipy qr)|| / ||A~||",
             f"||R~ - R(scipy {function})|| / ||A~||"]
    if op in ("delete_cols", "insert_rows"):
        names.append("||R~(Q=None) - R~|| / ||A~||")
    assert list(errors) == names
    assert all(isinstance(v, float) and 0 <= v < 1e-14 for v in errors.values()), errors
    assert course.check_update(op, *SHAPES[op], seed=4) == errors          # seeded
    assert course.check_update(op, 60, 30, 5, 7, xp=np, seed=1)["||Q~^T Q~ - I||"] < 1e-13


def test_check_update_sees_a_wrong_update(monkeypatch):
    real = updates.qr_delete

    def scaled(Q, R, *args, **kwargs):
        out = real(Q, R, *args, **kwargs)
        return (out[0], out[1] * 1.001) if isinstance(out, tuple) else out * 1.001

    monkeypatch.setattr(updates, "qr_delete", scaled)
    errors = course.check_update("delete_cols", 10, 8, 3, 2, seed=5)
    assert errors["||Q~R~ - A~|| / ||A~||"] > 1e-4
    assert errors["||R~ - R(scipy qr)|| / ||A~||"] > 1e-4
    assert errors["||R~ - R(scipy qr_delete)|| / ||A~||"] > 1e-4
    assert errors["||Q~^T Q~ - I||"] < 1e-14                # Q is still orthogonal


def test_check_update_wants_exact_zeros(monkeypatch):
    real = updates.qr_insert

    def smudged(Q, R, *args, **kwargs):
        Q1, R1 = real(Q, R, *args, **kwargs)
        R1 = R1.copy()
        R1[-1, 0] = 1e-300                                  # tiny, but not zero
        return Q1, R1

    monkeypatch.setattr(updates, "qr_insert", smudged)
    with pytest.raises(AssertionError, match="exactly upper triangular"):
        course.check_update("insert_cols", 10, 5, 3, 2)


def test_check_on_numpy_asserts_each_bound(monkeypatch, capsys):
    """The errors come back per shape and only their bounds are printed; an error at its
    bound fails (1e-13 for Q~'s orthogonality past 20 rows, 1e-14 otherwise)."""
    shapes = [(10, 8, 3, 2), (40, 20, 5, 3)]
    checked = course.check_on_numpy("delete_cols", shapes, seed=5)
    assert list(checked) == shapes
    assert checked[shapes[0]] == course.check_update("delete_cols", *shapes[0], seed=5)
    out = capsys.readouterr().out
    assert "< 1e-13" in out and "e-15" not in out and "e-16" not in out
    real = course.check_update

    def off(name, value):
        return lambda *a, **kw: dict(real(*a, **kw), **{name: value})

    monkeypatch.setattr(course, "check_update", off("||Q~^T Q~ - I||", 5e-14))
    course.check_on_numpy("delete_cols", shapes[1:], seed=5)         # m > 20: 1e-13
    with pytest.raises(AssertionError, match="Q~"):
        course.check_on_numpy("delete_cols", shapes[:1], seed=5)     # m <= 20: 1e-14
    monkeypatch.setattr(course, "check_update", off("||Q~R~ - A~|| / ||A~||", 1e-14))
    with pytest.raises(AssertionError):
        course.check_on_numpy("delete_cols", shapes[1:], seed=5)


def test_check_update_rejects_unknown_op():
    with pytest.raises(ValueError, match="op must be one of"):
        course.check_update("rank_update", 10, 5, 3, 2)


def test_check_on_gpu_without_a_gpu(monkeypatch, capsys):
    monkeypatch.setattr(course.backend, "default_module", lambda: np)
    assert course.check_on_gpu("delete_rows", [(12, 5, 4, 4)], seed=7) == {}
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("backend: ") and out[1].startswith("no GPU here")


def test_check_on_gpu_checks_every_shape_on_the_gpu_module(monkeypatch, capsys):
    gpu, calls = object(), []

    def fake_check(op, m, n, p, k, xp=None, seed=0):
        calls.append((op, m, n, p, k, xp, seed))
        return {"||Q~^T Q~ - I||": 3e-15 * m, "||Q~R~ - A~|| / ||A~||": 0.0}

    monkeypatch.setattr(course.backend, "default_module", lambda: gpu)
    monkeypatch.setattr(course.backend, "describe", lambda: "a GPU")
    monkeypatch.setattr(course, "check_update", fake_check)
    checked = course.check_on_gpu("insert_cols", [(10, 5, 3, 2), [2000, 1200, 200, 370]],
                                  seed=4)
    assert calls == [("insert_cols", 10, 5, 3, 2, gpu, 4),
                     ("insert_cols", 2000, 1200, 200, 370, gpu, 4)]
    assert list(checked) == [(10, 5, 3, 2), (2000, 1200, 200, 370)]
    assert checked[(10, 5, 3, 2)]["||Q~^T Q~ - I||"] == pytest.approx(3e-14)
    assert capsys.readouterr().out.splitlines() == [
        "backend: a GPU",
        "m, n, p, k = (10, 5, 3, 2) {'||Q~^T Q~ - I||': '1e-13', '||Q~R~ - A~|| / ||A~||': '0'}",
        "m, n, p, k = (2000, 1200, 200, 370) {'||Q~^T Q~ - I||': '1e-11', "
        "'||Q~R~ - A~|| / ||A~||': '0'}"]


@pytest.mark.gpu
@pytest.mark.skipif(not qrlab.gpu_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("op", OPS)
def test_check_update_on_cupy(op):
    import cupy as cp
    errors = course.check_update(op, *SHAPES[op], xp=cp, seed=4)
    assert max(errors.values()) < 1e-11


# ------------------------------------------------------------------------------------
# timing_sweep, speedup_plot
# ------------------------------------------------------------------------------------
def test_timing_sweep(capsys):
    rows = course.timing_sweep("delete_cols", "p", [1, 3], m=24, n=12, k=2, xp=np, reps=1)
    assert [(r["op"], r["m"], r["n"], r["p"], r["k"], r["table"]) for r in rows] == [
        ("delete_cols", 24, 12, 1, 2, "live"), ("delete_cols", 24, 12, 3, 2, "live")]
    assert all(r["t_update"] > 0 and r["t_gels"] > 0 and r["rel_err_x"] < 1e-3
               and r["dtype"] == "float32" for r in rows)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0] == "numpy; m=24, n=12, k=2, float32, median of 1"
    assert lines[1].split()[:3] == ["p", "update", "ms"]
    assert [line.split()[0] for line in lines[2:]] == ["1", "3"]


def test_timing_sweep_defaults_and_quiet(capsys):
    rows = course.timing_sweep("insert_cols", "k", [0, 4], m=12, n=4, p=2, reps=1,
                               dtype="float64", verbose=False)
    assert [r["k"] for r in rows] == [0, 4] and rows[0]["dtype"] == "float64"
    assert all(r["rel_err_x"] < 1e-10 for r in rows)
    assert capsys.readouterr().out == ""


def test_timing_sweep_wants_the_other_sizes():
    with pytest.raises(ValueError, match="needs m, n, p as keywords"):
        course.timing_sweep("delete_rows", "k", [0], m=10, n=4)
    with pytest.raises(ValueError, match="over must be one of"):
        course.timing_sweep("delete_rows", "q", [0], m=10, n=4, p=1, k=0)
    with pytest.raises(ValueError, match="op must be one of"):
        course.timing_sweep("rank_update", "k", [0], m=10, n=4, p=1)


def _lines(ax):
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
            for line in ax.get_lines() if not line.get_label().startswith("_")}


def test_speedup_plot_groups_paper_and_devices():
    live = [dict(p=2, speedup_gels=0.5), dict(p=4, speedup_gels=3.0)]
    paper = [dict(p=p, n=n, paper_speedup=s) for p, n, s in
             [(40, 6000, 0.3), (20, 6000, 0.9), (20, 8000, 1.3)]]
    measured = [dict(p=p, n=n, device=d, dtype=t, speedup_gels=s) for p, n, d, t, s in
                [(20, 6000, "H100", "float32", 2.0), (40, 6000, "H100", "float32", 1.0),
                 (20, 6000, "H100", "float64", 0.5), (20, 8000, "A100", "float32", 4.0)]]
    fig = course.speedup_plot(live, "p", paper, measured, by="n", xlabel="p (rows removed)",
                              title="here", paper_title="Table 10")
    left, right = fig.axes
    assert _lines(left) == {"qrlab": ([2, 4], [0.5, 3.0])}
    assert _lines(right) == {
        "paper M2050, n=6000": ([20, 40], [0.9, 0.3]),      # sorted along p
        "paper M2050, n=8000": ([20], [1.3]),
        "qrlab A100 float32, n=8000": ([20], [4.0]),
        "qrlab H100 float32, n=6000": ([20, 40], [2.0, 1.0]),
        "qrlab H100 float64, n=6000": ([20], [0.5])}
    for ax in (left, right):
        assert ax.get_yscale() == "log" and ax.get_xlabel() == "p (rows removed)"
        assert [1.0, 1.0] in [list(line.get_ydata()) for line in ax.get_lines()]   # y = 1
    assert (left.get_title(), right.get_title()) == ("here", "Table 10")
    plt.close(fig)


def test_speedup_plot_other_axis_and_nothing_committed(recwarn):
    live = [dict(p=10, speedup_gels=2.0)]
    paper = [dict(m=m, paper_speedup=s) for m, s in [(8000, 1.2), (6000, 1.0)]]
    fig = course.speedup_plot(live, "p", paper, paper_x="m", xlabel="p (columns removed)")
    left, right = fig.axes
    assert _lines(right) == {"paper M2050": ([6000, 8000], [1.0, 1.2])}
    assert (left.get_xlabel(), right.get_xlabel()) == ("p (columns removed)", "m")
    fig = course.speedup_plot(live, "p")                   # nothing on the right but y = 1
    assert _lines(fig.axes[1]) == {} and fig.axes[1].get_legend() is None
    assert not [w for w in recwarn if "legend" in str(w.message)]
    plt.close("all")
