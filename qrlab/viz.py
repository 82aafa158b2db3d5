"""Fill-pattern drawings of the updates: text grids, figures, animations, widgets.

Everything here draws :class:`qrlab.patterns.Frame` objects, which the pattern executor
records while it runs an update's real plan, so a drawing shows what the code does.
The papers' symbols (001 Fig. 2): ``*`` nonzero, ``0`` zero, ``-`` a nonzero the stage makes
zero, ``+`` a zero the stage makes nonzero (fill-in); blue shading marks the inserted
block, red shading the active region of the stage.

* :func:`text` -- a deterministic text grid (terminals, doctests, nbval).
* :func:`figure`, :func:`panels` -- matplotlib figures in the papers' style (a coloured
  spy-like image above 40 rows or columns).
* :func:`animate` -- a whole update, stage by stage, as a small HTML animation.
* :func:`explorer` -- ipywidgets sliders for the operation, ``m``, ``n``, ``p``, ``k`` and
  the stage.
* :func:`schedule_grid`, :func:`schedule_figure` -- the Givens elimination orders of
  :mod:`qrlab.givens` as grids of step numbers.

matplotlib and ipywidgets are imported only by the functions that need them, so the text
renderers work without them.  ``k`` is 0-based throughout; titles give the papers'
1-based ``k`` beside it.
"""
from __future__ import annotations

import html
import io
import time

import numpy as np

from . import givens
from .patterns import FILL, KINDS, NONZERO, SYMBOLS, ZERO, ZEROED, Frame, limits, trace

__all__ = ["text", "figure", "panels", "animate", "explorer", "Explorer",
           "schedule_grid", "schedule_steps", "schedule_figure", "SCHEDULES"]

SPY_LIMIT = 40          # above this many rows or columns, figures draw a coloured image

_BLUE = np.array([0.62, 0.78, 1.0])
_RED = np.array([1.0, 0.66, 0.66])
_CODE_COLOURS = {ZERO: "#b0b0b0", NONZERO: "black", ZEROED: "#c00000", FILL: "#007a00"}
_SPY_COLOURS = {ZERO: (1, 1, 1), NONZERO: (0.35, 0.35, 0.35), ZEROED: (0.85, 0.1, 0.1),
                FILL: (0.1, 0.6, 0.1)}
# what the blue block is, per update
_BLUE_MEANS = {"insert_cols": "inserted", "insert_rows": "inserted",
               "delete_rows": "rows of Q to remove", "rank_update": "Q^H U"}
_NAMES = {ZERO: "zero", NONZERO: "nonzero", ZEROED: "made zero here", FILL: "fill-in"}


# ------------------------------------------------------------------------------------
# text
# ------------------------------------------------------------------------------------
def _parts(frame: Frame, show):
    """The matrices to draw: ``[(name, codes, blue, red, cut), ...]``."""
    if show is None:
        # Removing rows works on Q (001 Fig. 5); elsewhere Q is dense and says little.
        show = "QR" if frame.kind == "delete_rows" and frame.Q is not None else "R"
    out = []
    for name in show:
        if name == "R":
            out.append(("R", frame.R, frame.blue_R, frame.red_R, frame.cut))
        elif name == "Q":
            if frame.Q is None:
                raise ValueError("this frame has no Q (traced R-only)")
            out.append(("Q", frame.Q, frame.blue_Q, frame.red_Q, None))
        else:
            raise ValueError(f"show must name 'R' and/or 'Q', not {show!r}")
    return out


def _grid(codes, blue, red, cut, markers):
    nr, nc = codes.shape
    if not markers:
        return ["" if nc == 0 else " ".join(SYMBOLS[c] for c in row) for row in codes]
    w = len(str(max(nr - 1, 0)))
    blue_cols = {j for j in range(nc) if nr and blue[:, j].all()}
    blue_rows = set() if blue_cols else {i for i in range(nr) if nc and blue[i].all()}
    pad = " " * (w + 2)
    lines = []
    mark = [" "] * (2 * nc + 1)
    for j in blue_cols:
        mark[2 * j + 1] = "b"
    if cut is not None:
        mark[2 * cut] = "|"
    if blue_cols or cut is not None:
        lines.append((pad + "".join(mark)).rstrip())
    if nc > 10:
        tens = "".join(f" {j // 10 if j >= 10 else ' '}" for j in range(nc))
        lines.append((pad + tens).rstrip())
    lines.append(pad + "".join(f" {j % 10}" for j in range(nc)))
    for i in range(nr):
        cells = []
        for j in range(nc + 1):
            left = j > 0 and red[i, j - 1]
            here = j < nc and red[i, j]
            cells.append("[" if here and not left else "]" if left and not here else " ")
            if j < nc:
                cells.append(SYMBOLS[codes[i, j]])
        label = f"{i:>{w}}{'b' if i in blue_rows else ' '} "
        lines.append((label + "".join(cells)).rstrip())
    return lines


def text(frame: Frame, markers: bool = True, show: str | None = None) -> str:
    """The frame as a text grid in the papers' symbols.

    Parameters
    ----------
    frame : Frame
    markers : bool
        With the title, row and column numbers, the marks below and a legend line (default);
        ``False`` gives the bare grid, one row per line, symbols separated by spaces.
    show : {'R', 'Q', 'QR'}, optional
        Which factors to draw; default R, and Q above R when removing rows.

    Returns
    -------
    str

    Notes
    -----
    Marks: ``[ ]`` encloses the active region (red in figures); ``b`` over a column or
    after a row number marks the inserted block (blue); ``|`` in the mark line shows where
    removed columns were.

    Examples
    --------
    >>> from qrlab.patterns import trace
    >>> from qrlab.viz import text
    >>> print(text(trace('insert_cols', 5, 3, 1, 1)[2]))
    Stage 2: Givens sweeps up the 1 new column
    R (5x4)
          b
        0 1 2 3
    0   * * * *
    1   0[* * *]
    2   0[- + *]
    3   0[- 0 +]
    4   0 0 0 0
    legend: * nonzero  0 zero  - made zero here  + fill-in  [ ] active (red)  b inserted (blue)
    """
    out = [] if not markers else [frame.title]
    parts = _parts(frame, show)
    for n, (name, codes, blue, red, cut) in enumerate(parts):
        if markers:
            out.append(f"{name} ({codes.shape[0]}x{codes.shape[1]})")
        elif n:
            out.append("")
        out += _grid(codes, blue, red, cut, markers)
    if markers:
        legend = "legend: * nonzero  0 zero  - made zero here  + fill-in"
        if any(r.any() for _, _, _, r, _ in parts):
            legend += "  [ ] active (red)"
        if any(b is not None and b.any() for _, _, b, _, _ in parts):
            legend += f"  b {_BLUE_MEANS[frame.kind]} (blue)"
        if any(c is not None for *_, c in parts):
            legend += "  | removed columns were here"
        out.append(legend)
    return "\n".join(out)


# ------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------
def _new_figure(width, height, dpi=80):
    """A pyplot-free Figure (no global state, nothing left open) with an Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def _shade(codes, blue, red, spy):
    nr, nc = codes.shape
    img = np.ones((nr, nc, 3))
    if spy:
        for code, colour in _SPY_COLOURS.items():
            img[codes == code] = colour
    if blue is not None:
        img[blue] = 0.5 * img[blue] + 0.5 * _BLUE if spy else _BLUE
    img[red] = 0.55 * img[red] + 0.45 * _RED if spy or blue is not None else _RED
    return img


def _draw(ax, name, codes, blue, red, cut, title=None):
    """One matrix of a frame on ``ax``: shading as an image, symbols as four scatters."""
    from matplotlib.ticker import MaxNLocator
    nr, nc = codes.shape
    spy = max(nr, nc) > SPY_LIMIT
    ax.imshow(_shade(codes, blue, red, spy), interpolation="nearest", aspect="equal",
              extent=(-0.5, nc - 0.5, nr - 0.5, -0.5))
    if not spy:
        # marker size in points^2 from the cell size, so symbols fill their cells
        fig = ax.figure
        box = ax.get_position()
        cell = min(box.width * fig.get_figwidth() / max(nc, 1),
                   box.height * fig.get_figheight() / max(nr, 1)) * 72
        for code in (ZERO, NONZERO, ZEROED, FILL):
            ii, jj = np.nonzero(codes == code)
            if len(ii):
                # '-' and '+' are thin glyphs: a little larger, with an outline, so they
                # survive low-dpi output
                thin = code in (ZEROED, FILL)
                ax.scatter(jj, ii, s=((0.6 if thin else 0.5) * cell) ** 2,
                           marker=f"${SYMBOLS[code]}$", c=_CODE_COLOURS[code],
                           linewidths=0.8 if thin else 0.3)
        # cell borders as two line collections: minor ticks would cost a Tick per line
        ax.hlines(np.arange(0.5, nr - 1), -0.5, nc - 0.5, color="#e4e4e4", linewidth=0.5)
        ax.vlines(np.arange(0.5, nc - 1), -0.5, nr - 0.5, color="#e4e4e4", linewidth=0.5)
    if cut is not None:
        ax.axvline(cut - 0.5, color="#1f4fd0", linewidth=3)
    ax.set_xlim(-0.5, nc - 0.5)
    ax.set_ylim(nr - 0.5, -0.5)
    ax.xaxis.tick_top()
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(nbins=10, integer=True, min_n_ticks=1))
    ax.tick_params(labelsize=7, length=2)
    ax.set_ylabel(f"{name}  ({nr}x{nc})", fontsize=8)
    if title:
        ax.set_title(title, fontsize=8, pad=4)


def _legend(fig, frame, spy, y=0.0):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = []
    for code in (NONZERO, ZERO, ZEROED, FILL):
        if spy:
            handles.append(Patch(color=_SPY_COLOURS[code], ec="grey", label=_NAMES[code]))
        else:
            handles.append(Line2D([], [], ls="", marker=f"${SYMBOLS[code]}$", ms=7,
                                  color=_CODE_COLOURS[code], label=_NAMES[code]))
    # by the kind of update, not the frame, so the legend stays put while stepping
    if frame.kind == "delete_cols":
        handles.append(Line2D([], [], color="#1f4fd0", lw=3, label="removed cols"))
    else:
        handles.append(Patch(color=_BLUE, label=_BLUE_MEANS[frame.kind]))
    handles.append(Patch(color=_RED, label="active"))
    ncol = max(2, min(len(handles) // 2 + len(handles) % 2, int(fig.get_figwidth() / 1.3)))
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=7,
               frameon=False, bbox_to_anchor=(0.5, y), handletextpad=0.3, columnspacing=1)


def _wrap(title, width_in, per_inch=13):
    """Wrap a title to a width in inches (``per_inch`` characters fit in one inch)."""
    import textwrap
    return "\n".join(textwrap.wrap(title, max(16, int(width_in * per_inch))))


def figure(frame: Frame, ax=None, show: str | None = None, dpi: int = 80):
    """The frame as a matplotlib figure in the papers' style.

    Symbols in the cells, the inserted block shaded blue, the active region red, row and
    column numbers (0-based), the stage in the title, a legend.  Above 40 rows or
    columns the cells become a coloured image (grey nonzero, red zeroed, green fill-in).

    Parameters
    ----------
    frame : Frame
    ax : matplotlib Axes, optional
        Draw the first factor of ``show`` on this axes (no legend); else a new figure.
    show : {'R', 'Q', 'QR'}, optional
        As in :func:`text`.
    dpi : int
        Resolution of a new figure.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from qrlab.patterns import trace
    >>> from qrlab.viz import figure
    >>> fig = figure(trace('delete_cols', 8, 5, 2, 1)[1])
    >>> fig.savefig(io.BytesIO(), format='png')
    """
    parts = _parts(frame, show)
    if ax is not None:
        name, codes, blue, red, cut = parts[0]
        _draw(ax, name, codes, blue, red, cut, frame.title)
        return ax.figure
    spy = any(max(c.shape) > SPY_LIMIT for _, c, *_ in parts)
    cell = 0.12 if spy else 0.24
    widths = [max(c.shape[1], 3) * cell for _, c, *_ in parts]
    height = max(max(c.shape[0], 3) * cell for _, c, *_ in parts) + 1.3
    width = max(sum(widths) + 0.8 * len(parts), 3.6)
    fig = _new_figure(width, height, dpi)
    _fill_figure(fig, frame, parts, widths, spy)
    return fig


def _fill_figure(fig, frame, parts, widths, spy):
    fig.subplots_adjust(left=0.12, right=0.97, top=1 - 0.75 / fig.get_figheight(),
                        bottom=0.55 / fig.get_figheight(), wspace=0.35)
    grid = fig.add_gridspec(1, len(parts), width_ratios=widths)
    for n, (name, codes, blue, red, cut) in enumerate(parts):
        ax = fig.add_subplot(grid[0, n])
        _draw(ax, name, codes, blue, red, cut)
    fig.suptitle(_wrap(frame.title, fig.get_figwidth()), fontsize=8,
                 y=1 - 0.05 / fig.get_figheight(), va="top")
    _legend(fig, frame, spy)


def panels(frames, show: str = "R", ncols: int | None = None, dpi: int = 80,
           cell: float = 0.2):
    """Several frames side by side (small multiples), one legend.

    Parameters
    ----------
    frames : list of Frame
        Usually a whole :func:`~qrlab.patterns.trace`; a leading 'setup' frame names the
        update in the figure's title.
    show : {'R', 'Q'}
        The factor to draw.
    ncols : int, optional
        Panels per row (default: all in one row).
    dpi : int
    cell : float
        Cell size in inches.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from qrlab.patterns import trace
    >>> from qrlab.viz import panels
    >>> fig = panels(trace('delete_cols', 8, 5, 2, 1))
    >>> len(fig.axes)
    3
    """
    ncols = ncols or len(frames)
    nrows = -(-len(frames) // ncols)
    shapes = [(f.R if show == "R" else f.Q).shape for f in frames]
    w = max(max(s[1] for s in shapes), 3) * cell + 0.5
    ax_h = max(s[0] for s in shapes) * cell
    # The update is named once on top; each panel is titled by its step.
    sup = frames[0].title.removeprefix("setup: ") if frames[0].step == "setup" else None
    titles = [_wrap("setup" if f.step == "setup" and sup else f.title, w - 0.15, 18)
              for f in frames]
    head = 0.11 * max(t.count("\n") + 1 for t in titles) + 0.3   # titles + column numbers
    top = head + (0.1 + 0.13 * _wrap(sup, ncols * w).count("\n") + 0.15 if sup else 0)
    height = nrows * (ax_h + head) - head + top + 0.55
    fig = _new_figure(ncols * w, height, dpi)
    fig.subplots_adjust(left=0.45 / fig.get_figwidth(), right=0.99, top=1 - top / height,
                        bottom=0.55 / height, wspace=0.3, hspace=head / ax_h)
    if sup:
        fig.suptitle(_wrap(sup, ncols * w), fontsize=8, y=1 - 0.05 / height, va="top")
    for n, frame in enumerate(frames):
        ax = fig.add_subplot(nrows, ncols, n + 1)
        name, codes, blue, red, cut = _parts(frame, show)[0]
        _draw(ax, name, codes, blue, red, cut)
        ax.set_title(titles[n], fontsize=6, pad=5)
        ax.set_ylabel(name if n % ncols == 0 else "", fontsize=7)
    _legend(fig, frames[0], False)
    return fig


def animate(frames, show: str | None = None, interval: int = 1200, dpi: int = 50):
    """A whole update as an HTML animation, one frame per stage (``to_jshtml``).

    Parameters
    ----------
    frames : list of Frame
        A :func:`~qrlab.patterns.trace` (``detail=True`` for one frame per wave).
    show : {'R', 'Q', 'QR'}, optional
        As in :func:`text`.
    interval : int
        Milliseconds per frame.
    dpi : int
        Resolution of the frames (low keeps the HTML small: about 50 kB for four frames).

    Returns
    -------
    IPython.display.HTML
        Plays in JupyterLab and in static HTML exports (a plain ``str`` without IPython).

    Examples
    --------
    >>> from qrlab.patterns import trace
    >>> from qrlab.viz import animate
    >>> anim = animate(trace('delete_cols', 8, 5, 2, 1))
    >>> '<img' in getattr(anim, 'data', anim)
    True
    """
    from matplotlib.animation import FuncAnimation
    all_parts = [_parts(f, show) for f in frames]
    names = [p[0] for p in all_parts[0]]
    widths = [max(max(p[n][1].shape[1], 3) for p in all_parts) * 0.24
              for n in range(len(names))]
    height = max(max(c.shape[0], 3) for p in all_parts for _, c, *_ in p) * 0.24 + 1.3
    fig = _new_figure(max(sum(widths) + 0.8 * len(names), 3.6), height, dpi)

    def draw(i):
        fig.clear()
        _fill_figure(fig, frames[i], all_parts[i], widths, False)
        return []

    anim = FuncAnimation(fig, draw, frames=len(frames), interval=interval, blit=False)
    html_text = anim.to_jshtml(default_mode="once")
    try:
        from IPython.display import HTML
    except ImportError:                             # pragma: no cover
        return html_text
    return HTML(html_text)


# ------------------------------------------------------------------------------------
# the widget explorer
# ------------------------------------------------------------------------------------
_LABELS = {"insert_cols": "add columns", "delete_cols": "remove columns",
           "insert_rows": "add rows", "delete_rows": "remove rows",
           "rank_update": "rank-p update"}


class Explorer:
    """Sliders for an update's shape and a stage slider with a Play button.

    Build it with :func:`explorer`.  The state is open to Python: ``widgets`` (a dict of
    the controls: 'op', 'm', 'n', 'p', 'k', 'stage', 'play', 'detail'), ``frames`` (the
    current trace), ``frame`` (the one on show), :meth:`current_text`, and
    ``last_redraw_s`` (seconds the last redraw took).  Setting a control's ``.value``
    from Python redraws as moving it does.

    Slider ranges follow the operation: ``p <= n`` and ``k <= n - p`` when removing
    columns, ``k <= n`` when adding columns, ``p < m`` and ``k <= m - p`` when removing
    rows, ``k <= m`` when adding rows; ``k`` is unused by the rank-p update.

    ``nb`` (fixed for the explorer's life) is the Householder panel width every trace
    uses, as :func:`qrlab.patterns.trace` takes it; ``None`` leaves it to the executor.
    """

    def __init__(self, op="delete_cols", m=8, n=5, p=2, k=1, view="both", max_size=40,
                 dpi=60, nb=None):
        import ipywidgets as W
        if op not in KINDS:
            raise ValueError(f"op must be one of {KINDS}, not {op!r}")
        if nb is not None and (int(nb) != nb or nb < 1):
            raise ValueError(f"nb must be a positive integer or None, not {nb!r}")
        self.view, self.max_size, self.dpi = view, max_size, dpi
        self.nb = None if nb is None else int(nb)
        self.widgets = {
            "op": W.Dropdown(options=[(_LABELS[o], o) for o in KINDS], value=op,
                             description="update"),
            "m": W.IntSlider(value=m, min=2, max=max_size, description="m (rows)"),
            "n": W.IntSlider(value=n, min=1, max=max_size, description="n (cols)"),
            "p": W.IntSlider(value=p, min=1, max=max_size, description="p"),
            "k": W.IntSlider(value=k, min=0, max=max_size, description="k (0-based)"),
            "detail": W.Checkbox(value=False, description="every wave / panel"),
            "stage": W.IntSlider(value=0, min=0, max=1, description="stage"),
            "play": W.Play(value=0, min=0, max=1, interval=1000, description="play"),
        }
        # jslink: the Play button drives the slider in the browser, no kernel round trip
        W.jslink((self.widgets["play"], "value"), (self.widgets["stage"], "value"))
        # without align_self the VBox stretches the PNG to its full width, blurring it
        self.image = W.Image(format="png", layout=W.Layout(align_self="flex-start"))
        self.pre = W.HTML()
        self._busy = False
        self._fig = None
        self.frames: list[Frame] = []
        self.frame: Frame | None = None
        self.last_redraw_s = 0.0
        for name in ("op", "m", "n", "p", "k", "detail"):
            self.widgets[name].observe(self._on_params, names="value")
        self.widgets["stage"].observe(self._on_stage, names="value")
        w = self.widgets
        shown = [self.image] if view in ("figure", "both") else []
        shown += [self.pre] if view in ("text", "both") else []
        self.ui = W.VBox([W.HBox([w["op"], w["detail"]]), W.HBox([w["m"], w["n"]]),
                          W.HBox([w["p"], w["k"]]), W.HBox([w["play"], w["stage"]]),
                          *shown])
        self._sync_ranges()
        self._retrace()

    # -- state --------------------------------------------------------------------
    @property
    def params(self):
        """The current ``(op, m, n, p, k)``."""
        w = self.widgets
        return w["op"].value, w["m"].value, w["n"].value, w["p"].value, w["k"].value

    def current_text(self) -> str:
        """The frame on show as :func:`text` renders it."""
        return text(self.frame)

    # -- callbacks ------------------------------------------------------------------
    def _sync_ranges(self):
        """Clamp p and k to what the operation allows (ipywidgets clamps values)."""
        w = self.widgets
        op, m, n, p, _ = self.params
        self._busy = True
        try:
            p_max = limits(op, m, n, p)["p"][1]
            if op == "delete_rows":
                p_max = m - 1                           # keep at least one row
            w["p"].max = max(1, min(p_max, self.max_size))
            w["k"].max = max(0, limits(op, m, n, w["p"].value)["k"][1])
            w["k"].disabled = op == "rank_update"
        finally:
            self._busy = False

    def _on_params(self, change=None):
        if self._busy:
            return
        self._sync_ranges()
        self._retrace()

    def _retrace(self):
        start = time.perf_counter()
        op, m, n, p, k = self.params
        self.frames = trace(op, m, n, p, k, nb=self.nb, detail=self.widgets["detail"].value)
        w = self.widgets
        self._busy = True
        try:
            last = len(self.frames) - 1
            w["play"].max = w["stage"].max = last
            w["stage"].value = min(w["stage"].value, last)
        finally:
            self._busy = False
        self._render(start)

    def _on_stage(self, change=None):
        if not self._busy:
            self._render(time.perf_counter())

    def _render(self, start):
        self.frame = self.frames[self.widgets["stage"].value]
        if self.view in ("text", "both"):
            self.pre.value = f"<pre style='line-height:1.1'>{html.escape(text(self.frame))}</pre>"
        if self.view in ("figure", "both"):
            self.image.value = self._png()
        self.last_redraw_s = time.perf_counter() - start

    def _png(self):
        parts = _parts(self.frame, None)
        spy = any(max(c.shape) > SPY_LIMIT for _, c, *_ in parts)
        cell = 0.12 if spy else 0.24
        widths = [max(c.shape[1], 3) * cell for _, c, *_ in parts]
        height = max(max(c.shape[0], 3) * cell for _, c, *_ in parts) + 1.3
        width = max(sum(widths) + 0.8 * len(parts), 3.6)
        if self._fig is None:
            self._fig = _new_figure(width, height, self.dpi)
        fig = self._fig                                 # reused: no figure set-up per redraw
        fig.clear()
        fig.set_size_inches(width, height)
        _fill_figure(fig, self.frame, parts, widths, spy)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=self.dpi)
        return buf.getvalue()

    # -- display ------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        return self.ui._repr_mimebundle_(**kwargs)


def explorer(op: str = "delete_cols", m: int = 8, n: int = 5, p: int = 2, k: int = 1,
             view: str = "both", max_size: int = 40, nb: int | None = None) -> Explorer:
    """An ipywidgets explorer of an update's fill pattern, stage by stage.

    Parameters
    ----------
    op : str
        One of :data:`qrlab.patterns.KINDS` (the dropdown's start value).
    m, n, p, k : int
        Start values of the sliders (``k`` 0-based).
    view : {'both', 'figure', 'text'}
        Draw a figure, a text grid, or both.
    max_size : int
        Largest ``m``, ``n`` and ``p`` the sliders offer.
    nb : int, optional
        Householder panel width, passed to :func:`qrlab.patterns.trace` for every redraw
        (default ``None``: the executor's own, :func:`qrlab.stages.default_block`, at
        least 16).  Only the blocked updates use it: removing columns, adding rows and
        the rank-p update; ``nb=2`` draws the two-column panels of 001 Figs. 3 and 4.

    Returns
    -------
    Explorer
        Displays itself in Jupyter; see :class:`Explorer` for the state it exposes.

    Raises
    ------
    ValueError
        If ``op`` is not an update :func:`qrlab.patterns.trace` knows, or ``nb`` is not a
        positive integer.

    Examples
    --------
    >>> from qrlab.viz import explorer
    >>> ex = explorer('insert_cols', m=10, n=5, p=3, k=2, view='text')
    >>> ex.widgets['p'].value = 2
    >>> int(ex.frame.blue_R.all(axis=0).sum())
    2
    >>> ex = explorer('insert_rows', m=8, n=6, p=4, k=8, view='text', nb=2)
    >>> sum(f.step == 'stage' for f in ex.frames)       # three panels of two columns
    3
    """
    return Explorer(op, m, n, p, k, view, max_size, nb=nb)


# ------------------------------------------------------------------------------------
# Givens schedules
# ------------------------------------------------------------------------------------
SCHEDULES = {
    "column": (givens.schedule_column_order,
               "column by column, bottom-up (003 eq. 6)"),
    "wavefront": (givens.schedule_wavefront,
                  "wavefront: column j starts two steps after column j-1 (003 eq. 7)"),
    "strips": (givens.schedule_two_row_strips,
               "GPU scheme, one thread per strip of two rows (001 Fig. 1, 000 Fig. 5)"),
}


def _schedule(kind, m, n):
    if kind not in SCHEDULES:
        raise ValueError(f"kind must be one of {tuple(SCHEDULES)}, not {kind!r}")
    return np.array(SCHEDULES[kind][0](m, n), dtype=int).reshape(m, n)


def schedule_steps(kind: str, m: int, n: int) -> int:
    """Number of steps (sequential rotations for 'column', parallel steps otherwise).

    Examples
    --------
    >>> from qrlab.viz import schedule_steps
    >>> [schedule_steps(k, 5, 5) for k in ('column', 'wavefront', 'strips')]
    [10, 7, 7]
    """
    grid = _schedule(kind, m, n)
    return int(grid.max()) if grid.size else 0


def _strip(m, i):
    """The strip of two rows (counted from the bottom, from 1) that zeroes row ``i``."""
    return (m - 1 - i) // 2 + 1


def schedule_grid(kind: str, m: int, n: int, header: bool = True) -> str:
    """A Givens elimination order as a text grid of step numbers.

    Entry ``(i, j)`` below the diagonal shows the step (from 1) at which it is zeroed by
    the rotation of rows ``i-1, i``; ``x`` marks entries no rotation zeroes.  003 numbers
    its steps from 0, so its grids read one less.

    Parameters
    ----------
    kind : {'column', 'wavefront', 'strips'}
        003 eq. 6, 003 eq. 7, or the papers' GPU scheme (001 Fig. 1, 000 Fig. 5), whose
        steps coincide with the wavefront's: the thread of a strip spends two steps per
        column, so column ``j`` starts ``2 j`` steps after column 0.  Its grid names the
        strip (``p1`` at the bottom) that zeroes each row.
    m, n : int
    header : bool
        Add a title line and a line with the number of steps (default); ``False`` gives
        the bare grid.

    Examples
    --------
    >>> from qrlab.viz import schedule_grid
    >>> print(schedule_grid('wavefront', 4, 3))
    wavefront: column j starts two steps after column j-1 (003 eq. 7), 4x3
    x x x
    3 x x
    2 4 x
    1 3 5
    5 parallel steps for 6 rotations, at most 2 at once
    """
    grid = _schedule(kind, m, n)
    steps = int(grid.max()) if grid.size else 0
    w = len(str(steps))
    lines = [f"{SCHEDULES[kind][1]}, {m}x{n}"] if header else []
    for i in range(m):
        row = " ".join(f"{v:>{w}}" if v else f"{'x':>{w}}" for v in grid[i])
        if header and kind == "strips":
            row += f"   p{_strip(m, i)}"
        lines.append(row)
    if header:
        rot = int((grid > 0).sum())
        if kind == "column":
            lines.append(f"{steps} sequential steps, one rotation each")
        else:
            most = int(np.bincount(grid[grid > 0]).max()) if rot else 0
            line = f"{steps} parallel steps for {rot} rotations, at most {most} at once"
            if kind == "strips":
                line += (f"; {2 * steps} kernel launches (makeGivens + applyGivens), "
                         f"{_strip(m, 0)} strips")
            lines.append(line)
    return "\n".join(lines)


def schedule_figure(kind: str, m: int, n: int, ax=None, dpi: int = 80):
    """A Givens elimination order as a figure: step numbers in the cells.

    'strips' colours the rows by the strip of two rows whose thread zeroes them, as 000
    Fig. 5 colours its thread blocks; the others shade cells by step.

    Examples
    --------
    >>> from qrlab.viz import schedule_figure
    >>> fig = schedule_figure('strips', 6, 4)
    >>> fig.savefig(io.BytesIO(), format='png')
    """
    from matplotlib import colormaps
    grid = _schedule(kind, m, n)
    steps = int(grid.max()) if grid.size else 0
    own = ax is None
    if own:
        cell = 0.3 if max(m, n) <= 30 else 6.0 / max(m, n)
        fig = _new_figure(max(n * cell + 0.8, 3.0), m * cell + 1.0, dpi)
        ax = fig.add_subplot(1, 1, 1)
    img = np.ones((m, n, 3))
    sub = grid > 0
    if kind == "strips":
        cmap = colormaps["tab10"]
        for i in range(m):
            img[i, sub[i]] = 0.55 + 0.45 * np.array(cmap((_strip(m, i) - 1) % 10)[:3])
    elif steps:
        img[sub] = colormaps["Blues"](0.15 + 0.6 * grid[sub] / steps)[:, :3]
    ax.imshow(img, interpolation="nearest", extent=(-0.5, n - 0.5, m - 0.5, -0.5))
    if max(m, n) <= 30:
        size = 7 if steps < 100 else 5
        for i, j in zip(*np.nonzero(sub)):
            ax.text(j, i, str(grid[i, j]), ha="center", va="center", fontsize=size)
    ax.xaxis.tick_top()
    ax.tick_params(labelsize=7, length=2)
    width = ax.get_position().width * ax.figure.get_figwidth()
    ax.set_title(_wrap(f"{SCHEDULES[kind][1]}: {steps} steps", width + 0.4), fontsize=8,
                 pad=14)
    if own:
        fig.subplots_adjust(top=1 - 0.8 / fig.get_figheight(), bottom=0.1 / fig.get_figheight())
    return ax.figure
