"""The update notebooks in a real browser: JupyterLab runs them, the explorer answers.

For each of notebooks 04-07 this opens the notebook in JupyterLab (headless Chromium),
clears its stored outputs and runs all cells from the Run menu, then checks that

* every code cell ran (an execution count) and none wrote to stderr or raised;
* the explorer's dropdown shows the notebook's update, and the text grid it draws matches
  its sliders as they stand;
* typing new ``m``, ``p`` and ``k`` into the sliders' readouts redraws the grid for those
  values: the title names them, ``R`` has the rows and columns they imply, the inserted
  block (``b``) or the removed columns' mark (``|``) sits where ``p`` and ``k`` put it,
  and the whole grid is what :func:`qrlab.viz.text` draws for them;
* the stage slider, moved with the arrow keys, offers one position per frame and shows
  the chosen stage's title and grid; the Play button runs on to the result;
* the browser logged no console error and no uncaught exception.

Everything is read back from the page (the sliders' readouts and the ``<pre>`` text the
explorer renders), not from the kernel.  Screenshots of each explorer, before and after
the sliders move, go to ``artifacts/browser/``.  Deselect with ``-m 'not browser'``.
"""
from __future__ import annotations

import ast
import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from qrlab.patterns import trace
from qrlab.viz import text

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.browser

# The notebook, its explorer's update, and the slider values to move to, set in this
# order (m, then p, then k), each allowed by the sliders' ranges at the time it is set.
CASES = {
    "04_adding_columns": ("insert_cols", {"m": 12, "p": 2, "k": 4}),
    "05_removing_columns": ("delete_cols", {"m": 9, "p": 2, "k": 5}),
    "06_adding_rows": ("insert_rows", {"m": 11, "p": 3, "k": 5}),
    "07_removing_rows": ("delete_rows", {"m": 9, "p": 3, "k": 2}),
}
DROPDOWN = {"insert_cols": "add columns", "delete_cols": "remove columns",
            "insert_rows": "add rows", "delete_rows": "remove rows"}
SLIDER_LABELS = {"m": "m (rows)", "n": "n (cols)", "p": "p", "k": "k (0-based)",
                 "stage": "stage"}
STDERR = '[data-mime-type="application/vnd.jupyter.stderr"]'
# Requests that leave 127.0.0.1.  The only one expected: matplotlib's HTML animation
# (viz.animate, to_jshtml) links Font Awesome's stylesheet from a CDN for its buttons.
# It is answered here with an empty stylesheet, so the test behaves the same with or
# without internet access; any other outside request fails the test.
EXTERNAL_OK = ("https://maxcdn.bootstrapcdn.com/font-awesome/",)

RUN_TIMEOUT_MS = 120_000        # Run All on a slow 2-core machine
REDRAW_TIMEOUT_S = 30.0


# ------------------------------------------------------------------------------------
# reading the explorer's text grid
# ------------------------------------------------------------------------------------
@dataclass
class Matrix:
    name: str
    shape: tuple[int, int]
    rows: list[str]             # the symbols of each row, e.g. "*0-+"
    blue_cols: list[int]        # columns marked 'b' above the grid
    blue_rows: list[int]        # rows marked 'b' after their number
    cut: int | None             # the column before which '|' stands


def parse_grid(grid: str) -> tuple[str, dict[str, Matrix]]:
    """The title and the matrices of a :func:`qrlab.viz.text` grid (with markers)."""
    lines = grid.splitlines()
    title, matrices, i = lines[0], {}, 1
    while i < len(lines) and not lines[i].startswith("legend:"):
        head = re.fullmatch(r"([QR]) \((\d+)x(\d+)\)", lines[i])
        assert head, f"expected a matrix header, got {lines[i]!r} in\n{grid}"
        name, nr, nc = head.group(1), int(head.group(2)), int(head.group(3))
        pad = len(str(max(nr - 1, 0))) + 2
        i += 1
        blue_cols, cut = [], None
        if re.fullmatch(r"\s*[b|][b| ]*", lines[i]):            # the mark line
            marks = lines[i]
            blue_cols = [(pos - pad - 1) // 2 for pos, ch in enumerate(marks) if ch == "b"]
            cut = next(((pos - pad) // 2 for pos, ch in enumerate(marks) if ch == "|"), None)
            i += 1
        while not lines[i][:pad].strip():                       # column numbers
            i += 1
        rows, blue_rows = [], []
        row_label = r"\s*(\d+)(b?)\s+"                       # "12b " or " 3  "
        while i < len(lines) and (label := re.fullmatch(row_label, lines[i][:pad].ljust(pad))):
            line = lines[i]
            if label.group(2):
                blue_rows.append(int(label.group(1)))
            cells = line[pad:].ljust(2 * nc + 1)
            rows.append("".join(cells[2 * j + 1] for j in range(nc)))
            i += 1
        matrices[name] = Matrix(name, (nr, nc), rows, blue_cols, blue_rows, cut)
    return title, matrices


def check_setup_frame(grid: str, op: str, m: int, n: int, p: int, k: int) -> None:
    """What stage 0 must show for these values, independently of qrlab's renderer."""
    title, mats = parse_grid(grid)
    assert title.startswith(f"setup: {m}x{n} R:"), title
    assert f"p={p} " in title and f"k={k} " in title, title
    R = mats["R"]
    want = {"insert_cols": (m, n + p), "delete_cols": (m, n - p),
            "insert_rows": (m + p, n), "delete_rows": (m, n)}[op]
    assert R.shape == want, f"R is {R.shape}, expected {want}:\n{grid}"
    assert len(R.rows) == want[0] and all(len(r) == want[1] for r in R.rows), grid
    if op == "insert_cols":       # the p new columns, at k
        assert R.blue_cols == list(range(k, k + p)), grid
    elif op == "delete_cols":     # the p columns went away before column k
        assert R.cut == k and not R.blue_cols, grid
    elif op == "insert_rows":     # the p new rows, appended below R
        assert R.blue_rows == list(range(m, m + p)), grid
    else:                         # removing rows: their p rows of Q, moved to the top
        Q = mats["Q"]
        assert Q.shape == (m, m) and len(Q.rows) == m, grid
        assert Q.blue_rows == list(range(p)), grid


def check_result_frame(grid: str, op: str, m: int, n: int, p: int) -> None:
    title, mats = parse_grid(grid)
    want = {"insert_cols": (m, n + p), "delete_cols": (m, n - p),
            "insert_rows": (m + p, n), "delete_rows": (m - p, n)}[op]
    assert title == f"result: R~ is {want[0]}x{want[1]}", title
    R = mats["R"]
    assert R.shape == want and len(R.rows) == want[0], grid
    # upper triangular: nothing but zeros below the diagonal
    assert all(set(row[:min(i, want[1])]) <= {"0"} for i, row in enumerate(R.rows)), grid


# ------------------------------------------------------------------------------------
# driving the page
# ------------------------------------------------------------------------------------
class ExplorerOnPage:
    """The explorer's controls and text grid, located in the notebook's outputs."""

    def __init__(self, page):
        self.page = page
        self.root = page.locator(".jp-OutputArea-output").filter(
            has=page.locator(".widget-slider")).filter(has=page.locator(".widget-dropdown"))

    def show(self):
        """Scroll the notebook so that the explorer's controls are at the top."""
        self.root.evaluate("e => e.scrollIntoView({block: 'start'})")

    def slider(self, name):
        label = SLIDER_LABELS[name]
        return self.root.locator(".widget-slider").filter(
            has=self.page.locator("label.widget-label", has_text=re.compile(
                rf"^{re.escape(label)}$")))

    def value(self, name) -> int:
        return int(self.slider(name).locator(".widget-readout").inner_text().strip())

    def stage_max(self) -> int:
        return int(float(self.slider("stage").locator(".noUi-handle").get_attribute(
            "aria-valuemax")))

    def operation(self) -> str:
        return self.root.locator(".widget-dropdown select").evaluate(
            "s => s.options[s.selectedIndex].value")

    def detail(self) -> bool:
        return self.root.locator(".widget-checkbox input").is_checked()

    def grid(self) -> str:
        return self.root.locator(".widget-html-content pre").text_content()

    def figure(self) -> tuple[str, int]:
        """The figure's image: its source (a new blob URL per redraw) and pixel height."""
        return self.root.locator("img.widget-image").evaluate(
            "i => [i.src, i.naturalHeight]")

    def wait_figure(self, other_than: str, timeout_s=REDRAW_TIMEOUT_S) -> tuple[str, int]:
        deadline = time.monotonic() + timeout_s
        shown = self.figure()
        while (shown[0] == other_than or not shown[1]) and time.monotonic() < deadline:
            time.sleep(0.1)
            shown = self.figure()
        assert shown[0] != other_than and shown[1], "the explorer's figure was not redrawn"
        return shown

    def type_value(self, name, value):
        """Type a value into a slider's readout and press Enter, as a user can."""
        readout = self.slider(name).locator(".widget-readout")
        readout.click()
        readout.fill(str(value))
        readout.press("Enter")
        self.wait_value(name, value)

    def press(self, name, key, times):
        """Focus a slider's handle and press a key (ArrowRight, ArrowLeft) ``times``."""
        handle = self.slider(name).locator(".noUi-handle")
        handle.focus()
        for _ in range(times):
            handle.press(key)

    def wait_value(self, name, value, timeout_s=REDRAW_TIMEOUT_S):
        deadline = time.monotonic() + timeout_s
        while self.value(name) != value and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.value(name) == value, f"slider {name} shows {self.value(name)}, not {value}"

    def wait_grid(self, expected: str, timeout_s=REDRAW_TIMEOUT_S) -> str:
        """Wait until the page shows ``expected``; the grid shown (equal, or the diff)."""
        deadline = time.monotonic() + timeout_s
        shown = self.grid()
        while shown != expected and time.monotonic() < deadline:
            time.sleep(0.1)
            shown = self.grid()
        assert shown == expected, "the explorer did not redraw as expected"
        return shown


def explorer_call(cells: list[dict]) -> dict:
    """The arguments of the ``viz.explorer(...)`` call in a notebook's cells, by name.

    The page shows every argument the grid depends on but one: the panel width ``nb``,
    which the notebook may fix.  The expected grids are traced with the same ``nb``.
    """
    names = ("op", "m", "n", "p", "k", "view", "max_size", "nb")
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            tree = ast.parse("\n".join(line for line in source.splitlines()
                                       if not line.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "explorer"):
                args = dict(zip(names, map(ast.literal_eval, node.args)))
                args.update({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords})
                return args
    raise AssertionError("no viz.explorer(...) call in the notebook")


def expected_grid(op, m, n, p, k, stage=0, nb=None) -> str:
    return text(trace(op, m, n, p, k, nb=nb)[stage])


# The code cells with something in them, each as its prompt: "[ ]:", "[*]:" or "[12]:".
PROMPTS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')]
    .filter(c => c.querySelector('.cm-content').textContent.trim() !== '')
    .map(c => c.querySelector('.jp-InputPrompt').textContent.trim())"""
# True when the notebook's cells are all on the page and its kernel is connected and idle.
# The kernel's state comes from JupyterLab itself (window.jupyterapp, exposed by the
# server's --LabApp.expose_app_in_browser): the toolbar's indicator reads "idle" before a
# kernel exists, and Run All at that moment asks which kernel to start.
READY_JS = """() => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const s = w && w.sessionContext && w.sessionContext.session;
    const k = s && s.kernel;
    return !!(k && k.status === 'idle' && k.connectionStatus === 'connected'
              && w.content && w.content.model
              && document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length
                 === w.content.model.cells.length);
}"""


def run_all_cells(page):
    """Edit > Clear Outputs of All Cells, then Run > Run All Cells; wait until it is done.

    Done: the kernel is idle again and no cell is waiting ("[*]"), and either every code
    cell has an execution count or one has raised or written to stderr.
    """
    page.wait_for_function(READY_JS, timeout=RUN_TIMEOUT_MS)
    for menu, item in (("Edit", "Clear Outputs of All Cells"), ("Run", "Run All Cells")):
        page.locator("#jp-MainMenu .lm-MenuBar-item", has_text=re.compile(rf"^{menu}$")).click()
        page.get_by_role("menuitem", name=item, exact=True).click()
        if menu == "Edit":      # the stored outputs are gone: no prompt has a number
            page.wait_for_function(
                f"() => {{ const p = ({PROMPTS_JS})(); "
                f"return p.length > 0 && p.every(x => x === '[ ]:'); }}")
    page.wait_for_function(
        f"""() => {{
            const prompts = ({PROMPTS_JS})();
            return ({READY_JS})() && !prompts.some(p => p.includes('*'))
                && (prompts.every(p => /^\\[\\d+\\]:$/.test(p))
                    || document.querySelector('.jp-NotebookPanel {STDERR}') !== null);
        }}""", timeout=RUN_TIMEOUT_MS)


def hide_file_browser(page):
    """Collapse the left sidebar, so the notebook (and the screenshots) get the width."""
    current = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if current.count():
        current.first.click()


def file_digest(paths) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.exists()}


@pytest.mark.parametrize("name", list(CASES))
def test_explorer_redraws_in_jupyterlab(name, lab, page, artifacts):
    op, target = CASES[name]
    for old in artifacts.glob(f"{name}-*.png"):         # the last run's screenshots only
        old.unlink()
    notebook = ROOT / "notebooks" / f"{name}.ipynb"
    assert notebook.exists(), f"missing notebook {notebook.relative_to(ROOT)}"
    # the cells as the server gives them to JupyterLab (through jupytext: from the newer
    # file of the pair)
    served = lab.api("GET", f"/api/contents/notebooks/{name}.ipynb")["content"]
    call = explorer_call(served["cells"])
    assert call.get("op", "delete_cols") == op, f"{name}'s explorer is for {call.get('op')}"
    nb = call.get("nb")
    pair = [notebook, notebook.with_suffix(".py")]
    before = file_digest(pair)

    external = []

    def outside(route):
        url = route.request.url
        if url.startswith(EXTERNAL_OK):
            route.fulfill(status=200, content_type="text/css", body="")
        else:
            external.append(url)
            route.abort()

    page.route(lambda url: not url.startswith(lab.url), outside)
    page.goto(f"{lab.url}/lab/tree/notebooks/{name}.ipynb?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=90_000)
    try:
        hide_file_browser(page)
        run_all_cells(page)

        # every code cell ran, none wrote to stderr or raised
        errors = page.locator(f".jp-NotebookPanel {STDERR}").all_inner_texts()
        assert not errors, "a cell wrote to stderr or raised:\n" + "\n---\n".join(errors)
        prompts = page.evaluate(PROMPTS_JS)
        unrun = [n for n, t in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", t)]
        assert not unrun, f"code cells {unrun} did not run (prompts {prompts})"

        ex = ExplorerOnPage(page)
        ex.root.first.locator(".widget-html-content pre").wait_for()   # views render late
        assert ex.root.count() == 1, "expected one explorer in the notebook's outputs"
        ex.show()
        assert ex.operation() == DROPDOWN[op]
        assert not ex.detail(), "the notebook left 'every wave / panel' ticked"

        # the grid as it stands matches the sliders as they stand
        m, n, p, k, stage = (ex.value(s) for s in ("m", "n", "p", "k", "stage"))
        ex.wait_grid(expected_grid(op, m, n, p, k, stage, nb))
        if stage:                                       # back to the start, by keyboard
            ex.press("stage", "ArrowLeft", stage)
            ex.wait_value("stage", 0)
        shown = ex.wait_grid(expected_grid(op, m, n, p, k, nb=nb))
        check_setup_frame(shown, op, m, n, p, k)
        ex.show()
        page.screenshot(path=str(artifacts / f"{name}-before.png"))

        # m, p, k typed into the readouts, one at a time: each redraws
        assert (target["m"], target["p"], target["k"]) != (m, p, k)
        now = {"m": m, "p": p, "k": k}
        for key in ("m", "p", "k"):
            figure = ex.figure()
            ex.type_value(key, target[key])
            now[key] = target[key]
            if key == "m":      # the figure is redrawn too, taller or shorter with m
                _, height = ex.wait_figure(other_than=figure[0])
                assert (height > figure[1]) == (target["m"] > m), (figure[1], height)
            shown = ex.wait_grid(expected_grid(op, now["m"], n, now["p"], now["k"], nb=nb))
            check_setup_frame(shown, op, now["m"], n, now["p"], now["k"])
        m, p, k = now["m"], now["p"], now["k"]

        # the stage slider offers one position per frame; the arrow keys step through them
        frames = trace(op, m, n, p, k, nb=nb)
        assert ex.stage_max() == len(frames) - 1
        chosen = len(frames) - 2                                 # the last working stage
        ex.press("stage", "ArrowRight", chosen)
        ex.wait_value("stage", chosen)
        shown = ex.wait_grid(text(frames[chosen]))
        assert shown.splitlines()[0] == frames[chosen].title
        assert not shown.startswith(("setup", "result")) and "[" in shown   # an active region

        # Play steps on (in the browser, through jslink) to the result
        play = ex.root.locator(".widget-play button").first
        play.click()
        ex.wait_value("stage", len(frames) - 1, timeout_s=REDRAW_TIMEOUT_S + len(frames))
        play.locator("i.fa-play").wait_for(timeout=10_000)     # and stops there
        shown = ex.wait_grid(text(frames[-1]))
        check_result_frame(shown, op, m, n, p)
        ex.show()
        page.screenshot(path=str(artifacts / f"{name}-after.png"))
    except Exception:
        page.screenshot(path=str(artifacts / f"{name}-failed.png"))
        raise

    assert not external, f"the page asked for outside resources: {external}"
    assert not page.qrlab_errors, "browser console errors:\n" + "\n".join(page.qrlab_errors)
    assert file_digest(pair) == before, "running the notebook in JupyterLab changed its files"
