"""Every notebook is a pair, notebooks/NN_topic.py + NN_topic.ipynb, holding the same cells.

The .py is what people edit and review; the .ipynb carries the outputs that nbval checks.
If the two drift apart, the reviewed code is not the tested code, so drift fails here.
Fix it with ``python3 tasks.py execute notebooks/NN_topic.py``: it syncs the pair (jupytext
takes the newer file's cells) and re-runs the notebook so its stored outputs are current.
"""
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
STEMS = sorted({p.stem for p in NOTEBOOKS.glob("*.py")} | {p.stem for p in NOTEBOOKS.glob("*.ipynb")})


def cells(path):
    """The (cell_type, source) list of a notebook file, outputs and metadata left out."""
    nb = jupytext.read(path)
    # Trailing blank lines are layout in the .py file, not content.
    return [(cell.cell_type, cell.source.rstrip()) for cell in nb.cells]


def test_welcome_notebook_exists():
    assert "00_welcome" in STEMS, f"no 00_welcome notebook in {NOTEBOOKS}"


@pytest.mark.parametrize("stem", STEMS)
def test_both_files_exist(stem):
    missing = [f"{stem}{ext}" for ext in (".py", ".ipynb") if not (NOTEBOOKS / f"{stem}{ext}").exists()]
    assert not missing, (f"notebooks/{stem} lacks {', '.join(missing)}: create it with "
                         f"'python3 tasks.py execute notebooks/{stem}.py'")


@pytest.mark.parametrize("stem", STEMS)
def test_py_is_percent_format(stem):
    py = NOTEBOOKS / f"{stem}.py"
    if not py.exists():
        pytest.skip("no .py (reported by test_both_files_exist)")
    assert "# %%" in py.read_text(encoding="utf-8"), f"{py.name} is not in jupytext percent format"


@pytest.mark.parametrize("stem", STEMS)
def test_cells_agree(stem):
    py, ipynb = NOTEBOOKS / f"{stem}.py", NOTEBOOKS / f"{stem}.ipynb"
    if not (py.exists() and ipynb.exists()):
        pytest.skip("one file is missing (reported by test_both_files_exist)")
    from_py, from_ipynb = cells(py), cells(ipynb)
    if from_py == from_ipynb:
        return
    # Point at the first differing cell rather than dumping two whole notebooks.
    for i, (a, b) in enumerate(zip(from_py, from_ipynb)):
        if a != b:
            pytest.fail(f"{stem}: cell {i} differs between .py and .ipynb\n"
                        f"--- .py ({a[0]}):\n{a[1]}\n--- .ipynb ({b[0]}):\n{b[1]}\n"
                        f"run 'python3 tasks.py execute notebooks/{stem}.py' to sync and re-execute it")
    pytest.fail(f"{stem}: .py has {len(from_py)} cells, .ipynb has {len(from_ipynb)}; "
                f"run 'python3 tasks.py execute notebooks/{stem}.py' to sync and re-execute it")
