"""Renderers: text grids against the papers' drawings, figures and animations under Agg,
the widget explorer driven from Python, and the Givens schedules against 003."""
import importlib.util
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qrlab import givens  # noqa: E402
from qrlab.patterns import KINDS, trace  # noqa: E402
from qrlab.viz import (animate, explorer, figure, panels, schedule_figure,  # noqa: E402
                       schedule_grid, schedule_steps, text)


def grid(s):
    """A grid written in a test: strip the indentation and blank lines."""
    return "\n".join(line.strip() for line in s.strip().splitlines())


# ------------------------------------------------------------------------------------
# the drawings that survive in 000's text (n rows, m columns there; m rows, n columns here)
# ------------------------------------------------------------------------------------
FIG1_000 = grid("""
    * * * * * * * *
    0 * * * * * * *
    0 0 * * * * * *
    0 0 - * * + * *
    0 0 - - * + + *
    0 0 - - - + + +
    0 0 - - - 0 + +
    0 0 - - - 0 0 +
    0 0 - - - 0 0 0
    0 0 - - - 0 0 0
""")

FIG2_000 = grid("""
    * * * * *
    0 * * * *
    0 0 * * *
    0 0 - * *
    0 0 - - *
    0 0 - - -
    0 0 0 - -
    0 0 0 0 -
    0 0 0 0 0
    0 0 0 0 0
""")

FIG3_000 = grid("""
    * * * * * *
    0 * * * * *
    0 0 * * * *
    0 0 0 * * *
    0 0 0 0 * *
    0 0 0 0 0 *
    0 0 0 0 0 0
    0 0 0 0 0 0
    - - - - - -
    - - - - - -
    - - - - - -
    - - - - - -
""")


def test_000_fig1_adding_columns():
    """10x5 R, p=3 columns inserted before the paper's column 3 (0-based k=2)."""
    assert text(trace("insert_cols", 10, 5, 3, 2)[0], markers=False) == FIG1_000


@pytest.mark.parametrize("nb", [None, 1, 2])
def test_000_fig2_removing_columns(nb):
    """10x8 R, p=3 columns removed from the paper's column 3 (0-based k=2)."""
    assert text(trace("delete_cols", 10, 8, 3, 2, nb=nb)[0], markers=False) == FIG2_000


@pytest.mark.parametrize("k", [0, 3, 8])
def test_000_fig3_adding_rows(k):
    """8x6 R, p=4 rows added; k does not matter, the rows go to the bottom."""
    assert text(trace("insert_rows", 8, 6, 4, k, nb=2)[0], markers=False) == FIG3_000


# ------------------------------------------------------------------------------------
# 001 Figs. 2-5: the stages as qrlab runs them (001's drawings are not in its text)
# ------------------------------------------------------------------------------------
def test_001_fig2_adding_columns_stages():
    frames = trace("insert_cols", 10, 5, 3, 2)
    assert [f.title.split(":")[0] for f in frames] == ["setup", "Stage 1", "Stage 2",
                                                        "result"]
    # Stage 1: Householder QR of the lower (m - n) x p block of Q^T U
    assert text(frames[1], markers=False) == grid("""
        * * * * * * * *
        0 * * * * * * *
        0 0 * * * * * *
        0 0 * * * 0 * *
        0 0 * * * 0 0 *
        0 0 * * * 0 0 0
        0 0 - * * 0 0 0
        0 0 - - * 0 0 0
        0 0 - - - 0 0 0
        0 0 - - - 0 0 0
    """)
    # Stage 2: Givens sweeps bottom-up; they fill the shifted columns of R
    assert text(frames[2], markers=False) == grid("""
        * * * * * * * *
        0 * * * * * * *
        0 0 * * * * * *
        0 0 - * * + * *
        0 0 - - * + + *
        0 0 - - - + + +
        0 0 0 - - 0 + +
        0 0 0 0 - 0 0 +
        0 0 0 0 0 0 0 0
        0 0 0 0 0 0 0 0
    """)
    assert text(frames[2]).splitlines()[2:5] == [
        "        b b b",
        "    0 1 2 3 4 5 6 7",
        "0   * * * * * * * *",
    ]
    assert "2   0 0[* * * * * *]" in text(frames[2])


def test_001_fig3_removing_columns_blocks():
    frames = trace("delete_cols", 10, 8, 3, 2, nb=2)
    assert len(frames) == 4
    # block 1: a (p + nb) x nb panel, rows 2-6 of columns 2-3
    assert text(frames[1], markers=False) == grid("""
        * * * * *
        0 * * * *
        0 0 * * *
        0 0 - * *
        0 0 - - *
        0 0 - - *
        0 0 0 - *
        0 0 0 0 *
        0 0 0 0 0
        0 0 0 0 0
    """)
    lines = text(frames[1]).splitlines()
    assert lines[2] == "       |" and lines[6] == "2   0 0[* * *]"


def test_001_fig4_adding_rows_panel_then_trailing():
    frames = trace("insert_rows", 8, 6, 4, 8, nb=2, detail=True)
    panel, trailing = frames[1], frames[2]
    assert panel.title.endswith("the panel")
    assert panel.red_R[np.ix_([0, 1, 8, 9, 10, 11], [0, 1])].all()
    assert panel.red_R.sum() == 12
    assert trailing.red_R[np.ix_([0, 1, 8, 9, 10, 11], range(2, 6))].all()
    assert trailing.red_R.sum() == 24
    assert "11b [- -]* * * *" in text(panel)


def test_001_fig5_removing_rows():
    frames = trace("delete_rows", 12, 5, 4, 4, method="paper")
    assert text(frames[1], markers=False, show="R") == grid("""
        * * * * *
        + * * * *
        + + * * *
        + + + * *
        + + + + *
        0 + + + +
        0 0 + + +
        0 0 0 + +
        0 0 0 0 +
        0 0 0 0 0
        0 0 0 0 0
        0 0 0 0 0
    """)
    q = text(frames[1], markers=False, show="Q").splitlines()
    assert q[0] == "* " + " ".join("-" * 11) and q[3] == "- - - * " + " ".join("-" * 8)
    assert q[4] == "- - - - " + " ".join("*" * 8)
    shown = text(frames[1])                     # Q and R by default when removing rows
    assert "Q (12x12)" in shown and "R (12x5)" in shown
    assert "rows of Q to remove (blue)" in shown
    assert text(frames[-1], markers=False, show="R").splitlines()[4] == "0 0 0 0 *"


def test_text_markers_and_legend():
    s = text(trace("delete_cols", 8, 5, 2, 1)[1])
    assert s.splitlines()[0].startswith("Remove columns")
    assert "R (8x3)" in s and "[ ] active (red)" in s and "| removed columns" in s
    assert text(trace("insert_rows", 3, 2, 1, 0)[0]).splitlines()[-2] == "3b  - -"
    wide = text(trace("insert_cols", 3, 12, 1, 0)[0]).splitlines()
    assert wide[3].split() == ["1", "1", "1"] and wide[4].split()[-1] == "2"
    with pytest.raises(ValueError):
        text(trace("delete_cols", 5, 4, 1, 0, Q=None)[0], show="Q")


# ------------------------------------------------------------------------------------
# figures and animations under Agg
# ------------------------------------------------------------------------------------
def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@pytest.mark.parametrize("kind", KINDS)
def test_figure_of_every_frame(kind):
    for frame in trace(kind, 7, 4, 2, 1):
        assert _png(figure(frame, dpi=40))[:4] == b"\x89PNG"


def test_figure_large_is_an_image_and_ax_works():
    from matplotlib.figure import Figure
    frame = trace("delete_cols", 60, 45, 5, 10)[1]
    fig = figure(frame, dpi=30)
    assert fig.axes[0].images and not fig.axes[0].collections   # no per-cell symbols
    _png(fig)
    host = Figure()
    ax = host.add_subplot(1, 1, 1)
    assert figure(trace("delete_cols", 8, 5, 2, 1)[1], ax=ax) is host
    assert len(ax.collections) >= 3                              # one scatter per symbol


def test_panels_and_animation():
    frames = trace("insert_cols", 10, 5, 3, 2)
    fig = panels(frames, ncols=2, dpi=40)
    assert len(fig.axes) == 4
    _png(fig)
    html = animate(frames, dpi=30)
    data = getattr(html, "data", html)
    assert "<script" in data and data.count("data:image/png;base64") >= len(frames) - 1
    assert len(data) < 300_000


# ------------------------------------------------------------------------------------
# the explorer, driven from Python
# ------------------------------------------------------------------------------------
def test_explorer_redraws_on_slider_changes():
    ex = explorer("insert_cols", m=10, n=5, p=3, k=2, view="text")
    w = ex.widgets
    assert ex.frame.blue_R.all(axis=0).sum() == 3
    w["p"].value = 2
    assert ex.frame.blue_R.all(axis=0).sum() == 2 and "(10x7)" in ex.current_text()
    w["k"].value = 0
    assert ex.frame.blue_R[:, :2].all() and not ex.frame.blue_R[:, 2:].any()
    w["stage"].value = 2
    assert ex.frame is ex.frames[2] and ex.current_text().startswith("Stage 2")
    assert w["play"].max == w["stage"].max == len(ex.frames) - 1
    before = ex.current_text()
    w["m"].value = 12
    assert ex.current_text() != before and "(12x7)" in ex.current_text()
    w["detail"].value = True
    assert len(ex.frames) > 4 and ex.last_redraw_s > 0


def test_explorer_keeps_ranges_consistent():
    ex = explorer("delete_cols", m=8, n=5, p=2, k=1, view="text")
    w = ex.widgets
    assert w["k"].max == 3 and w["p"].max == 5
    w["p"].value = 5
    assert w["k"].max == 0 and w["k"].value == 0
    w["n"].value = 3
    assert w["p"].value == 3 and w["p"].max == 3
    w["op"].value = "delete_rows"
    assert w["p"].max == 7 and w["k"].max == 8 - w["p"].value
    assert "Q (8x8)" in ex.current_text()
    w["m"].value = 2
    assert w["p"].value == 1 and w["k"].max == 1
    w["op"].value = "insert_rows"
    assert w["k"].max == 2 and not w["k"].disabled
    w["op"].value = "rank_update"
    assert w["k"].disabled
    w["stage"].value = w["stage"].max
    w["op"].value = "insert_cols"                 # fewer stages: the stage slider clamps
    assert w["stage"].value <= w["stage"].max == len(ex.frames) - 1


def test_explorer_panel_width():
    """nb reaches every trace the explorer draws: 001 Fig. 3 and Fig. 4 in panels of 2."""
    ex = explorer("delete_cols", m=10, n=8, p=3, k=2, view="text", nb=2)
    titles = [f.title for f in ex.frames]
    assert titles == [f.title for f in trace("delete_cols", 10, 8, 3, 2, nb=2)]
    assert sum(f.step == "stage" for f in ex.frames) == 2                   # Fig. 3: two blocks
    assert sum(f.step == "stage" for f in explorer("delete_cols", m=10, n=8, p=3, k=2,
                                                   view="text").frames) == 1   # default nb
    w = ex.widgets
    w["m"].value, w["n"].value, w["k"].value, w["p"].value = 40, 40, 0, 1
    assert sum(f.step == "stage" for f in ex.frames) == 20                  # 39 columns, by 2
    w["op"].value = "insert_rows"                                           # Fig. 4's update
    w["m"].value, w["n"].value, w["p"].value, w["k"].value = 8, 6, 4, 8
    assert [f.title for f in ex.frames] == [f.title for f in trace("insert_rows", 8, 6, 4, 8,
                                                                   nb=2)]
    assert sum(f.step == "stage" for f in ex.frames) == 3
    w["detail"].value = True
    assert len(ex.frames) == len(trace("insert_rows", 8, 6, 4, 8, nb=2, detail=True))
    w["op"].value = "insert_cols"                   # no Householder panels: nb changes nothing
    assert [f.title for f in ex.frames] == [f.title for f in trace(*ex.params, detail=True)]
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="nb"):
            explorer("delete_cols", view="text", nb=bad)


def test_explorer_figure_view():
    ex = explorer("delete_rows", m=8, n=4, p=2, k=3, view="both")
    assert ex.image.value[:4] == b"\x89PNG" and "<pre" in ex.pre.value
    first = ex.image.value
    ex.widgets["stage"].value = 1
    assert ex.image.value != first
    assert ex._repr_mimebundle_() is not None


# ------------------------------------------------------------------------------------
# Givens schedules (003 eq. 6 and eq. 7, 001 Fig. 1, 000 Fig. 5)
# ------------------------------------------------------------------------------------
# 003 prints its 5x5 examples with steps counted from 0; qrlab counts from 1.
EQ6_003 = [[None] * 5, [3, None, None, None, None], [2, 6, None, None, None],
           [1, 5, 8, None, None], [0, 4, 7, 9, None]]
EQ7_003 = [[None] * 5, [3, None, None, None, None], [2, 4, None, None, None],
           [1, 3, 5, None, None], [0, 2, 4, 6, None]]


def _as_text(rows):
    w = len(str(max(v + 1 for r in rows for v in r if v is not None)))
    return "\n".join(" ".join(f"{'x' if v is None else v + 1:>{w}}" for v in r)
                     for r in rows)


def test_schedule_grids_match_003():
    assert schedule_grid("column", 5, 5, header=False) == _as_text(EQ6_003)
    assert schedule_grid("wavefront", 5, 5, header=False) == _as_text(EQ7_003)
    assert schedule_steps("column", 5, 5) == 10 and schedule_steps("wavefront", 5, 5) == 7


def test_schedule_text_headers():
    s = schedule_grid("strips", 6, 3).splitlines()
    assert s[0].startswith("GPU scheme") and s[-2].endswith("p1") and s[1].endswith("p3")
    assert s[-1].startswith("7 parallel steps") and "14 kernel launches" in s[-1]
    assert schedule_grid("column", 4, 2).splitlines()[-1] == "5 sequential steps, one rotation each"
    with pytest.raises(ValueError):
        schedule_grid("spiral", 4, 4)


@pytest.mark.parametrize("kind", ["wavefront", "strips"])
def test_parallel_schedules_are_valid(kind):
    """Every subdiagonal entry once; rotations of one step touch disjoint row pairs; an
    entry is zeroed after the entries left of it in its two rows."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        m, n = int(rng.integers(1, 15)), int(rng.integers(1, 15))
        g = np.array(givens.schedule_wavefront(m, n) if kind == "wavefront"
                     else givens.schedule_two_row_strips(m, n)).reshape(m, n)
        sub = np.tril(np.ones((m, n), bool), -1)
        assert ((g > 0) == sub).all()
        for step in range(1, schedule_steps(kind, m, n) + 1):
            rows = [r for i in np.flatnonzero((g == step).any(axis=1)) for r in (i - 1, i)]
            assert len(rows) == len(set(rows))
        for i, j in zip(*np.nonzero(sub)):
            for r in (i - 1, i):
                left = g[r, :j][g[r, :j] > 0]
                assert (left < g[i, j]).all()
        if m > n:
            assert schedule_steps(kind, m, n) == m + n - 2     # 003's count, m > n


@pytest.mark.parametrize("kind", ["column", "wavefront", "strips"])
def test_schedule_figures(kind):
    assert _png(schedule_figure(kind, 6, 4, dpi=40))[:4] == b"\x89PNG"
    _png(schedule_figure(kind, 45, 40, dpi=20))


def test_gallery_markdown_is_current():
    """docs/gallery.md holds what docs/gallery.py draws now (rerun it after changes)."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    spec = importlib.util.spec_from_file_location("qrlab_gallery", docs / "gallery.py")
    gallery = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gallery)
    assert gallery.gallery(write=False) == (docs / "gallery.md").read_text()
