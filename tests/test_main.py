"""``python -m qrlab``: the terminal walk-through of one update and its one-line check."""
import subprocess
import sys
from pathlib import Path

import pytest

from qrlab import __main__ as cli

ROOT = Path(__file__).resolve().parents[1]


def test_default_walks_removing_two_columns(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("8x5 R: remove p=2 columns at k=1 (paper k=2)")
    assert "Remove columns: block 1: Householder on columns 1-2, rows 1-4" in out
    assert "1   0[* *]\n2   0[- *]\n3   0[- -]\n4   0[0 -]" in out
    assert "result: R~ is 8x3" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("check: ||Q~R~ - A~|| / ||A~|| = ") and last.endswith("-> OK")
    assert "R~ upper triangular: yes" in last


@pytest.mark.parametrize("op, args, title", [
    ("insert-cols", ["--m", "10", "--n", "5", "--p", "3", "--k", "2"], "Stage 2: Givens"),
    ("delete-cols", ["--m", "10", "--n", "8", "--p", "3", "--k", "2"], "Remove columns"),
    ("insert-rows", ["--m", "8", "--n", "6", "--p", "4", "--k", "3"], "Add rows block 1"),
    ("delete-rows", ["--m", "12", "--n", "5", "--p", "4", "--k", "4"], "Stage 2: Givens sweeps"),
    ("rank-update", ["--m", "6", "--n", "4", "--p", "2"], "Stage 3"),
    ("insert-cols", ["--m", "3", "--n", "6", "--p", "2", "--k", "6"], "setup"),
    ("delete-rows", ["--m", "5", "--n", "7", "--p", "4", "--k", "0", "--seed", "3"], "Q (5x5)"),
])
def test_every_operation(capsys, op, args, title):
    assert cli.main(["--op", op, *args]) == 0
    out = capsys.readouterr().out
    assert title in out and "setup:" in out and "result:" in out
    assert "legend: * nonzero  0 zero" in out and "R (" in out
    assert out.strip().endswith("-> OK")


def test_waves_gives_more_grids(capsys):
    cli.main(["--op", "insert-cols", "--m", "10", "--n", "5", "--p", "3", "--k", "2"])
    coarse = capsys.readouterr().out.count("legend:")
    cli.main(["--op", "insert-cols", "--m", "10", "--n", "5", "--p", "3", "--k", "2",
              "--waves"])
    assert capsys.readouterr().out.count("legend:") > coarse


@pytest.mark.parametrize("args", [
    ["--op", "delete-cols", "--p", "6"],
    ["--op", "delete-cols", "--k", "4"],
    ["--op", "delete-rows", "--m", "3", "--p", "3", "--k", "0"],
    ["--op", "sideways"],
    ["--m", "0"],
])
def test_bad_arguments_exit_2(args, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(args)
    assert exc.value.code == 2


def test_failed_check_returns_1(monkeypatch, capsys):
    real = cli._numeric

    def broken(*a):
        Q1, R1, A1 = real(*a)
        return Q1, R1, A1 + 1e-3
    monkeypatch.setattr(cli, "_numeric", broken)
    assert cli.main([]) == 1
    assert capsys.readouterr().out.strip().endswith("-> FAILED")


def test_python_dash_m_runs_headless():
    env = {"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "qrlab", "--op", "insert-rows"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("-> OK")
