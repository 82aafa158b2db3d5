"""Fixtures shared by the test modules."""
import pytest


@pytest.fixture
def chain_calls(monkeypatch):
    """A list that gains one entry per call of ``GpuExecutor.triangle_update`` (the chain
    of reflectors) during the test, which otherwise runs as before: for tests that say
    which route an update took."""
    from qrlab.gpu import GpuExecutor          # (imports without CuPy)
    calls = []
    chain = GpuExecutor.triangle_update
    monkeypatch.setattr(GpuExecutor, "triangle_update",
                        lambda self, *a, **kw: calls.append(1) or chain(self, *a, **kw))
    return calls
