"""Every example in the library's docstrings runs and prints what it says."""
import doctest
import importlib

import pytest

MODULES = ["qrlab", "qrlab.backend", "qrlab.config", "qrlab.stages", "qrlab.householder",
           "qrlab.givens", "qrlab.executor", "qrlab.graphs", "qrlab.updates", "qrlab.lstsq",
           "qrlab.cholesky", "qrlab.patterns", "qrlab.viz", "qrlab.course"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    # the public modules document themselves with runnable examples
    if name not in ("qrlab.config",):
        assert result.attempted > 0, f"{name} has no docstring examples"


def _readme_blocks():
    import pathlib
    import re
    text = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_examples_run():
    # the README's Python examples are what a newcomer copies first: each must run as
    # shown (their asserts included)
    blocks = _readme_blocks()
    assert len(blocks) >= 2
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
