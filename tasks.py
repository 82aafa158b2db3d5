#!/usr/bin/env python3
"""Set up qrlab and run it: ``python3 tasks.py lab`` or ``python3 tasks.py test [pytest args]``.

Needs only Python 3.10+ (standard library).  Both commands

1. create ``.venv`` in the repository (once),
2. install ``qrlab[dev]`` into it in editable mode (again only when pyproject.toml changed:
   the hash of pyproject.toml is kept in ``.venv/qrlab-install.sha256``),
3. make sure every ``notebooks/NN_topic.py`` has its paired ``.ipynb`` (jupytext), without
   touching stored outputs,

then ``lab`` opens JupyterLab on the welcome notebook and ``test`` runs pytest on the whole
suite, notebooks included.  ``execute`` (for contributors) re-runs notebooks in place so
their stored outputs, which the tests compare, are current.  Any failure stops with a
message and a non-zero exit status.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / "qrlab-install.sha256"
NOTEBOOKS = ROOT / "notebooks"
WELCOME = NOTEBOOKS / "00_welcome.ipynb"

USAGE = """usage: python3 tasks.py lab [jupyter-lab args]   open the notebooks in JupyterLab
       python3 tasks.py test [pytest args]      run the test suite (notebooks included)
       python3 tasks.py execute [notebooks]     re-run notebooks, store their outputs"""


class TaskError(Exception):
    """A step failed; the message says which and what to do, ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def run(*cmd, **kwargs) -> None:
    """Run a command from the repository root, echoing it; raise TaskError if it fails."""
    shown = " ".join(str(c) for c in cmd)
    print(f"    $ {shown}", flush=True)
    # Quiet pip's "new version available" notice: it looks like a problem and is not one.
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        code = subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env, **kwargs)
    except OSError as exc:
        raise TaskError(f"could not start {cmd[0]}: {exc}") from exc
    if code != 0:
        raise TaskError(f"command failed with exit status {code}: {shown}", code)


def venv_works() -> bool:
    """True when .venv has an interpreter that starts and has pip.

    A venv copied from elsewhere may not start, and one whose creation failed half-way
    (the usual result of a missing python3-venv on Debian) has no pip: both are rebuilt.
    """
    if not PYTHON.exists():
        return False
    return subprocess.call([str(PYTHON), "-c", "import pip"], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0


def ensure_venv() -> None:
    if venv_works():
        say(f"reusing virtual environment {VENV.relative_to(ROOT)}/")
        return
    # Debian and Ubuntu split venv's pip bootstrap (ensurepip) into a separate package;
    # without it "python3 -m venv" fails with a confusing message, so check first.
    for module in ("venv", "ensurepip"):
        if importlib.util.find_spec(module) is None:
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            raise TaskError(
                f"this Python ({sys.executable}) lacks the '{module}' module needed to create "
                f"a virtual environment.\n    On Debian/Ubuntu: sudo apt install python3-venv "
                f"(or python{version}-venv), then run this command again.")
    say(f"creating virtual environment {VENV.relative_to(ROOT)}/ with Python "
        f"{sys.version.split()[0]}")
    run(sys.executable, "-m", "venv", "--clear", VENV)
    # The pip bundled with an older Python may not know today's wheels or editable installs.
    run(PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip")


def pyproject_hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_installed() -> None:
    wanted = pyproject_hash()
    if STAMP.exists() and STAMP.read_text().strip() == wanted:
        say("qrlab[dev] already installed (pyproject.toml unchanged): skipping pip")
        return
    say("installing qrlab and its lab + test dependencies (editable, extra 'dev'); "
        "the first time takes a few minutes")
    run(PYTHON, "-m", "pip", "install", "--quiet", "--editable", ".[dev]")
    # Written only after pip succeeded, so a failed or interrupted install is retried.
    STAMP.write_text(wanted + "\n")


def sync_notebooks(pair_all: bool) -> None:
    """Give every notebook both of its files, leaving stored outputs alone.

    ``pair_all=True`` (lab) runs ``jupytext --sync`` on every notebook, so edits made to a
    ``.py`` in an editor show up in JupyterLab.  ``pair_all=False`` (test) only creates
    files that are missing: re-syncing an existing pair would quietly copy whichever file
    is newer over the other, and tests/test_notebook_pairing.py is there to report such
    drift instead of hiding it.
    """
    scripts = sorted(NOTEBOOKS.glob("*.py"))
    notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
    if pair_all:
        todo = scripts + [nb for nb in notebooks if not nb.with_suffix(".py").exists()]
    else:
        todo = [py for py in scripts if not py.with_suffix(".ipynb").exists()]
        todo += [nb for nb in notebooks if not nb.with_suffix(".py").exists()]
    if not todo:
        say("notebooks: every .py has its .ipynb; nothing to sync")
        return
    say(f"pairing {len(todo)} notebook(s) with jupytext (outputs kept)")
    run(BIN / "jupytext", "--sync", *[p.relative_to(ROOT) for p in todo])


def prepare(pair_all: bool) -> None:
    if sys.version_info < (3, 10):
        raise TaskError(f"qrlab needs Python 3.10 or newer; this is {sys.version.split()[0]}")
    ensure_venv()
    ensure_installed()
    sync_notebooks(pair_all)


def lab(args: list[str]) -> int:
    prepare(pair_all=True)
    target = [WELCOME.relative_to(ROOT)] if WELCOME.exists() else []
    # Jupyter refuses to start as root; containers often run as root, so say it and allow it.
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in args:
        say("running as root: passing --allow-root to JupyterLab")
        args = ["--allow-root", *args]
    say("starting JupyterLab (Ctrl+C to stop)")
    cmd = [str(c) for c in (BIN / "jupyter", "lab", *target, *args)]
    if os.name == "posix":
        # Become JupyterLab rather than wait for it, so Ctrl+C reaches Jupyter alone and it
        # can shut its kernels down cleanly (a waiting parent would kill it mid-shutdown).
        print(f"    $ {' '.join(cmd)}", flush=True)
        os.chdir(ROOT)
        os.execv(cmd[0], cmd)
    run(*cmd)
    return 0


def test(args: list[str]) -> int:
    prepare(pair_all=False)
    say("running pytest (tests/ and notebooks/)")
    run(PYTHON, "-m", "pytest", *args)
    say("all tests passed")
    return 0


def execute(args: list[str]) -> int:
    """Re-run notebooks and store their outputs (all of them, or the ones named)."""
    prepare(pair_all=True)
    paths = [ROOT / a for a in args] or sorted(NOTEBOOKS.glob("*.ipynb"))
    targets = [p.with_suffix(".ipynb").relative_to(ROOT) for p in paths]
    for nb in targets:
        if not (ROOT / nb).exists():
            raise TaskError(f"no such notebook: {nb}")
    say(f"executing {len(targets)} notebook(s) and storing their outputs")
    # record_timing=False: per-cell timestamps would change every file on every run and
    # bury the real output changes in the diff.
    run(BIN / "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace",
        "--ExecutePreprocessor.record_timing=False", *targets)
    return 0


def main(argv: list[str]) -> int:
    tasks = {"lab": lab, "test": test, "execute": execute}
    if not argv or argv[0] not in tasks:
        print(USAGE, file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        return tasks[argv[0]](argv[1:])
    except TaskError as exc:
        print(f"\nERROR: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
