"""qrlab.config: one environment variable, QRLAB_SIZE, picks every problem size."""
import pytest

from qrlab import config


def test_default_is_small(monkeypatch):
    monkeypatch.delenv("QRLAB_SIZE", raising=False)
    assert config.size() == "small"
    assert config.pick(small=10, paper=1000) == 10


def test_empty_counts_as_unset(monkeypatch):
    monkeypatch.setenv("QRLAB_SIZE", "")
    assert config.size() == "small"


@pytest.mark.parametrize("value", ["paper", "PAPER", " paper\n"])
def test_paper(monkeypatch, value):
    monkeypatch.setenv("QRLAB_SIZE", value)
    assert config.size() == "paper"
    assert config.pick(small=(40, 20), paper=(6000, 3000)) == (6000, 3000)


def test_small_explicitly(monkeypatch):
    monkeypatch.setenv("QRLAB_SIZE", "small")
    assert config.pick(small="s", paper="p") == "s"


def test_read_on_every_call(monkeypatch):
    # Notebooks switch sizes by setting the variable; a value cached at import would ignore it.
    monkeypatch.setenv("QRLAB_SIZE", "small")
    assert config.size() == "small"
    monkeypatch.setenv("QRLAB_SIZE", "paper")
    assert config.size() == "paper"


@pytest.mark.parametrize("value", ["large", "papers", "0"])
def test_unknown_value_raises(monkeypatch, value):
    monkeypatch.setenv("QRLAB_SIZE", value)
    with pytest.raises(ValueError, match="QRLAB_SIZE"):
        config.size()
    with pytest.raises(ValueError, match="small, paper"):
        config.pick(small=1, paper=2)


def test_pick_returns_objects_unchanged(monkeypatch):
    monkeypatch.delenv("QRLAB_SIZE", raising=False)
    cases = [(8, 5), (16, 10)]
    assert config.pick(small=cases, paper=[]) is cases
