"""Test-suite settings shared by tests/ and notebooks/ (pytest loads this file first).

* Tests marked ``gpu`` are skipped, with the reason, where CuPy sees no CUDA device, so the
  same suite runs on a laptop, in CI and on a GPU machine.
* Updates on CuPy arrays run without CUDA graphs unless a test turns them on
  (``qrlab.graphs.using``): a test names the path it checks, and a graph would replay
  whatever path it recorded first (``tests/test_graphs.py`` checks the graphs).
* Hypothesis runs without its per-example deadline: a deadline is a timing assertion, and
  timings belong in benchmarks, not in pass/fail tests (a slow CI machine must not fail).
  Under CI (``CI`` set) examples are also derandomized, so a failure reproduces exactly.
"""
import os

import pytest

try:
    from hypothesis import settings
except ImportError:  # the test extra brings it; without it, tests that need it fail alone
    settings = None

if settings is not None:
    settings.register_profile("qrlab", deadline=None)
    settings.register_profile("qrlab-ci", deadline=None, derandomize=True, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                          or ("qrlab-ci" if os.environ.get("CI") else "qrlab"))


@pytest.fixture(autouse=True)
def _graphs_off():
    from qrlab import graphs
    with graphs.using(False):
        yield


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    from qrlab.backend import _cupy_or_reason

    cupy, reason = _cupy_or_reason()
    if cupy is None:
        skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
        for item in gpu_items:
            item.add_marker(skip)
