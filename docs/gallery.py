"""Regenerate the gallery of the papers' examples: PNGs and docs/gallery.md.

Run from the repository root::

    python docs/gallery.py

Every picture comes from :func:`qrlab.patterns.trace`, which runs the updates' real plans
on zero/nonzero masks.  ``k`` is 0-based; the papers' 1-based ``k`` is given beside it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))

from qrlab.patterns import trace  # noqa: E402
from qrlab.viz import panels, schedule_figure, schedule_grid, text  # noqa: E402

OUT = DOCS / "gallery"
DPI = 72


def save(make_fig, name, write, dpi=DPI):
    """Draw and save under docs/ when ``write``; return the path relative to docs/."""
    if write:
        # no Software stamp (PNG has no date), so reruns give identical files
        make_fig().savefig(DOCS / name, dpi=dpi, metadata={"Software": None})
    return name


def grids(frames):
    return "\n\n".join(text(f) for f in frames)


EXAMPLES = [
    dict(name="001-fig2-insert-cols",
         heading="001 Fig. 2 (000 Figs. 1 and 6): adding columns",
         call=dict(kind="insert_cols", m=10, n=5, p=3, k=2), ncols=4,
         note="m=10, n=5, p=3 columns inserted before the paper's column k=3 (0-based "
              "k=2). Stage 1 reduces the rows of Q^T U below R by Householder; Stage 2 "
              "sweeps the new columns bottom-up with Givens rotations, which fill the "
              "shifted columns of R (the '+'). The setup frame is 000 Fig. 1 exactly "
              "(tests/test_viz.py)."),
    dict(name="001-fig3-delete-cols",
         heading="001 Fig. 3 (000 Figs. 2 and 7): removing columns, nb = 2",
         call=dict(kind="delete_cols", m=10, n=8, p=3, k=2, nb=2), ncols=4,
         note="m=10, n=8, p=3 columns removed from the paper's column k=3 (0-based k=2); "
              "the blue line marks where they were. Each block is a Householder QR of "
              "a (p + nb) x nb panel. The setup frame is 000 Fig. 2 exactly."),
    dict(name="001-fig4-insert-rows",
         heading="001 Fig. 4 (000 Figs. 3 and 8): adding rows, nb = 2",
         call=dict(kind="insert_rows", m=8, n=6, p=4, k=8, nb=2, detail=True), ncols=4,
         note="m=8, n=6, p=4 rows; k does not matter (the rows go to the bottom), here "
              "k=8, appended. Each block shows the papers' Stage 1 (Householder on the "
              "panel: nb diagonal rows and the p new rows) and Stage 2 (the same "
              "reflectors, as V and T, on the columns to the right). The setup frame is "
              "000 Fig. 3 exactly."),
    dict(name="001-fig5-delete-rows",
         heading="001 Fig. 5 (000 Figs. 4 and 9): removing rows",
         call=dict(kind="delete_rows", m=12, n=5, p=4, k=4, method="paper"), ncols=3,
         show="QR",
         note="m=12, n=5, p=4 rows removed from the paper's row k=5 (0-based k=4). "
              "Their rows of Q (blue, the strip Z) are moved to the top first, as the "
              "papers' permutation P does; the figure in 001 draws Z in place. Givens "
              "sweeps zero Z right to left, leaving Q = [D 0; 0 Q~] and R with p "
              "subdiagonals, whose rows below p are R~. (The papers' algorithm: "
              "method='paper'.)"),
    dict(name="qrlab-delete-rows",
         heading="Removing rows as qrlab runs it: Householder first, then shorter sweeps",
         call=dict(kind="delete_rows", m=12, n=5, p=4, k=4), ncols=4, show="QR",
         note="The same update with qrlab's default plan. The rows of R below n = 5 are "
              "zero, so reflectors on the columns of Q past n fill nothing in R: Stage 1 "
              "is an LQ factorization of Z's last m - n columns, which leaves Z = [Z1, L, "
              "0] with L lower triangular, and the sweeps of Stage 2 start at column "
              "n + s instead of m - 1: n + p - 1 waves instead of m + p - 2 (8 here "
              "instead of 14; 6019 instead of 12018 for 20 rows of a 12000 x 6000 "
              "matrix)."),
]


def gallery(write: bool = True) -> str:
    """Return docs/gallery.md's text; with ``write``, also write it and the PNGs."""
    if write:
        OUT.mkdir(exist_ok=True)
    md = ["# Gallery: the papers' examples, drawn by qrlab",
          "",
          "Regenerate with `python docs/gallery.py`. Symbols as in the papers: `*` "
          "nonzero, `0` zero, `-` a nonzero the step makes zero, `+` a zero it makes "
          "nonzero (fill-in). Blue: the inserted block; red: the active region of the "
          "step. Each step is drawn *before* it runs, marked with what it does; `setup` "
          "shows the whole update at once and `result` the new factors. Indices are "
          "0-based; the papers count from 1. In the text grids `[ ]` encloses the "
          "active region, `b` marks the inserted block and `|` the removed columns.",
          ""]
    for ex in EXAMPLES:
        frames = trace(**ex["call"])
        md += [f"## {ex['heading']}", "", ex["note"], ""]
        for show in ex.get("show", "R"):
            png = save(lambda: panels(frames, show=show, ncols=ex["ncols"], dpi=DPI),
                       f"gallery/{ex['name']}{'-' + show if 'show' in ex else ''}.png", write)
            md += [f"![{ex['heading']}, {show}]({png})", ""]
        md += ["```text", grids(frames), "```", ""]

    # the README's picture: removing p=2 columns at k=1 from an 8x5 R
    frames = trace("delete_cols", 8, 5, 2, 1)
    save(lambda: panels(frames, cell=0.5, dpi=100), "fill-pattern.png", write, dpi=100)

    png = save(schedules_figure, "gallery/givens-schedules.png", write)
    md += ["## Givens elimination orders (003 eq. 6, eq. 7; 001 Fig. 1, 000 Fig. 5)", "",
           "Step numbers from 1 (003 counts from 0). The papers' GPU scheme gives each "
           "thread a strip of two rows; a thread spends two steps per column, so its "
           "steps are the wavefront's: column j starts 2j steps after column 0. Each "
           "step is one makeGivens and one applyGivens launch. 001 Fig. 1 counts the "
           "assignment of strips as its Stage 1 and, for strips taller than two rows, "
           "lets a stage zero a whole column of a strip.", "",
           f"![Givens elimination orders]({png})", "",
           "```text",
           schedule_grid("column", 5, 5), "",
           schedule_grid("wavefront", 5, 5), "",
           schedule_grid("strips", 8, 5),
           "```", ""]

    md += ["## Where the drawings differ from the papers", "",
           "- 001 Fig. 5 draws the strip Z of Q in place (rows k..k+p-1); qrlab's working "
           "Q has it moved to the top, as the papers' permutation P does in the text.",
           "- The removing-columns panels span p + nb rows, the rows that hold nonzeros; "
           "001 writes (p + nb + 1) x nb, 000 writes (p + nb) x nb.",
           "- Adding columns: 001 transposes the Stage 2 block and rotates its rows on the "
           "GPU; qrlab rotates rows of R directly, in pipelined waves. The pattern is the "
           "same.",
           "- Removing rows: the zeros of Q's first p columns below Z come from "
           "orthogonality; in floating point they hold rounding errors (about 1e-16), "
           "which the update discards with those columns.",
           "- 003's loop bound, (n - 1) * 2 + m - n iterations, is m + n - 2: the step "
           "count here for m > n. For square matrices the grid needs one step fewer "
           "(2n - 3: the last column has nothing below the diagonal).",
           ""]
    text_md = "\n".join(md)
    if write:
        (DOCS / "gallery.md").write_text(text_md)
    return text_md


def schedules_figure():
    """The three Givens elimination orders of an 8x5 matrix side by side."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 4.2))
    FigureCanvasAgg(fig)
    for n, kind in enumerate(("column", "wavefront", "strips")):
        schedule_figure(kind, 8, 5, ax=fig.add_subplot(1, 3, n + 1))
    fig.subplots_adjust(left=0.03, right=0.99, top=0.8, bottom=0.02, wspace=0.25)
    return fig


if __name__ == "__main__":
    gallery()
